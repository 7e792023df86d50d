"""What ``kernelrules tune`` starts early, so the first benchmark comes sooner.

The benchmark workers import torch and set up their GPUs for seconds after the run
starts. The driver spends that time judging the space and opening the study, and with
these helpers also:

- **compiling the first candidates** (:func:`first_compiles`): the perf model's seeds are
  the first trials the loop asks for, so the loop's first compile batch is known before
  any worker is ready. The driver hands it to the gate's compile thread at once; when the
  loop compiles the same configs, the compile pool's result cache answers.
- **compiling the first guesses while the space is judged** (:func:`guess_budget`): on a
  machine with compile workers to spare, the perf model's first picks from the configs'
  values alone (no resource model yet) compile ahead beside the probe compiles; the seeds
  judged after the probes are mostly the same configs (the first seed was among the first
  four guesses in 37 of the H200 suite's 43 problems), whose compiles are then done.
- **importing what the sampler needs later** (:func:`warm_sampler_imports`): Optuna's
  Sobol (QMC) sampler imports ``scipy.stats`` at its first proposal, seconds in the middle
  of the search; a daemon thread imports it while the run starts.
"""

from __future__ import annotations

import sysconfig
import threading
from typing import Any, Callable, Sequence

from ..config import KernelConfig

#: Samplers that start with Optuna's QMC sampler (see :mod:`kernelrules.tune.samplers`).
QMC_SAMPLERS = ("auto", "gp", "qmc")


def first_compiles(seeds: Sequence[KernelConfig], count: int, passes: Callable[[KernelConfig], bool]) -> list:
    """The first ``count`` seeds the loop will send to the compiled-stage gate (those ``passes`` accepts)."""
    return [config for config in seeds if passes(config)][:count]


#: Compile workers left to the resource model's probe compiles (two at a time) while first guesses compile ahead.
PROBE_WORKERS = 2
#: The fewest compile workers worth compiling first guesses on while the probes compile.
GUESS_WORKERS = 2
#: The most configs ranked for first guesses: the ranking takes 0.07-0.4 ms a config on a 2-core CPU (four suite and
#: example spaces) and delays the judging it runs before (0.12 s for the 1875 configs of examples/matmul.tune.yaml);
#: a larger space guesses nothing.
MAX_GUESS_CONFIGS = 4096


#: The most first guesses: the first seed was among the first four guesses in 37 of the H200 suite's 43 problems, and
#: more compiles beside the benchmark worker's start (torch's import) would compete with it for the machine's cores.
MAX_FIRST_GUESSES = 8
#: The most first guesses judged before the space with warm workers (the first timed at once, the others while the
#: space is judged): in the warm H200 series at a639a79 the first config within 2% was among the first three timed in
#: 10 of 13 problems; each one more holds the judging's start until its compiles end.
EARLY_GUESSES = 3


def guess_budget(space_size: int, compile_workers: int, seeds: int, probes: int = PROBE_WORKERS) -> tuple[int, int]:
    """How many first guesses to rank and compile ahead while the space is judged, and how many compile jobs they
    may take: one per worker the ``probes`` sent ahead leave, at most ``seeds`` and :data:`MAX_FIRST_GUESSES`;
    (0, 0) when fewer than :data:`GUESS_WORKERS` are left (a small machine's probes would wait for them), or for a
    space of more than :data:`MAX_GUESS_CONFIGS`."""
    spare = compile_workers - max(probes, PROBE_WORKERS)
    if spare < GUESS_WORKERS or seeds <= 0 or not 0 < space_size <= MAX_GUESS_CONFIGS:
        return 0, 0
    return min(seeds, spare, MAX_FIRST_GUESSES), spare


def room_for_register_probes(compile_workers: int, first: int, register: int) -> bool:
    """Whether a run sends a kernel's ``register`` probes before its study opens, with its ``first`` probes: only
    when the workers they take still leave :data:`GUESS_WORKERS` for the first guesses (else the judging compiles
    them with the first probes, and the guesses keep their workers)."""
    return register > 0 and compile_workers - first - register >= GUESS_WORKERS


def warm_sampler_imports(sampler: str) -> threading.Thread | None:
    """Import the sampler's slow lazy imports in a daemon thread; the thread, or None when there are none."""
    if sampler not in QMC_SAMPLERS:
        return None
    # scipy's import reads sysconfig, which CPython 3.11 fills on first use and publishes half-filled: a Triton
    # import in the main thread meanwhile read sysconfig's EXE as None (docs/tune.md, step 8). Filled here first.
    sysconfig.get_config_vars()
    thread = threading.Thread(target=_import_scipy_stats, name="kernelrules-warm-imports", daemon=True)
    thread.start()
    return thread


def _import_scipy_stats() -> Any:
    try:
        from scipy.stats import qmc  # noqa: F401 - imported for its side effect: the module cache
    except Exception:  # noqa: BLE001 - a warm-up only: the sampler imports (and reports) it itself
        return None
    return qmc
