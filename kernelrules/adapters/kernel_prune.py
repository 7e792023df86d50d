"""Judge the configs of a live Triton kernel: the core of ``early_prune``, ``kernelrules.prune(kernel, ...)``
and the Optuna gate.

Given the kernel object (a ``JITFunction``, or the Autotuner/Heuristics wrapping it),
an architecture and a launch signature, :class:`KernelJudge` turns each config into a
:class:`~kernelrules.config.KernelConfig` (with the constexprs the launch and any
``@triton.heuristics`` fix), judges it with the rules and the resource model (learned
once per judge from a few probe compiles, cached on disk), and finds the nearest
passing config for each rejected one. The signature comes either from a space-file
style mapping or from example arguments, turned into one exactly as a launch would
specialise them (:func:`launch_signature`).
"""

from __future__ import annotations

import inspect
import logging
import os
from typing import Any, Mapping, Sequence

from ..config import AMD_OPTIONS, KernelConfig
from ..errors import ConfigValueError, SignatureSpecError, UnknownArchError

log = logging.getLogger("kernelrules.triton")  # the logger name users configure; kept across the move

_TORCH_DTYPES = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}

#: Returned by :func:`arg_spec` for an argument whose type cannot be told.
UNKNOWN = object()


def kernel_object(kernel: Any) -> Any:
    """The kernel itself, calling a zero-argument callable that returns it (``lambda: matmul_kernel``)."""
    if not hasattr(kernel, "fn") and not is_triton_kernel(kernel) and callable(kernel):
        return kernel()
    return kernel


def jit_function(kernel: Any) -> Any:
    """The JITFunction (or, under ``TRITON_INTERPRET=1``, the InterpretedFunction) under
    Autotuner/Heuristics wrappers, or behind a zero-argument callable."""
    obj = kernel_object(kernel)
    while is_triton_kernel(obj) and not inspect.isfunction(getattr(obj, "fn", None)):
        obj = getattr(obj, "fn", None)
    if not is_triton_kernel(obj):
        raise TypeError(f"{kernel!r} is not a Triton kernel")
    return obj


def constexpr_names(fn: Any) -> set[str]:
    """The ``tl.constexpr`` parameters of a jit function (read from the annotations when interpreted)."""
    if hasattr(fn, "constexprs"):
        return {fn.arg_names[i] for i in fn.constexprs}
    params = inspect.signature(fn.fn).parameters.values()
    return {p.name for p in params if "constexpr" in str(getattr(p.annotation, "__name__", p.annotation))}


def is_triton_kernel(obj: Any) -> bool:
    """Whether ``obj`` is a JITFunction or a Triton wrapper (Autotuner, Heuristics) around one."""
    from triton.runtime.jit import KernelInterface

    return isinstance(obj, KernelInterface)


def arg_spec(value: Any) -> Any:
    """One argument as a space-file signature value: "*fp16", an int or bool value, "fp32", None, or UNKNOWN."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, float):
        return "fp32"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "data_ptr"):
        name = str(dtype).replace("torch.", "")
        return "*" + _TORCH_DTYPES.get(name, name)
    return UNKNOWN


def launch_signature(fn: Any, named_args: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(signature of the runtime arguments, constexpr values given at the launch).

    Arguments whose type cannot be told (neither a tensor nor a number) are left out.
    """
    fixed = constexpr_names(fn)
    signature, constexprs = {}, {}
    for name in fn.arg_names:
        if name not in named_args:
            continue
        if name in fixed:
            constexprs[name] = named_args[name]
            continue
        spec = arg_spec(named_args[name])
        if spec is not UNKNOWN:
            signature[name] = spec
    return signature, constexprs


def resolve_arch(arch: Any) -> Any:
    """An :class:`~kernelrules.arch.Arch` from a profile, a name, ``$KERNELRULES_ARCH`` or the current GPU."""
    from ..arch import Arch, load_arch

    if isinstance(arch, Arch):
        return arch
    name = arch or os.environ.get("KERNELRULES_ARCH")
    if not name:
        name = _gpu_arch_name()
    if "," in name:
        raise UnknownArchError(f"one architecture at a time, got {name!r}")
    return load_arch(name)


def _gpu_arch_name() -> str:
    """``sm_XY`` of the current CUDA device; a clear error where there is none."""
    try:
        import torch

        major, minor = torch.cuda.get_device_capability()
    except Exception as exc:  # no torch, a CPU build, no device: all mean "say which architecture"
        raise UnknownArchError("no architecture given and no GPU to ask",
                               hint="pass arch='ada' (or 'hopper', 'rtx4090', ...) or set KERNELRULES_ARCH") from exc
    return f"sm_{major}{minor}"


def heuristics_of(kernel: Any) -> dict[str, Any]:
    """``constexpr name -> function`` of every ``@triton.heuristics`` wrapper around the kernel."""
    from triton.runtime.autotuner import Heuristics

    found: dict[str, Any] = {}
    obj = kernel
    while obj is not None and hasattr(obj, "fn"):
        if isinstance(obj, Heuristics):
            found.update(obj.values)
        obj = obj.fn
    return found


def signature_from_args(fn: Any, args: Mapping[str, Any] | Sequence[Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Example launch arguments (a mapping or a positional sequence) as ``(signature, constexprs)``.

    Raises :class:`SignatureSpecError` for an argument the kernel does not have, too
    many positional arguments, or a runtime argument whose type cannot be told.
    """
    names = list(fn.arg_names)
    if not isinstance(args, Mapping):
        args = list(args)
        if len(args) > len(names):
            raise SignatureSpecError(f"{len(args)} positional arguments for a kernel with {len(names)} parameters",
                                     hint=f"{fn.__name__}({', '.join(names)})")
        args = dict(zip(names, args))
    unknown = sorted(set(args) - set(names))
    if unknown:
        raise SignatureSpecError(f"args name {', '.join(map(repr, unknown))}, not a parameter of {fn.__name__}",
                                 hint=f"{fn.__name__}({', '.join(names)})")
    signature, constexprs = launch_signature(fn, args)
    untyped = [name for name in args if name not in signature and name not in constexprs]
    if untyped:
        raise SignatureSpecError(f"cannot tell the type of argument {untyped[0]!r} ({type(args[untyped[0]]).__name__})",
                                 hint="pass a tensor, an int or a float, or give signature= instead")
    return signature, constexprs


def split_signature(fn: Any, signature: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A space-file style signature as ``(runtime signature, constexpr values)``: constexprs may be given there too."""
    names = constexpr_names(fn)
    runtime = {k: v for k, v in signature.items() if k not in names}
    return runtime, {k: v for k, v in signature.items() if k in names}


def as_kernel_config(config: Any) -> KernelConfig:
    """A caller's config (``triton.Config``, a flat dict, or a KernelConfig) as a KernelConfig."""
    if isinstance(config, (KernelConfig, Mapping)) or (hasattr(config, "kwargs") and hasattr(config, "num_warps")):
        return KernelConfig.coerce(config)
    raise ConfigValueError(f"cannot read a config from {type(config).__name__}",
                           hint="give triton.Config objects or dicts such as {'BLOCK_M': 128, 'num_warps': 4}")


def check_parameters(fn: Any, configs: Sequence[KernelConfig]) -> None:
    """Raise :class:`ConfigValueError` when configs name parameters the kernel does not have."""
    unknown = {k for c in configs for k in c.constexprs} - set(fn.arg_names) - set(AMD_OPTIONS)
    if unknown:
        raise ConfigValueError(f"configs name parameters {fn.__name__} does not have: {', '.join(sorted(unknown))}",
                               hint=f"its parameters: {', '.join(fn.arg_names)}")


class KernelJudge:
    """Judges configs of one kernel on one architecture for one launch signature.

    ``fixed`` holds constexpr values the launch or the problem sets (merged into every
    config and never changed by a repair); ``heuristic_args`` are the values
    ``@triton.heuristics`` functions see, besides the config (example arguments, or the
    signature). The resource model is learned at the first judgement and reused, so a
    judge that lives across many calls (an Optuna study) probes the kernel once.
    ``pool`` and ``probe_results`` share a compile pool and probe compiles with other
    users (a tuner's :class:`~kernelrules.adapters.autotune_context.AutotuneContext`); the judge
    then leaves the pool running when it closes. ``triton_cache_dir`` compiles into that
    Triton cache (the JIT's, for a tuner that launches what it judged).
    """

    def __init__(self, kernel: Any, arch: Any, signature: Mapping[str, Any], fixed: Mapping[str, Any] | None = None,
                 *, heuristic_args: Mapping[str, Any] | None = None, compile: bool = False, jobs: int | None = None,
                 timeout: float = 30.0, cache: Any = None, pool: Any = None, probe_results: Any = None,
                 triton_cache_dir: str | None = None) -> None:
        from ..compile.cache import ResultCache
        from ..judge.pipeline import ConfigJudge
        from ..compile.target import KernelTarget

        kernel = kernel_object(kernel)
        self.fn = jit_function(kernel)
        self.arch = resolve_arch(arch)
        self.fixed = dict(fixed or {})
        self.heuristics = {k: v for k, v in heuristics_of(kernel).items() if k not in self.fixed}
        self.heuristic_args = dict(heuristic_args if heuristic_args is not None else signature)
        self.compile = compile
        self.target = KernelTarget.for_jit_function(self.fn, signature, frozenset(self.fixed) | frozenset(self.heuristics))
        self.timeout = timeout
        self.pruner = ConfigJudge(self.target, jobs=jobs, timeout=timeout, cache=cache or ResultCache(), pool=pool,
                                  probe_results=probe_results, triton_cache_dir=triton_cache_dir)
        self.model: Any = None

    @property
    def added_names(self) -> frozenset[str]:
        """Constexprs the judge adds to a caller's config (fixed values and heuristics)."""
        return self.target.fixed

    def prepare(self, config: Any) -> KernelConfig:
        """A caller's config with the fixed values and the heuristics' values merged in."""
        own = as_kernel_config(config)
        clash = sorted(k for k, v in own.constexprs.items() if k in self.fixed and self.fixed[k] != v)
        if clash:
            raise ConfigValueError(f"{clash[0]} is set by the config ({own.constexprs[clash[0]]!r}) and by the launch "
                                   f"or fixed values ({self.fixed[clash[0]]!r})")
        judged = own.replace(self.fixed)
        values = {**self.heuristic_args, **self.fixed, **judged.to_dict()}
        computed = {}
        for name, heuristic in self.heuristics.items():
            try:
                computed[name] = heuristic(values)
            except Exception as exc:  # a heuristic that needs a real tensor: leave the value out
                log.debug("kernelrules: heuristic %s not evaluated (%s: %s)", name, type(exc).__name__, exc)
        return judged.replace(computed)

    def check(self, configs: Sequence[KernelConfig]) -> None:
        """Raise a clear error when the configs or the signature do not fit the kernel."""
        from ..judge.pipeline import check_target

        check_parameters(self.fn, configs)
        check_target(self.target, list(configs), [self.arch])

    def learn(self, configs: Sequence[KernelConfig]) -> None:
        """Learn the resource model from the configs a search will draw from, if not learned yet
        (the probes are the cheapest among them, and every MMA path they take is probed)."""
        if self.model is None:
            self.model = self.pruner.model_for(list(configs), self.arch)

    def judge(self, configs: Sequence[KernelConfig], problem: Mapping[str, Any] | None = None, *,
              probe: bool = True, verify_repairs: bool = True) -> list:
        """One :class:`~kernelrules.judge.pipeline.PruneRecord` per config, in order (repairs included).

        ``probe=False`` learns no resource model (a judge that compiles every config anyway
        needs no prediction of what the compile will say); ``verify_repairs=False`` leaves
        the repairs uncompiled and unchecked (:meth:`passes_compiled` checks one later)."""
        records, model = self.pruner.judge_arch(list(configs), self.arch, self.compile, dict(problem or {}),
                                                probe=probe, model=self.model, verify_repairs=verify_repairs)
        self.model = self.model or model
        return records

    def passes_compiled(self, config: KernelConfig, result: Any) -> bool:
        """Whether the rules pass ``config`` on the facts of its compile ``result``."""
        from ..judge.pipeline import passes_compiled

        return passes_compiled(self.pruner, config, self.arch, result)

    @property
    def notes(self) -> list[str]:
        """What the pruner wants the user to know (e.g. no resource model could be learned)."""
        return self.pruner.notes

    def close(self) -> None:
        """Stop the compile workers (unless the pool is a shared one)."""
        self.pruner.close()

    def __enter__(self) -> "KernelJudge":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
