"""Prune inside Triton's own autotuner: ``prune_configs_by={"early_config_prune": ...}``.

    from kernelrules.triton import early_prune

    @triton.autotune(configs=CONFIGS, key=["M", "N", "K"],
                     prune_configs_by={"early_config_prune": early_prune(lambda: matmul_kernel, arch="ada")})
    @triton.jit
    def matmul_kernel(...): ...

Triton calls the pruner with the configs and the launch's positional arguments
(``named_args``) but not with the kernel, so the pruner is bound to the kernel it is
given: a ``JITFunction``, an Autotuner/Heuristics wrapper, or a zero-argument callable
returning one (the kernel does not exist yet while its own decorator runs). It builds
the launch signature from ``named_args`` as the launch will (tensor dtypes, integer
values: 16-divisible and 1 specialise), judges every config for the architecture
(``arch``, else ``$KERNELRULES_ARCH``, else the current GPU), and drops or repairs the
ones that cannot run or are structurally slow, logging one line per decision. It never
returns an empty list (Triton raises on that): if every config fails, it keeps the least
bad one and warns. Any problem of its own becomes a warning and the configs are kept.
"""

from __future__ import annotations

import inspect
import logging
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from .config import KernelConfig

log = logging.getLogger("kernelrules.triton")

_TORCH_DTYPES = {
    "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64", "int8": "i8", "int16": "i16",
    "int32": "i32", "int64": "i64", "uint8": "u8", "bool": "i1", "float8_e4m3fn": "fp8e4nv", "float8_e5m2": "fp8e5",
}


def _jit_function(kernel: Any) -> Any:
    """The JITFunction under Autotuner/Heuristics wrappers (or behind a zero-argument callable)."""
    from triton.runtime.jit import JITFunction

    obj = kernel
    if not isinstance(obj, JITFunction) and not hasattr(obj, "fn") and callable(obj):
        obj = obj()
    while not isinstance(obj, JITFunction) and hasattr(obj, "fn"):
        obj = obj.fn
    if not isinstance(obj, JITFunction):
        raise TypeError(f"{kernel!r} is not a Triton kernel")
    return obj


def _arg_spec(value: Any) -> Any:
    """One argument as a space-file signature value: "*fp16", an int value, "fp32", or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return "fp32"
    dtype = getattr(value, "dtype", None)
    if dtype is not None and hasattr(value, "data_ptr"):
        name = str(dtype).replace("torch.", "")
        return "*" + _TORCH_DTYPES.get(name, name)
    return None


def launch_signature(fn: Any, named_args: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(signature of the runtime arguments, constexpr values given at the launch)."""
    constexpr_names = {fn.arg_names[i] for i in getattr(fn, "constexprs", ())}
    signature, constexprs = {}, {}
    for name in fn.arg_names:
        if name not in named_args:
            continue
        if name in constexpr_names:
            constexprs[name] = named_args[name]
            continue
        spec = _arg_spec(named_args[name])
        if spec is not None:
            signature[name] = spec
    return signature, constexprs


def _current_arch(arch: str | None) -> str:
    if arch:
        return arch
    if os.environ.get("KERNELRULES_ARCH"):
        return os.environ["KERNELRULES_ARCH"]
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


class EarlyPrune:
    """The callable handed to ``prune_configs_by``; see the module docstring."""

    def __init__(self, kernel: Any, arch: str | None = None, compile: bool = False, repair: bool = True) -> None:
        self.kernel, self.arch, self.compile, self.repair = kernel, arch, compile, repair
        self._memo: dict[Any, list] = {}

    def __call__(self, configs: Sequence[Any], named_args: Mapping[str, Any], **kwargs: Any) -> list:
        if not configs:
            return list(configs)
        try:
            return self._prune(list(configs), {**named_args, **kwargs})
        except Exception as exc:  # never break the user's autotuning
            warnings.warn(f"kernelrules: pruning skipped, all {len(configs)} configs kept ({type(exc).__name__}: {exc})",
                          stacklevel=2)
            return list(configs)

    def _prune(self, configs: list, args: Mapping[str, Any]) -> list:
        from .arch import load_arch
        from .prune import KernelTarget, Pruner

        fn = _jit_function(self.kernel)
        arch = load_arch(_current_arch(self.arch))
        signature, constexprs = launch_signature(fn, args)
        unknown = {k for c in configs for k in getattr(c, "kwargs", {})} - set(fn.arg_names) - {
            "waves_per_eu", "matrix_instr_nonkdim", "kpack", "schedule_hint"}
        if unknown:
            raise ValueError(f"configs name parameters the kernel does not have: {', '.join(sorted(unknown))}")
        key = (arch.name, tuple(sorted(signature.items())), tuple(sorted(constexprs.items(), key=str)),
               tuple(id(c) for c in configs))
        if key in self._memo:
            return self._memo[key]
        source = inspect.getsourcefile(fn.fn)
        dtypes = sorted({v[1:] for v in signature.values() if isinstance(v, str) and v.startswith("*")})
        target = KernelTarget(Path(source), fn.fn.__name__, signature, {"name": fn.fn.__name__, "dtypes": dtypes},
                              frozenset(constexprs))
        judged = [KernelConfig.from_triton(c).replace(constexprs) for c in configs]
        pruner = Pruner(target, jobs=None)
        try:
            records, _model = pruner.judge_arch(judged, arch, self.compile, {})
        finally:
            pruner.close()
        kept = self._decide(configs, records, constexprs)
        self._memo[key] = kept
        return kept

    def _decide(self, configs: list, records: list, constexprs: Mapping[str, Any]) -> list:
        kept, seen = [], set()
        for original, record in zip(configs, records):
            verdict = record.verdict
            codes = ", ".join(d.code for d in verdict.diagnostics if d.severity == "error")
            if not verdict.rejected:
                kept.append(original)
                seen.add(verdict.config.key())
                continue
            if self.repair and verdict.repair is not None and verdict.repair.key() not in seen:
                seen.add(verdict.repair.key())
                fixed = {k: v for k, v in verdict.repair.to_dict().items() if k not in constexprs}
                repaired = KernelConfig.from_dict(fixed).to_triton()
                repaired.pre_hook = getattr(original, "pre_hook", None)
                kept.append(repaired)
                log.info("kernelrules: %s repaired to %s (%s)", verdict.config, verdict.repair, codes)
            else:
                log.info("kernelrules: %s dropped (%s)", verdict.config, codes)
        if kept:
            return kept
        least_bad = min(zip(configs, records), key=lambda pair: sum(d.severity == "error" for d in pair[1].verdict.diagnostics))
        warnings.warn("kernelrules: every config is rejected; keeping the least bad one so autotuning can go on",
                      stacklevel=3)
        return [least_bad[0]]


def early_prune(kernel: Any, arch: str | None = None, compile: bool = False, repair: bool = True) -> Callable:
    """A pruner for ``triton.autotune(prune_configs_by={"early_config_prune": ...})`` bound to ``kernel``."""
    return EarlyPrune(kernel, arch=arch, compile=compile, repair=repair)
