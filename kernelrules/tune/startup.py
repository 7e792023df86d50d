"""What ``kernelrules tune`` starts early, so the first benchmark comes sooner.

The benchmark workers import torch and set up their GPUs for seconds after the run
starts. The driver spends that time judging the space and opening the study, and with
these two helpers also:

- **compiling the first candidates** (:func:`first_compiles`): the perf model's seeds are
  the first trials the loop asks for, so the loop's first compile batch is known before
  any worker is ready. The driver hands it to the gate's compile thread at once; when the
  loop compiles the same configs, the compile pool's result cache answers.
- **judging the space while the study opens** (:class:`InBackground`): the config stage's
  probe compiles run in the compile pool's processes and Optuna's first storage open spends
  its time importing and writing the database, so neither waits for the other;
- **importing what the sampler needs later** (:func:`warm_sampler_imports`): Optuna's
  Sobol (QMC) sampler imports ``scipy.stats`` at its first proposal, seconds in the middle
  of the search; a daemon thread imports it while the run starts.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

from ..config import KernelConfig

#: Samplers that start with Optuna's QMC sampler (see :mod:`kernelrules.tune.samplers`).
QMC_SAMPLERS = ("auto", "gp", "qmc")


def first_compiles(seeds: Sequence[KernelConfig], count: int, passes: Callable[[KernelConfig], bool]) -> list:
    """The first ``count`` seeds the loop will send to the compiled-stage gate (those ``passes`` accepts)."""
    return [config for config in seeds if passes(config)][:count]


class InBackground:
    """``function(*args)`` in a daemon thread; :meth:`result` waits for it and returns its value or
    raises its exception in the caller's thread (a daemon: a run that fails meanwhile is not held
    at exit by it)."""

    def __init__(self, function: Callable[..., Any], *args: Any, name: str = "kernelrules-background") -> None:
        self._outcome: tuple[bool, Any] | None = None
        self._thread = threading.Thread(target=self._run, args=(function, args), name=name, daemon=True)
        self._thread.start()

    def _run(self, function: Callable[..., Any], args: tuple) -> None:
        try:
            self._outcome = (True, function(*args))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller by result()
            self._outcome = (False, exc)

    def join(self) -> None:
        """Wait for the thread to end, whatever its outcome (for clean-up: the caller has an error of its own)."""
        self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        assert self._outcome is not None
        ok, value = self._outcome
        if not ok:
            raise value
        return value


def warm_sampler_imports(sampler: str) -> threading.Thread | None:
    """Import the sampler's slow lazy imports in a daemon thread; the thread, or None when there are none."""
    if sampler not in QMC_SAMPLERS:
        return None
    thread = threading.Thread(target=_import_scipy_stats, name="kernelrules-warm-imports", daemon=True)
    thread.start()
    return thread


def _import_scipy_stats() -> Any:
    try:
        from scipy.stats import qmc  # noqa: F401 - imported for its side effect: the module cache
    except Exception:  # noqa: BLE001 - a warm-up only: the sampler imports (and reports) it itself
        return None
    return qmc
