"""``kernelrules check-config --kernel FILE[:NAME]`` and ``--space SPACE.yaml``: judge one
config of a real kernel, with the resource model's predictions and a cross-compile.

Without a kernel, ``check-config`` can only judge what the config and the architecture
say. With one, the config is judged the way ``kernelrules prune --compile`` judges the
configs of a space: config-stage rules over the resource model's predictions, then the
compiled facts (shared memory, registers, spills, MFMA/MMA path, occupancy; on AMD also
the VGPRs a ``waves_per_eu`` cap leaves against those the kernel needs without it).

The kernel's launch signature comes from the space file, or, for ``--kernel``, from the
same sources ``kernelrules lint`` uses (a spec file or sidecar, launch call sites,
dataflow and naming). Constexprs the config does not set come from the spec, a launch
literal or lint's labelled guesses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..config import KernelConfig
from ..errors import KernelrulesError, KernelSourceError
from ..judge.pipeline import ConfigJudge, PruneRecord
from ..compile.target import KernelTarget


@dataclass
class KernelCheck:
    """What ``check-config`` judged on a kernel: the record and where the signature came from."""

    record: PruneRecord
    kernel: str
    guessed: dict[str, Any]


def _split_kernel(spec: str) -> tuple[str, str | None]:
    """``path.py:name`` -> (path, name); a bare path -> (path, None)."""
    path, sep, name = spec.rpartition(":")
    if sep and path.endswith(".py") and name.isidentifier():
        return path, name
    return spec, None


def target_from_file(spec: str, config: KernelConfig, spec_file: str | None = None) -> tuple[KernelTarget, KernelConfig, dict]:
    """The kernel target of ``FILE[:NAME]`` and the config completed with its missing constexprs."""
    from ..discover.kernels import discover
    from ..specify.kernelspec import resolve
    from ..specify.signatures import load_spec_file

    path, name = _split_kernel(spec)
    if not Path(path).is_file():
        raise KernelSourceError(f"kernel file not found: {path}")
    kernels = [k for k in discover([path]).kernels if not k.is_helper and (name is None or k.name == name)]
    if not kernels:
        raise KernelSourceError(f"no @triton.jit kernel{f' named {name!r}' if name else ''} in {path}")
    if len(kernels) > 1:
        names = ", ".join(k.name for k in kernels)
        raise KernelSourceError(f"{path} has several kernels ({names})", hint=f"name one: --kernel {path}:NAME")
    kernel = kernels[0]
    loaded = load_spec_file(spec_file) if spec_file else None
    resolved = resolve(kernel, spec=loaded, sites=[(config, None, None)], at_launch=False)
    if not resolved.signature.complete:
        raise KernelrulesError(
            f"cannot judge {kernel.name}: no launch signature for {', '.join(resolved.signature.missing)}",
            hint=f"write a spec with 'kernelrules spec {path}' or record one with 'kernelrules trace'")
    return resolved.target(kernel), resolved.sites[0][0], dict(resolved.guessed)


def target_from_space(path: str, config: KernelConfig) -> tuple[KernelTarget, KernelConfig]:
    """The kernel target of a space file and the config with the space's fixed values."""
    from ..space import load_space

    space = load_space(path)
    target = KernelTarget.from_space(space)
    return target, config.replace({k: v for k, v in space.fixed.items() if k not in config.to_dict()})


def check_on_kernel(config: KernelConfig, arch: Any, *, kernel: str | None = None, space: str | None = None,
                    compile: bool = True, timeout: float = 60.0, cache_dir: str | None = None,
                    engine: Any = None) -> KernelCheck:
    """Judge ``config`` of a kernel (``kernel`` is ``FILE[:NAME]``, or ``space`` a space file) on ``arch``."""
    from ..compile.cache import ResultCache
    from ..judge.pipeline import check_target

    guessed: dict[str, Any] = {}
    if space is not None:
        target, full = target_from_space(space, config)
    elif kernel is not None:
        target, full, guessed = target_from_file(kernel, config)
    else:  # pragma: no cover - the CLI passes one of them
        raise ValueError("check_on_kernel needs kernel= or space=")
    check_target(target, [full], [arch])
    cache = ResultCache(cache_dir) if cache_dir else ResultCache()
    pruner = ConfigJudge(target, engine=engine, jobs=2, timeout=timeout, cache=cache)
    try:
        records, _model = pruner.judge_arch([full], arch, compile, {})
    finally:
        pruner.close()
    return KernelCheck(records[0], target.name, guessed)
