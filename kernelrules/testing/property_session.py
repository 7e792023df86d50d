"""What properties share: one compile pool and cache, learned resource models, compile results.

Compiles are what a property test costs. A :class:`PropertySession` compiles each config
once per kernel, signature and architecture, whatever rules check it, learns the
resource model of a space once per architecture (as ``kernelrules prune`` does), and
remembers time-outs too, which the disk cache does not keep.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..arch import Arch
from ..compile.cache import ResultCache
from ..config import KernelConfig
from ..judge.engine import Engine
from ..judge.facts import compiled_facts
from ..judge.pipeline import ConfigJudge
from ..compile.target import KernelTarget
from ..judge.ruleset import RuleSet
from ..space import Space

#: Time limit of a property's compiles, seconds: prune's default, and the limit of the H200
#: sweep, where every compile finished within 8 s or ran past 30 s (a timeout is inconclusive).
DEFAULT_TIMEOUT = 30.0


class PropertySession:
    """One compile pool, cache, learned models and compile results shared by many properties.

    Compiles are what a property test costs, so a config compiled for one rule is not
    compiled again for another on the same architecture: results (time-outs too, which
    the disk cache does not keep) are remembered for the session. Close it when done.
    """

    def __init__(self, cache: ResultCache | str | os.PathLike[str] | None = None, *, jobs: int | None = None,
                 timeout: float = DEFAULT_TIMEOUT) -> None:
        self.cache = cache if isinstance(cache, ResultCache) or cache is None else ResultCache(cache)
        self.jobs = jobs or min(2, os.cpu_count() or 1)
        self.timeout = timeout
        self._pool: Any = None
        self._pruners: dict[tuple, ConfigJudge] = {}
        self._models: dict[tuple, Any] = {}
        self._results: dict[tuple, dict[str, Any]] = {}

    @property
    def pool(self) -> Any:
        """The compile pool, started on first use."""
        if self._pool is None:
            from ..compile.pool import CompilePool

            self._pool = CompilePool(max_workers=self.jobs, timeout=self.timeout,
                                     cache=self.cache if self.cache is not None else ResultCache())
        return self._pool

    def close(self) -> None:
        """Stop the compile workers."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    def __enter__(self) -> "PropertySession":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def pruner(self, space: Space) -> ConfigJudge:
        """The prune machinery of one space (its kernel and signature), on the shared pool."""
        key = space_key(space)
        if key not in self._pruners:
            target = KernelTarget.from_space(space)
            self._pruners[key] = ConfigJudge(target, pool=self.pool, timeout=self.timeout)
        return self._pruners[key]

    def model(self, space: Space, arch: Arch, rules: RuleSet) -> Any:
        """The resource model ``kernelrules prune`` learns for this space on ``arch`` (None if none)."""
        points = json.dumps([space.space, space.fixed, [c.source for c in space.constraints]], sort_keys=True)
        key = (space_key(space), points, arch.label, tuple(r.code for r in rules))
        if key not in self._models:
            pruner = self.pruner(space)
            plain = Engine(rules).judge_many(list(space.configs()), arch, kernel=space.kernel_info())
            candidates = [v.config for v in plain if not v.rejected]
            self._models[key] = pruner.learn_model(candidates, arch) if candidates else None
        return self._models[key]

    def compiled(self, space: Space, arch: Arch, config: KernelConfig, predicted: Mapping[str, Any]) -> dict[str, Any]:
        """The compiled facts of one config, as ``kernelrules prune --compile`` computes them."""
        self.compile_many(space, arch, [(config, predicted)])
        return self._results[(space_key(space), arch.label, config.key())]

    def compile_many(self, space: Space, arch: Arch, items: Iterable[tuple[KernelConfig, Mapping[str, Any]]]) -> None:
        """Compile the (config, predicted facts) pairs not compiled yet, in parallel on the pool."""
        todo = {}
        for config, predicted in items:
            key = (space_key(space), arch.label, config.key())
            if key not in self._results and key not in todo:
                todo[key] = (config, predicted)
        if not todo:
            return
        configs = [config for config, _ in todo.values()]
        results = self.pruner(space).compile_many(configs, arch, f"property {arch.name}")
        for (key, (config, predicted)), result in zip(todo.items(), results):
            self._results[key] = compiled_facts(result, arch, num_warps=config.num_warps or 4,
                                                timeout=self.timeout, predicted=predicted)


def space_key(space: Space) -> tuple:
    """What identifies a space's compiles: kernel file, kernel name and signature."""
    return (str(Path(space.kernel_path).resolve()), space.kernel_name, json.dumps(space.signature, sort_keys=True))


_DEFAULT_SESSION: PropertySession | None = None


def default_session() -> PropertySession:
    """A process-wide session (default cache directory), stopped at interpreter exit."""
    global _DEFAULT_SESSION
    if _DEFAULT_SESSION is None:
        import atexit

        _DEFAULT_SESSION = PropertySession()
        atexit.register(_DEFAULT_SESSION.close)
    return _DEFAULT_SESSION
