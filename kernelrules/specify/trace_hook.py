"""The recorder injected into a traced process: every Triton launch becomes one JSON line.

``kernelrules trace`` copies this file next to a generated ``sitecustomize.py`` and puts
both on the child's ``PYTHONPATH``, so it must stay **standalone**: the standard library
only, no ``kernelrules`` import (the traced command may run another interpreter).

:func:`install_from_environment` reads ``KERNELRULES_TRACE_FILE`` and patches
``triton.runtime.jit.JITFunction.run`` (compiled launches, autotuned and heuristics
kernels included: those end in it) and ``triton.runtime.interpreter.InterpretedFunction.run``
(``TRITON_INTERPRET=1``), as soon as each module is imported. Each patched ``run``
describes its arguments the way Triton's JIT specialises them, appends the record to
the trace file once per distinct launch in this process, then calls the original.
Recording never changes what the launch does; a failure to record is reported once on
stderr and the launch goes on.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import inspect
import json
import os
import sys
import threading
from typing import Any, Callable

#: Environment variable naming the trace file the records are appended to.
TRACE_FILE_ENV = "KERNELRULES_TRACE_FILE"

#: Largest signed 32-bit value: larger ints are i64 to the JIT (then u64).
_I32_MAX = 2**31 - 1
_I64_MAX = 2**63 - 1

#: Torch dtype names (``str(dtype)`` without ``torch.``) to Triton type names.
_DTYPE_NAMES = {
    "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e4m3fnuz": "fp8e4b8", "float8_e5m2": "fp8e5",
    "float8_e5m2fnuz": "fp8e5b16", "float16": "fp16", "half": "fp16", "bfloat16": "bf16", "float32": "fp32",
    "float": "fp32", "float64": "fp64", "double": "fp64", "int8": "i8", "int16": "i16", "int32": "i32",
    "int64": "i64", "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
}

_lock = threading.Lock()
_seen: set[str] = set()
_warned = False


# --------------------------------------------------------------------------- describing arguments


def dtype_name(dtype: Any) -> str:
    """Triton's name for a tensor dtype (``torch.float16`` -> ``fp16``); bool is ``i1``."""
    text = str(dtype).split(".")[-1]
    return _DTYPE_NAMES.get(text, text)


def is_tensor_like(value: Any) -> bool:
    """Whether Triton passes ``value`` as a pointer: it has ``data_ptr()`` and a ``dtype``."""
    return hasattr(value, "data_ptr") and hasattr(value, "dtype")


def int_type(value: int) -> str:
    """The scalar type the JIT gives a Python int: i32, i64 or u64 by range."""
    if -_I32_MAX - 1 <= value <= _I32_MAX:
        return "i32"
    return "i64" if -_I64_MAX - 1 <= value <= _I64_MAX else "u64"


def describe_argument(value: Any) -> tuple[Any, list[str]]:
    """(type or value, specialisation tags) of one runtime argument, as the JIT sees it.

    A tensor is ``"*<dtype>"`` tagged ``aligned_16`` when its address is; an int is its
    value tagged ``equal_to_1`` or ``divisible_by_16``; a float is ``"fp32"``; a bool
    ``"i1"``; None stays None (the JIT makes it a constexpr). Anything else is
    ``"unknown:<type name>"``.
    """
    if value is None:
        return None, []
    if isinstance(value, bool):
        return "i1", []
    if isinstance(value, int):
        tags = ["equal_to_1"] if value == 1 else (["divisible_by_16"] if value % 16 == 0 else [])
        return value, tags
    if isinstance(value, float):
        return "fp32", []
    if is_tensor_like(value):
        tags = []
        try:
            if int(value.data_ptr()) % 16 == 0:
                tags.append("aligned_16")
        except Exception:  # a tensor without storage (meta): alignment unknown
            pass
        return "*" + dtype_name(value.dtype), tags
    return f"unknown:{type(value).__name__}", []


def json_value(value: Any) -> Any:
    """A constexpr or option value as JSON: literals kept, containers recursed, others ``str()``."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return str(value)


# --------------------------------------------------------------------------- describing kernels


def python_function(kernel: Any) -> Callable[..., Any]:
    """The user's Python function behind a JITFunction or InterpretedFunction."""
    return getattr(kernel, "fn", kernel)


def def_line(fn: Callable[..., Any]) -> int | None:
    """The line of the ``def`` (after any decorators) of ``fn``."""
    try:
        lines, first = inspect.getsourcelines(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return code.co_firstlineno if code is not None else None
    for offset, text in enumerate(lines):
        if text.lstrip().startswith(("def ", "async def ")):
            return first + offset
    return first


def constexpr_names(kernel: Any, fn: Callable[..., Any]) -> set[str]:
    """Parameters annotated ``tl.constexpr`` (JIT params, else the function's annotations)."""
    params = getattr(kernel, "params", None)
    if params:
        return {p.name for p in params if getattr(p, "is_constexpr", False)}
    names = set()
    for name, annotation in getattr(fn, "__annotations__", {}).items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if "constexpr" in text or getattr(annotation, "__name__", "") == "constexpr":
            names.add(name)
    return names


def unspecialized_names(kernel: Any) -> set[str]:
    """Parameters the JIT does not specialise on value (``do_not_specialize``)."""
    params = getattr(kernel, "params", None)
    if params:
        return {p.name for p in params if getattr(p, "do_not_specialize", False)}
    names = list(inspect.signature(python_function(kernel)).parameters)
    listed = (getattr(kernel, "kwargs", None) or {}).get("do_not_specialize") or ()
    return {names[x] if isinstance(x, int) and 0 <= x < len(names) else str(x) for x in listed}


def build_record(kernel: Any, args: tuple, kwargs: dict[str, Any], mode: str) -> dict[str, Any]:
    """The trace record of one launch: kernel, arguments, constexprs, options, specialisation."""
    fn = python_function(kernel)
    signature = inspect.signature(fn)
    params = [name for name in signature.parameters]
    bound = signature.bind_partial(*args, **{k: v for k, v in kwargs.items() if k in signature.parameters})
    bound.apply_defaults()
    constexprs = constexpr_names(kernel, fn)
    unspecialized = unspecialized_names(kernel)
    record: dict[str, Any] = {
        "kernel": fn.__name__,
        "path": os.path.abspath(inspect.getsourcefile(fn) or fn.__code__.co_filename),
        "line": def_line(fn),
        "mode": mode,
        "args": {},
        "constexprs": {},
        "options": {k: json_value(v) for k, v in sorted(kwargs.items()) if k not in signature.parameters},
        "specialization": {},
    }
    for name in params:
        if name not in bound.arguments:
            continue
        value = bound.arguments[name]
        if name in constexprs:
            record["constexprs"][name] = json_value(value)
            continue
        described, tags = describe_argument(value)
        if name in unspecialized:
            tags = [t for t in tags if t == "aligned_16"]
        record["args"][name] = described
        if tags:
            record["specialization"][name] = tags
    return record


# --------------------------------------------------------------------------- writing


def record_key(record: dict[str, Any]) -> str:
    """What makes two launches the same for the trace: everything but the mode."""
    return json.dumps({k: v for k, v in record.items() if k != "mode"}, sort_keys=True)


def append_record(path: str, record: dict[str, Any]) -> bool:
    """Append ``record`` as one line unless this process already wrote it; True if written."""
    key = record_key(record)
    with _lock:
        if key in _seen:
            return False
        _seen.add(key)
        line = json.dumps(record, sort_keys=True) + "\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line.encode("utf-8"))  # one write per line: whole lines with many writers
        finally:
            os.close(fd)
    return True


def _warn_once(exc: BaseException) -> None:
    global _warned
    if not _warned:
        _warned = True
        print(f"kernelrules trace: could not record a launch: {type(exc).__name__}: {exc}", file=sys.stderr)


# --------------------------------------------------------------------------- patching


def wrap_run(run: Callable[..., Any], mode: str, path: str) -> Callable[..., Any]:
    """A ``run(self, *args, grid, warmup, **kwargs)`` that records the launch, then runs it."""
    if getattr(run, "__kernelrules_traced__", False):
        return run

    def traced_run(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            options = {k: v for k, v in kwargs.items() if k not in ("grid", "warmup")}
            append_record(path, build_record(self, args, options, mode))
        except Exception as exc:  # recording must never break the user's launch
            _warn_once(exc)
        return run(self, *args, **kwargs)

    traced_run.__kernelrules_traced__ = True  # type: ignore[attr-defined]
    traced_run.__wrapped__ = run  # type: ignore[attr-defined]
    return traced_run


#: Module -> (class, mode) whose ``run`` is patched.
TARGETS = {
    "triton.runtime.jit": ("JITFunction", "jit"),
    "triton.runtime.interpreter": ("InterpretedFunction", "interpreter"),
}


def patch_module(module: Any, path: str) -> None:
    """Patch the launch class of one imported Triton module."""
    class_name, mode = TARGETS[module.__name__]
    cls = getattr(module, class_name, None)
    if cls is not None:
        cls.run = wrap_run(cls.run, mode, path)


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then patches the module."""

    def __init__(self, loader: Any, path: str) -> None:
        self._loader = loader
        self._path = path

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        patch_module(module, self._path)


class PatchingFinder(importlib.abc.MetaPathFinder):
    """Hands out :class:`_PatchingLoader` for the modules in :data:`TARGETS`."""

    def __init__(self, path: str) -> None:
        self._path = path

    def find_spec(self, name: str, import_path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if name not in TARGETS:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, import_path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, self._path)
                return spec
        return None


def install(path: str) -> None:
    """Record launches into ``path``: patch what is imported, and what will be."""
    for name in TARGETS:
        if name in sys.modules:
            patch_module(sys.modules[name], path)
    if not any(isinstance(f, PatchingFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PatchingFinder(path))


def install_from_environment() -> bool:
    """:func:`install` into ``$KERNELRULES_TRACE_FILE`` when it is set; True if installed."""
    path = os.environ.get(TRACE_FILE_ENV)
    if not path:
        return False
    install(path)
    return True
