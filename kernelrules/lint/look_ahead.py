"""Resolve the next kernels of a lint run early and compile their first config ahead.

A cold lint at the compiled stage judges kernels one at a time, and much of a kernel's
wait is one compile at a time: the probe of its first config (the guess search's, and the
judging's first compile, which the cache then answers), or one slow config. Meanwhile the
other workers have nothing to do. :class:`LookAhead` is the pool's source of compiles ahead
(:meth:`~kernelrules.compile.pool.CompilePool.compile_ahead`): whenever a worker would be
idle, it resolves the next kernel not seen yet, up to :data:`DEPTH` kernels past the
current one (the same :func:`resolve` call the linter makes, kept for it), and offers its
first config's compile job. Nothing a kernel's judging reads changes: a compile ahead fills
the cache its judging reads, and a kernel whose compiles are other ones finds no help.
"""

from __future__ import annotations

from typing import Any, Sequence

from ..specify.kernelspec import ResolvedKernel, resolve

#: How many kernels past the current one may be resolved and compiled ahead.
DEPTH = 16


class LookAhead:
    """The next kernels' resolutions and replay keys, computed once (``linter`` is the run's
    :class:`~kernelrules.lint.linter.Linter`: its options, architectures, replay and pool)."""

    def __init__(self, linter: Any) -> None:
        self.linter = linter
        self._kernels: Sequence[Any] = ()
        self._current = 0
        self._next = 0  # the first kernel not offered yet
        self._resolved: dict[int, ResolvedKernel] = {}
        self._keys: dict[int, str | None] = {}

    @property
    def enabled(self) -> bool:
        """Only at the compiled stage, and never with ``--import`` (whose configs come from running code)."""
        options = self.linter.options
        return options.stage == "compiled" and not options.import_modules

    def replay_key(self, kernel: Any) -> str | None:
        """The kernel's launch-replay key (:meth:`~kernelrules.lint.launch_replay.LaunchReplay.key`), made once."""
        if id(kernel) not in self._keys:
            replay = self.linter.replay
            self._keys[id(kernel)] = replay.key(kernel) if replay else None
        return self._keys[id(kernel)]

    def resolved(self, kernel: Any) -> ResolvedKernel | None:
        """The resolution made ahead for ``kernel`` (handed over once: judging may retype it), else None."""
        return self._resolved.pop(id(kernel), None)

    def at(self, kernels: Sequence[Any], index: int) -> None:
        """The run is about to judge ``kernels[index]``: offer the pool the kernels after it."""
        if not self.enabled:
            return
        self._kernels, self._current = kernels, index
        self._next = max(self._next, index + 1)
        self.linter.pool.compile_ahead(self.next_job)

    def stop(self) -> None:
        """No more compiles ahead (the run's kernels are done)."""
        if self.enabled:
            self.linter.pool.compile_ahead(None)

    def next_job(self) -> Any:
        """The next kernel's first compile job, or None when none is due (:data:`DEPTH` reached, no kernels left)."""
        while self._next < len(self._kernels) and self._next <= self._current + DEPTH:
            kernel = self._kernels[self._next]
            self._next += 1
            job = self._first_job(kernel)
            if job is not None:
                return job
        return None

    def _first_job(self, kernel: Any) -> Any:
        """The compile job of the kernel's first config on the first architecture, or None when there is
        nothing to compile ahead: an outcome to replay, a launch that does not resolve, no config."""
        linter, options = self.linter, self.linter.options
        key = self.replay_key(kernel)
        if key and linter.replay.has(key):
            return None
        autotune = getattr(kernel, "autotune", None)
        if autotune is not None and autotune.configs_error:
            return None
        try:
            resolved = resolve(kernel, spec=options.spec, trace=options.trace, sites=None)
        except Exception:  # noqa: BLE001 - the kernel's own turn resolves it again and reports what fails
            return None
        self._resolved[id(kernel)] = resolved
        if not resolved.signature.complete or not resolved.sites:
            return None
        return linter.first_arch_job(kernel, resolved.signature.spec, resolved.sites[0][0], frozenset(resolved.fixed))
