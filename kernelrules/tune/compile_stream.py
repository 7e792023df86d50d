"""The compiled-stage gate as a stream: one candidate in at a time, one verdict out per finished compile.

``kernelrules tune`` asks its sampler for candidates one at a time and times them one per
GPU. Compiled in batches, each batch waited for its slowest compile (a config in ptxas
for 12 s) while the other compile workers and the GPU sat idle. A :class:`CompileStream`
runs the compile pool for the whole search in one background thread over a
:class:`kernelrules.compile.feed.JobFeed`: :meth:`CompileStream.want` starts a config's
compile as soon as a compile worker is free, and its verdict is there to :meth:`CompileStream.pop`
the moment that compile ends. The loop waits on :attr:`CompileStream.signal` together with its
benchmark workers' pipes, so it wakes for whichever comes first.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Iterable, Iterator

from ..compile.feed import JobFeed, Signal
from ..config import KernelConfig

#: Seconds :meth:`CompileStream.close` waits for the compile thread to stop.
STOP_TIMEOUT = 30.0


class CompileStream:
    """Compile configs in the background and judge each on its compiled facts as soon as it is compiled.

    ``judge(config, result)`` gives the verdict, ``job(config)`` the compile job and ``compile(feed)``
    runs the pool over a feed (:meth:`kernelrules.tune.gate.Gate.stream` wires the gate's). A config
    is compiled once however often it is wanted; an error in the compile thread is raised by the
    next :meth:`pop`. ``side_jobs(config)`` are compiled after a config's own job and give no verdict
    (the gate's: the config at the problem's edge shapes, so the benchmark worker finds those binaries
    in the shared Triton cache). A passing verdict is handed out once its side jobs are answered too:
    sent to the GPU earlier, the config's check would compile those shapes itself while the GPU waits
    (2.8-7.7 s for 1-4 configs a run in 4 of 5 suite problems on the H200, 3f72e1d) instead of
    overlapping them with the compile. A failing verdict is handed out at once (the config is never
    launched).
    """

    def __init__(self, judge: Callable[[KernelConfig, Any], Any], job: Callable[[KernelConfig], Any],
                 compile: Callable[[JobFeed], Iterator[tuple[Any, Any]]], *,
                 side_jobs: Callable[[KernelConfig], list[Any]] | None = None) -> None:
        self._judge, self._job, self._side_jobs = judge, job, side_jobs
        self._feed = JobFeed()
        self.signal = Signal()  #: set whenever a verdict is ready (or the thread failed)
        self._lock = threading.Lock()
        self._wanted: dict[int, tuple[str, KernelConfig]] = {}  # id(job) -> (config key, config)
        self._keys: set[str] = set()  # configs wanted and not popped
        self._done: dict[str, Any] = {}
        self._side_of: dict[int, str] = {}  # id(side job) -> the key of the config it was compiled for
        self._sides_left: dict[str, int] = {}  # config key -> its side jobs not yet answered
        self._held: dict[str, Any] = {}  # passing verdicts waiting for their side jobs
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._serve, args=(compile,), name="kernelrules-gate", daemon=True)
        self._thread.start()

    def want(self, config: KernelConfig) -> None:
        """Compile and judge ``config`` (nothing new when it is compiling or its verdict waits)."""
        key = config.key()
        with self._lock:
            if key in self._keys:
                return
            self._keys.add(key)
        job = self._job(config)
        sides = self._side_jobs(config) if self._side_jobs else []
        with self._lock:
            self._wanted[id(job)] = (key, config)
            self._own_sides(key, sides)
        self._feed.put(job)
        for side in sides:  # compiled after it; no verdict
            self._feed.put(side)

    def side(self, jobs: Iterable[Any], config: KernelConfig | None = None) -> None:
        """Compile ``jobs`` too, for no verdict (side jobs learned after their configs were wanted). With ``config``,
        they are that config's: a passing verdict on it not yet handed out waits for them, as for its own."""
        jobs = list(jobs)
        key = config.key() if config is not None else None
        with self._lock:
            if key is not None and key in self._keys and jobs:  # wanted, its verdict not handed out yet
                self._own_sides(key, jobs)
                if key in self._done and _launchable(self._done[key]):
                    self._held[key] = self._done.pop(key)  # judged already, not popped: it waits now
        for job in jobs:
            self._feed.put(job)

    def ready(self) -> bool:
        """Whether a verdict waits to be popped (or the stream failed: :meth:`pop` raises it)."""
        with self._lock:
            return bool(self._done) or self._error is not None

    def pop(self, configs: Iterable[KernelConfig]) -> dict[str, Any]:
        """The verdicts on those of ``configs`` whose compiles are over, by config key (then forgotten).

        Clears :attr:`signal` first, so a verdict that lands later wakes the next wait."""
        self.signal.clear()
        found = {}
        with self._lock:
            if self._error is not None:
                raise self._error
            for config in configs:
                key = config.key()
                judgement = self._done.pop(key, None)
                if judgement is not None:
                    self._keys.discard(key)
                    found[key] = judgement
        return found

    def _own_sides(self, key: str, jobs: list[Any]) -> None:
        """Count ``jobs`` as side jobs of config ``key``, whose passing verdict waits for them. Called with the lock
        held."""
        for job in jobs:
            self._side_of[id(job)] = key
        if jobs:
            self._sides_left[key] = self._sides_left.get(key, 0) + len(jobs)

    def _side_answered(self, key: str | None) -> bool:
        """Count one answered side job of config ``key`` (None: a side job of no config's); whether that released
        the config's held verdict. Called with the lock held."""
        if key is None or key not in self._sides_left:
            return False
        self._sides_left[key] -= 1
        if self._sides_left[key] > 0:
            return False
        del self._sides_left[key]
        if key not in self._held:  # the config's own compile is not over yet: its verdict goes out at once then
            return False
        self._done[key] = self._held.pop(key)
        return True

    def wait(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a verdict (returns at once when one waits)."""
        import select

        select.select([self.signal], [], [], timeout)

    def close(self) -> None:
        """Stop: compiles still running are abandoned (their workers killed), the thread is joined."""
        self._feed.close(abandon=True)
        self._thread.join(STOP_TIMEOUT)
        if not self._thread.is_alive():
            self._feed.signal.close()
            self.signal.close()

    def _serve(self, compile: Callable[[JobFeed], Iterator[tuple[Any, Any]]]) -> None:
        try:
            for job, result in compile(self._feed):
                with self._lock:
                    wanted = self._wanted.pop(id(job), None)
                    if wanted is None:  # a side job (an edge shape's binary, for the Triton cache): nothing to judge
                        if self._side_answered(self._side_of.pop(id(job), None)):
                            self.signal.set()
                        continue
                key, config = wanted
                judgement = self._judge(config, result)
                with self._lock:
                    if self._sides_left.get(key) and _launchable(judgement):
                        self._held[key] = judgement  # handed out when its last side job is answered
                        continue
                    self._sides_left.pop(key, None)
                    self._done[key] = judgement
                self.signal.set()
        except BaseException as exc:  # noqa: BLE001 - raised in the loop's thread by the next pop
            with self._lock:
                self._error = exc
            self.signal.set()


def _launchable(judgement: Any) -> bool:
    """Whether a verdict lets its config be launched (a verdict without ``passed``, a test's, counts as passing)."""
    return bool(getattr(judgement, "passed", True))
