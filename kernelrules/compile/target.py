"""The kernel a compile is for: file, name, launch signature and the values a problem fixes.

Every user of the judging core (lint, check-config, prune, the tune gate, the tuner adapters,
the testing helpers, the perf model's probes) builds its :class:`KernelTarget` through one of the
constructors here, so the pointer dtypes that rules read as ``kernel.dtypes`` are derived in one
place (:func:`kernelrules.config.pointer_dtypes`).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping

from .compilejob import CompileJob
from ..config import KernelConfig, pointer_dtypes


@dataclass(frozen=True)
class KernelTarget:
    """What a compile needs besides the config: the kernel file and name, signature, fixed values."""

    path: Path
    name: str
    signature: Mapping[str, Any]
    kernel_info: Mapping[str, Any]
    fixed: frozenset[str] = frozenset()  # constexprs the problem fixes: repairs leave them alone
    src: tuple[str, ...] = ()  # extra search roots for helpers imported from the package (--src)

    @classmethod
    def for_signature(cls, path: str | Path, name: str, signature: Mapping[str, Any],
                      fixed: Iterable[str] = (), src: Iterable[str] = ()) -> "KernelTarget":
        """The target of kernel ``name`` in ``path`` launched with ``signature``."""
        return cls(Path(path), name, dict(signature), {"name": name, "dtypes": pointer_dtypes(signature)},
                   frozenset(fixed), tuple(src))

    @classmethod
    def for_jit_function(cls, fn: Any, signature: Mapping[str, Any], fixed: Iterable[str] = ()) -> "KernelTarget":
        """The target of a live ``@triton.jit`` function (its source file and name)."""
        return cls.for_signature(Path(inspect.getsourcefile(fn.fn)), fn.fn.__name__, signature, fixed)

    @classmethod
    def from_space(cls, space: Any) -> "KernelTarget":
        """The target of a loaded space file: its kernel, signature and fixed values."""
        return cls(space.kernel_path, space.kernel_name, space.signature, space.kernel_info(), frozenset(space.fixed))

    def job(self, config: KernelConfig, arch: Any, timeout: float | None) -> CompileJob:
        """The compile job of one config on one architecture."""
        options = {k: getattr(config, k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg")
                   if getattr(config, k) is not None}
        target = getattr(arch, "triton_target", None) or ("cuda", arch.sm, arch.flat().get("warp_size", 32))
        if target[0] == "hip":  # waves_per_eu, matrix_instr_nonkdim, kpack: real HIP backend options
            options.update(config.backend_options)
        return CompileJob(path=str(Path(self.path).resolve()), kernel=self.name, signature=dict(self.signature),
                          constexprs=dict(config.constexprs), options=options, target=tuple(target), timeout=timeout,
                          analyze=True, src=tuple(self.src))
