"""Build the ``ASTSource`` a kernel launch would compile, from a signature spec.

When a ``@triton.jit`` kernel is launched, ``JITFunction.run`` looks at the actual
arguments and *specializes* the compile on them:

* a tensor whose ``data_ptr()`` is a multiple of 16 gets ``tt.divisibility=16``;
* an integer divisible by 16 gets ``tt.divisibility=16``;
* an integer equal to 1 becomes a constexpr (so ``stride == 1`` folds away);
* integers are ``i32`` when they fit, ``i64`` (or ``u64``) otherwise;
* ``do_not_specialize`` / ``do_not_specialize_on_alignment`` switch this off per argument.

These attributes decide whether loads are vectorised and pipelined, so they change
``metadata.shared`` by a factor of up to four (196608 vs 49152 bytes for the example
matmul on sm_90). A cross-compile without them does not describe the real kernel.

Rather than re-implement the rules, this module drives Triton's own code path: the
*binder* that ``JITFunction`` builds (``create_function_from_signature``) is called
with stand-in arguments (objects with ``dtype`` and a 16-byte-aligned ``data_ptr()``
for pointers, Python numbers for scalars), and its result is packed the way
``JITFunction.run`` packs it (``JITFunction._pack_args`` in Triton 3.5+, the same
few lines inline in 3.4). Future Triton versions that change the rules stay correct.

A signature spec maps every non-constexpr parameter to one of:

* a pointer type string: ``"*fp16"``, ``"*bf16"``, ``"*fp32"``, ``"*fp8e4nv"``, ...
  (assumed 16-byte aligned, as tensors from any allocator are);
* an ``int``, ``float`` or ``bool`` value, specialized as the JIT would;
* a scalar type string (``"i32"``, ``"i64"``, ``"fp32"``, ...): the value is unknown,
  so no specialization is applied;
* ``None`` (an optional argument left out: a constexpr ``None``, as in the JIT);
* a tensor-descriptor type ``"tensordesc<fp16[BLOCK_M, 64]>"`` (a host ``TensorDescriptor``;
  its block shape may name the config's constexprs: :mod:`kernelrules.compile.descriptor`).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
import threading
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from . import descriptor
from ..errors import SignatureSpecError

#: A 16-byte-aligned stand-in address for pointer arguments.
_ALIGNED_ADDRESS = 1 << 20

#: Stand-in values for scalars of unknown value: the JIT maps each to the right
#: integer width and none is 1 or divisible by 16, so no specialization is applied.
_UNKNOWN_INT = {"i64": 2**40 + 3, "u64": 2**63 + 3}
_UNKNOWN_INT_DEFAULT = 3
_UNKNOWN_FLOAT = 1.5



@dataclass(frozen=True)
class Specialization:
    """What ``JITFunction.run`` would hand to ``ASTSource`` for one launch.

    ``signature`` maps every parameter name to its type string (``"constexpr"`` for
    constexprs, including integers equal to 1); ``constexprs`` and ``attrs`` are keyed
    by argument path (a tuple of indices), exactly as Triton keys them.
    """

    signature: dict[str, Any]
    constexprs: dict[tuple[int, ...], Any]
    attrs: dict[tuple[int, ...], list]
    arg_names: tuple[str, ...]

    def path_name(self, path: tuple[int, ...]) -> str:
        """``name`` or ``name[1]`` for an argument path."""
        return self.arg_names[path[0]] + "".join(f"[{i}]" for i in path[1:])

    def attrs_by_name(self) -> dict[str, list]:
        """The attributes keyed by argument name (for messages, tests and cache keys)."""
        return {self.path_name(p): [list(a) for a in v] for p, v in sorted(self.attrs.items()) if v}

    def constexprs_by_name(self) -> dict[str, Any]:
        """The constexpr values keyed by argument name."""
        return {self.path_name(p): v for p, v in sorted(self.constexprs.items())}

    def key_data(self) -> dict[str, Any]:
        """A JSON-friendly summary that changes whenever the compile input changes."""
        return {
            "signature": {k: str(v) for k, v in self.signature.items()},
            "attrs": self.attrs_by_name(),
            "constexprs": {k: _stable_repr(v) for k, v in self.constexprs_by_name().items()},
        }

    def ast_source(self, fn: Any) -> Any:
        """The ``triton.compiler.ASTSource`` for ``fn`` with this specialization."""
        from triton.compiler import ASTSource

        return ASTSource(fn, dict(self.signature), dict(self.constexprs), dict(self.attrs))


class StandInPointer:
    """Looks like a tensor to Triton's specializer: a dtype and an aligned address."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    @staticmethod
    def data_ptr() -> int:
        return _ALIGNED_ADDRESS


@contextlib.contextmanager
def _without_torch() -> Iterator[None]:
    """Make ``import torch`` fail inside the block (an ImportError), unless torch is imported already."""
    hidden = "torch" not in sys.modules
    if hidden:
        sys.modules["torch"] = None  # type: ignore[assignment] - the documented way to block an import
    try:
        yield
    finally:
        if hidden and sys.modules.get("torch", 0) is None:
            del sys.modules["torch"]


_specializer_ready = False
_specializer_lock = threading.Lock()
#: Whether this process sets the specializer up without torch at its first specialization
#: (:func:`hide_torch_from_specializer`); the library leaves a user's process alone.
_hide_torch = False


def hide_torch_from_specializer() -> None:
    """In this process, set Triton's specializer up without torch at the first specialization.

    For processes of kernelrules' own that never launch a kernel with torch tensors: the CLI and
    ``tune``'s driver (the compile workers set it up at start). Not in a user's process, where
    the specializer's ``torch.Tensor`` fast path serves the user's own launches."""
    global _hide_torch
    _hide_torch = True


def init_specializer_without_torch() -> None:
    """Set up Triton's argument specializer in this process without importing torch (once).

    Triton's native specializer imports torch at its first call, when torch is installed, only
    to give ``torch.Tensor`` arguments a fast path; without it the same handler is reached
    through the ``data_ptr`` attribute, so every launch specializes the same way. kernelrules
    specializes stand-in pointers only, and torch's import costs seconds (1.5 s on a 2-core CPU
    with the CPU build, more with a CUDA build) on the critical path of ``kernelrules lint`` and
    of ``tune``'s start. The specializer does not retry the import later (a torch tensor launched
    from this process then takes the ``data_ptr`` path); ``import torch`` itself works again right
    after. A process that has imported torch already is left as it is.
    """
    global _specializer_ready
    if _specializer_ready:  # every specialization after the first: no lock
        return
    with _specializer_lock:
        if _specializer_ready:
            return
        _specializer_ready = True
        try:
            from triton.runtime.jit import mangle_type

            with _without_torch():
                mangle_type(StandInPointer("fp16"))
        except Exception:  # noqa: BLE001 - a Triton without it (or that needs torch here): set up on first use
            pass


def _stable_repr(value: Any) -> Any:
    """JSON-friendly form of a constexpr value (numbers and strings as is)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    inner = getattr(value, "value", None)  # tl.constexpr
    if inner is not None and type(value).__name__ == "constexpr":
        return _stable_repr(inner)
    return repr(value)


def _canonical_types() -> dict[str, str]:
    """Triton's table of type names (aliases included) to canonical type strings."""
    from triton._utils import type_canonicalisation_dict

    return {k: v for k, v in type_canonicalisation_dict.items() if v != "void"}


def canonical_type(text: str, *, arg: str) -> tuple[str, bool]:
    """``(canonical scalar type, is_pointer)`` for ``"*fp16"``, ``"i32"``, ``"float16"`` ...."""
    spec = text.strip()
    pointer = spec.startswith("*")
    base = spec[1:] if pointer else spec
    if pointer and base.startswith("k") and base[1:] in _canonical_types():
        base = base[1:]  # "*kfp16": const pointers come from annotations, not values
    canonical = _canonical_types().get(base.removeprefix("tl."))
    if canonical is None:
        known = ", ".join(sorted(set(_canonical_types().values())))
        raise SignatureSpecError(
            f"argument {arg!r}: unknown type {text!r}", hint=f"use *TYPE for pointers or TYPE for scalars; TYPE in {known}"
        )
    return canonical, pointer


def _stand_in(value: Any, *, arg: str, constexprs: Mapping[str, Any] | None = None) -> Any:
    """The argument object that makes Triton's specializer see ``value``."""
    if descriptor.is_descriptor(value):
        return descriptor.stand_in(value, constexprs or {}, arg=arg, tensor=StandInPointer)
    if value is None or isinstance(value, (bool, float)):
        return value
    if isinstance(value, int):
        if not -2**63 <= value < 2**64:  # Triton specializes integers as i32, i64 or u64 only
            raise SignatureSpecError(f"argument {arg!r}: {value} does not fit a 64-bit integer",
                                     hint="Triton passes integer arguments as i32, i64 or u64")
        return int(value)
    if isinstance(value, str):
        canonical, pointer = canonical_type(value, arg=arg)
        if pointer:
            return StandInPointer(canonical)
        if canonical[:2] in ("fp", "bf"):
            return _UNKNOWN_FLOAT
        if canonical == "u1":
            return True
        return _UNKNOWN_INT.get(canonical, _UNKNOWN_INT_DEFAULT)
    raise SignatureSpecError(
        f"argument {arg!r}: cannot use {type(value).__name__} value {value!r}",
        hint="give a pointer type like '*fp16', an int/float value, or a scalar type like 'i32'",
    )


def _check_spec(fn: Any, spec: Mapping[str, Any], constexprs: Mapping[str, Any]) -> None:
    """Every parameter given exactly once, and no unknown names."""
    params = {p.name: p for p in fn.params}
    for name in spec:
        if name not in params:
            raise SignatureSpecError(f"signature names unknown argument {name!r}", hint=_params_hint(fn))
        if params[name].is_constexpr:
            raise SignatureSpecError(
                f"argument {name!r} is a tl.constexpr: give it with the config's constexprs, not the signature"
            )
    for name in constexprs:
        if name not in params:
            raise SignatureSpecError(f"constexpr {name!r} is not an argument of the kernel", hint=_params_hint(fn))
        if name in spec:
            raise SignatureSpecError(f"argument {name!r} is given both in the signature and as a constexpr")
    for name, param in params.items():
        if name in spec or name in constexprs or param.has_default:
            continue
        where = "constexprs" if param.is_constexpr else "signature spec"
        raise SignatureSpecError(f"missing value for argument {name!r} in the {where}", hint=_params_hint(fn))


def _params_hint(fn: Any) -> str:
    """The kernel's parameter list, for error hints."""
    names = [p.name + (": constexpr" if p.is_constexpr else "") for p in fn.params]
    return f"{fn.__name__}({', '.join(names)})"


def _make_backend(target: Any) -> Any:
    """Triton's backend object for a ``GPUTarget`` (no driver or GPU needed)."""
    from triton.compiler.compiler import make_backend

    return make_backend(target)


def _pack(fn: Any, backend: Any, kwargs: dict, bound: dict, specialization: list) -> tuple[dict, dict, dict]:
    """``(signature, constexprs, attrs)`` from the binder's output, as ``JITFunction.run`` packs it."""
    pack_args = getattr(fn, "_pack_args", None)
    if pack_args is not None:  # Triton >= 3.5
        _options, signature, constexprs, attrs = pack_args(backend, kwargs, bound, specialization, {})
        return signature, constexprs, attrs
    # Triton 3.4 does the same inline in JITFunction.run.
    from triton._utils import find_paths_if, get_iterable_path

    sigvals = [s[0] for s in specialization]
    signature = {p.name: v for p, v in zip(fn.params, sigvals)}
    const_paths = find_paths_if(sigvals, lambda _, v: v == "constexpr")
    constexprs = {p: get_iterable_path(list(bound.values()), p) for p in const_paths}
    attrvals = [s[1] for s in specialization]
    attr_paths = find_paths_if(attrvals, lambda _, v: isinstance(v, str))
    attrs = {p: backend.parse_attr(get_iterable_path(attrvals, p)) for p in attr_paths}
    return signature, constexprs, attrs


def _override_unknown_scalars(fn: Any, spec: Mapping[str, Any], signature: dict) -> None:
    """Give value-unknown scalars the type the spec names (unless the kernel annotates one)."""
    for param in fn.params:
        value = spec.get(param.name)
        if not isinstance(value, str) or param.annotation_type or descriptor.is_descriptor(value):
            continue
        canonical, pointer = canonical_type(value, arg=param.name)
        if not pointer:
            signature[param.name] = canonical


def specialize(
    fn: Any,
    spec: Mapping[str, Any],
    constexprs: Mapping[str, Any] | None = None,
    *,
    target: Any,
    fixed: Mapping[str, Any] | None = None,
) -> Specialization:
    """The signature, constexprs and attributes a launch of ``fn`` with ``spec`` compiles with.

    ``constexprs`` are the config's constexpr values and ``fixed`` any constexprs held
    fixed across configs; ``target`` is a ``triton.backends.compiler.GPUTarget``.
    Raises :class:`SignatureSpecError` for a missing or unknown argument or type.
    """
    all_constexprs = {**(fixed or {}), **(constexprs or {})}
    _check_spec(fn, spec, all_constexprs)
    kwargs: dict[str, Any] = {name: _stand_in(value, arg=name, constexprs=all_constexprs) for name, value in spec.items()}
    kwargs.update({name: dtype_constexpr(value) for name, value in all_constexprs.items()})
    backend = _make_backend(target)
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(fn.signature, fn.params, backend)
    if _hide_torch:
        init_specializer_without_torch()
    try:
        bound, specialization, _options = binder(**kwargs)
    except TypeError as exc:  # unsupported argument object or a binding problem
        raise SignatureSpecError(f"Triton cannot specialize this signature: {exc}") from exc
    signature, consts, attrs = _pack(fn, backend, kwargs, bound, specialization)
    _override_unknown_scalars(fn, spec, signature)
    names = tuple(p.name for p in fn.params)
    return Specialization(signature=signature, constexprs=consts, attrs=attrs, arg_names=names)


def dtype_constexpr(value: Any) -> Any:
    """``"tl.float32"`` (a dtype constexpr as a spec or a guess writes it) as ``tl.float32``; others as given."""
    if isinstance(value, str) and value.startswith("tl."):
        import triton.language as tl

        found = getattr(tl, value[3:], None)
        if isinstance(found, tl.dtype):
            return found
    return value


def make_ast_source(
    fn: Any,
    spec: Mapping[str, Any],
    constexprs: Mapping[str, Any] | None = None,
    *,
    target: Any,
    fixed: Mapping[str, Any] | None = None,
) -> Any:
    """``ASTSource(fn, signature, constexprs, attrs)`` exactly as a launch would build it."""
    return specialize(fn, spec, constexprs, target=target, fixed=fixed).ast_source(fn)


def kernel_parameters(fn: Any) -> list[tuple[str, bool, bool]]:
    """``(name, is_constexpr, has_default)`` for each parameter of a jit function."""
    return [(p.name, bool(p.is_constexpr), p.default is not inspect.Parameter.empty) for p in fn.params]
