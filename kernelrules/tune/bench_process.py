"""The benchmark worker process: ``python -m kernelrules.tune.bench_process FD``.

Started by :class:`kernelrules.tune.worker.BenchWorker` (the driver's side; read its
module docstring for the protocol). Here: set ``CUDA_VISIBLE_DEVICES``, ``TRITON_INTERPRET``
and the shared Triton cache *before* torch or Triton is imported, load the kernel and the
problem, check that the reference runs, say ``ready``, then answer ``evaluate``, ``time``
and ``baseline`` requests until told to stop. The process dies with its driver
(``PR_SET_PDEATHSIG`` and a watchdog thread, from :mod:`kernelrules.compile.workers`) and exits
after an error that loses the CUDA context, so the driver starts a fresh one.
"""

from __future__ import annotations

import os
import time
import traceback
from typing import Any, Callable, Mapping

from ..compile.triton_key import install as install_triton_key
from ..compile.workers import die_with_parent, watch_parent
from .host_modules import share_host_modules
from .jit_warmup import await_builds, start_launcher_builds
from .worker import WorkerSettings, visible_device


def _exit_now() -> None:
    """The driver is gone: nobody reads this worker's answers (``os._exit``: no clean-up can hang)."""
    os._exit(1)


class _Session:
    """The worker's state: the runner, cached inputs and references, timing buffers."""

    def __init__(self, settings: WorkerSettings, conn: Any) -> None:
        import torch

        from .launch import make_runner

        self.settings, self.conn, self.torch = settings, conn, torch
        self.device = "cpu" if settings.interpret else "cuda"
        self.runner = make_runner(settings.spec, self.device)
        self.spec = settings.spec
        self.cases: dict[tuple, tuple[dict, dict, dict]] = {}
        self.timing_sets: list[dict] | None = None
        self.launchers: list = []  # the launchers' builds started with the problem (jit_warmup.start_launcher_builds)

    def phase(self, name: str) -> None:
        self.conn.send(("phase", name))

    def sync(self) -> None:
        if not self.settings.interpret:
            self.torch.cuda.synchronize()

    def case(self, sizes: Mapping[str, int], seed: int) -> tuple[dict, dict, dict]:
        """Inputs (with output buffers) and the float64 and low-precision references, cached."""
        key = (tuple(sorted(sizes.items())), seed)
        if key not in self.cases:
            tensors = self.runner.make(sizes, seed)
            ref64 = self.runner.reference(tensors, sizes, precise=True)
            try:
                lowp = self.runner.reference(tensors, sizes, precise=False)
            except Exception:  # noqa: BLE001 - the rounding floor is optional
                lowp = {}
            self.sync()
            self.cases[key] = (tensors, ref64, lowp)
        return self.cases[key]

    def check_reference(self) -> None:
        """Fail at start, not per config, when the problem or its reference cannot run."""
        _tensors, ref64, _ = self.case(self.spec.sizes, self.spec.seeds[0])
        missing = [n for n in self.runner.outputs if n not in ref64]
        if missing:
            raise ValueError(f"the reference gives no value for output(s) {', '.join(missing)}")
        if self.spec.reference_config is not None:
            self._check_reference_config()

    def _check_reference_config(self) -> None:
        """The kernel at the reference config must write every output element, on every seed and edge shape."""
        from .correctness import poisoned_count

        config = ", ".join(f"{k}={v}" for k, v in self.spec.reference_config.items())
        cases = [(self.spec.sizes, s) for s in self.spec.seeds] + [(e, self.spec.seeds[0]) for e in self.spec.edge_sizes]
        for sizes, seed in cases:
            _tensors, ref, _ = self.case(sizes, seed)
            for name in self.runner.outputs:
                value = ref[name]
                count = poisoned_count(value)
                if count:
                    where = ", ".join(f"{k}={v}" for k, v in sizes.items())
                    raise ValueError(f"the reference config ({config}) leaves {count} of {value.numel()} elements of "
                                     f"{name} unwritten or not finite at {where} (outputs are poisoned first; NaN "
                                     f"from the inputs? try init: rand): pick another reference config")

    def harness_edges(self) -> list[dict]:
        """The launch signatures of a harness problem's edge shapes (:mod:`kernelrules.tune.harness_edges`)."""
        settings = self.settings
        if settings.interpret or not settings.edge_probe_configs or not self.spec.harness:
            return []
        from .harness_edges import harness_edge_signatures

        return harness_edge_signatures(self.runner, self.spec, settings.edge_probe_configs, settings.space_signature,
                                       lambda sizes: self.case(sizes, self.spec.seeds[0])[0])

    def warm(self, before_triton: Callable[[], None] | None = None) -> None:
        """Before the first request (the driver is still judging the space, on a GPU machine): the first trial's own
        set-up, done once here instead: every seed's and edge shape's inputs and references, the timing copies, a
        comparison against the reference, Triton's source hash, its CUDA helper module and its first specialization
        of a tensor argument (:mod:`.jit_warmup`). Each step on its own: a failure is left to the first trial, which
        meets it again and reports it. ``before_triton`` runs just before the hash (the worker takes the driver's
        hash then, if it came: as late as possible, so it has had the longest to come)."""
        try:
            for sizes, seed in self.cases_to_check():
                self.case(sizes, seed)
            self.sets_for_timing()
            self.warm_comparison()
        except Exception:  # noqa: BLE001 - see above
            pass
        if before_triton is not None:
            before_triton()
        if not self.settings.interpret:
            from .jit_warmup import warm_specializer, warm_triton

            warm_triton()
            if self.cases:
                warm_specializer(next(iter(self.cases.values()))[0].values())

    def warm_comparison(self) -> None:
        """The first comparison against a reference loads the torch kernels it uses (0.13-0.18 s of the first
        trial's check on the H200, ``benchmarks/first_trial_profile.py``): made here once per output, on the
        reference itself rounded to the output's dtype (a passing comparison takes every step a config's does)."""
        from .correctness import compare, tolerance_for

        tensors, ref64, lowp = self.case(self.spec.sizes, self.spec.seeds[0])
        rtol, atol = tolerance_for(self.spec.precision_dtype(), self.spec.tolerance)
        for name in self.runner.outputs:
            if name in ref64 and name in tensors:
                compare(name, ref64[name].to(tensors[name].dtype), ref64[name], rtol=rtol, atol=atol,
                        floor=lowp.get(name))
        self.sync()

    def cases_to_check(self) -> list[tuple[dict, int]]:
        """The (sizes, seed) cases a config is checked on: every seed at the problem's sizes, then the edge shapes."""
        cases = [(self.spec.sizes, s) for s in self.spec.seeds]
        return cases + [(sizes, self.spec.seeds[0]) for sizes in self.spec.edge_sizes]

    def sets_for_timing(self) -> list[dict]:
        """Input sets to rotate through while timing: several copies when they fit in L2."""
        if self.timing_sets is None:
            tensors, _, _ = self.case(self.spec.sizes, self.spec.seeds[0])
            sets = [tensors]
            size = sum(t.numel() * t.element_size() for t in tensors.values() if hasattr(t, "numel"))
            l2 = self.l2_bytes()
            if l2 and 0 < size <= l2:
                copies = min(8, max(2, -(-2 * l2 // size)))
                sets += [{k: v.clone() for k, v in tensors.items()} for _ in range(copies - 1)]
            self.timing_sets = sets
        return self.timing_sets

    def l2_bytes(self) -> int:
        """The GPU's L2 size: the device's own figure (torch), else the architecture profile's; 0 when interpreted."""
        if self.settings.interpret:
            return 0
        try:
            found = int(getattr(self.torch.cuda.get_device_properties(0), "L2_cache_size", 0) or 0)
        except Exception:  # noqa: BLE001 - an older torch: the profile's figure
            found = 0
        return found or int(self.settings.l2_bytes or 0)

    def evaluate(self, config: dict) -> dict:
        from .correctness import compare, tolerance_for
        from .feedback import classify_exception, summary
        from .launch import launch_facts, poison_outputs

        result: dict[str, Any] = {"status": "ok"}
        phase = "compile"
        began = time.perf_counter()
        seconds = result["phase_seconds"] = {}  # where a trial's time went: inputs, compile, check, time
        try:
            self.phase("compile")
            self.launchers = await_builds(self.launchers)
            tensors, _, _ = self.case(self.spec.sizes, self.spec.seeds[0])
            start = time.perf_counter()
            seconds["inputs"] = round(start - began, 3)
            compiled = None
            if not self.settings.interpret and not self.spec.harness:
                compiled = self.runner.launch(config, tensors, self.spec.sizes, warmup=True)
            result["compile_seconds"] = seconds["compile"] = round(time.perf_counter() - start, 3)
            phase = "check"
            self.phase("check")
            start = time.perf_counter()
            rtol, atol = tolerance_for(self.spec.precision_dtype(), self.spec.tolerance)
            checks = []
            for sizes, seed in self.cases_to_check():
                tensors, ref64, lowp = self.case(sizes, seed)
                poison_outputs(self.runner, tensors)
                launch_began = time.perf_counter()
                launched = self.runner.launch(config, tensors, sizes)
                compiled = compiled or launched
                self.sync()
                launch_s = round(time.perf_counter() - launch_began, 4)  # a JIT compile or a binary's load shows here
                for name in self.runner.outputs:
                    check = compare(name, tensors[name], ref64[name], rtol=rtol, atol=atol, floor=lowp.get(name))
                    check.update(seed=seed, sizes=dict(sizes), launch_s=launch_s)
                    checks.append(check)
                    if not check["ok"]:
                        result.update(status="wrong_result", error=check["message"], checks=checks)
                        return result
            result["checks"] = [{k: c.get(k) for k in ("output", "seed", "sizes", "max_abs_error", "rounding_floor",
                                                       "launch_s")} for c in checks]
            result["launch_facts"] = launch_facts(compiled)
            phase = "time"
            self.phase("time")
            seconds["check"] = round(time.perf_counter() - start, 3)
            start = time.perf_counter()
            result["timing"] = self._time(config).to_json()
            seconds["time"] = round(time.perf_counter() - start, 3)
        except BaseException as exc:  # noqa: BLE001 - classify, report, and let the driver decide
            failure = classify_exception(exc, phase)
            result.update(status=failure, phase=phase, error=summary(f"{type(exc).__name__}: {exc}"),
                          traceback=traceback.format_exc()[-3000:])
        return result

    def _time(self, config: dict) -> Any:
        from .timing import measure

        launches = [self.runner.prepare(config, tensors, self.spec.sizes) for tensors in self.sets_for_timing()]
        counter = [0]

        def run() -> None:  # arguments and grid bound once: the loop times the launch, not Python
            counter[0] += 1
            launches[counter[0] % len(launches)]()

        s = self.settings
        return measure(run, interpret=s.interpret, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms, max_error=s.max_error,
                       attempts=s.attempts, runs=s.interpret_runs, timer=s.timer)

    def time_config(self, config: dict) -> dict:
        try:
            self.launchers = await_builds(self.launchers)
            return {"status": "ok", "timing": self._time(config).to_json()}
        except BaseException as exc:  # noqa: BLE001
            from .feedback import classify_exception, summary

            return {"status": classify_exception(exc, "time"), "error": summary(f"{type(exc).__name__}: {exc}")}

    def time_baseline(self) -> dict:
        from .timing import measure

        try:
            tensors, _, _ = self.case(self.spec.sizes, self.spec.seeds[0])
            fn = self.runner.baseline(tensors, self.spec.sizes)
            s = self.settings
            timing = measure(fn, interpret=s.interpret, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms,
                             max_error=s.max_error, attempts=s.attempts, runs=s.interpret_runs, timer=s.timer)
            return {"status": "ok", "timing": timing.to_json()}
        except BaseException as exc:  # noqa: BLE001
            return {"status": "launch_error", "error": f"{type(exc).__name__}: {exc}"[:300]}


def take_early_messages(conn: Any) -> list[tuple]:
    """The messages already waiting when the worker is ready: the driver's Triton source hash is installed
    (:mod:`kernelrules.compile.triton_key`), the rest (a request sent meanwhile) kept, in order, for the loop."""
    kept = []
    while conn.poll(0):
        message = conn.recv()
        if message[0] == "triton_key":
            install_triton_key(message[1])
        else:
            kept.append(message)
    return kept


def worker_main(conn: Any, settings: WorkerSettings, steps: dict[str, float] | None = None) -> None:
    """Entry point of a benchmark worker process (``steps``: the start-up steps :func:`main` took already): start
    the problem's session, then serve requests; a ``load`` request starts another problem's session in the same
    process (torch, the GPU's context and Triton stay loaded: :func:`kernelrules.tune.driver.tune_many`). :func:`main`
    has made the process die with its parent already."""
    watch_parent(_exit_now, period=1.0)
    import warnings

    warnings.simplefilter("ignore")
    from .feedback import context_lost

    while True:
        session, early = _start_session(conn, settings, steps or {"entered": time.monotonic()})
        if session is None:
            return
        evaluated = 0
        while True:
            try:
                message = early.pop(0) if early else conn.recv()
            except (EOFError, OSError):
                return
            kind = message[0]
            if kind == "triton_key":  # late (the warm-up computed its own): the same value; nothing is answered
                install_triton_key(message[1])
                continue
            if kind == "stop":
                share_host_modules(settings, into_study=False)
                return
            if kind == "load":  # the next problem: its session replaces this one, its kernels loaded afresh
                share_host_modules(settings, into_study=False)
                from .launch import forget_loaded

                forget_loaded()
                settings, steps = message[1], None
                break
            if kind == "evaluate":
                answer = session.evaluate(message[1])
                evaluated += 1
            elif kind == "time":
                answer = session.time_config(message[1])
            elif kind == "baseline":
                answer = session.time_baseline()
            else:
                answer = {"status": "launch_error", "error": f"unknown request {kind!r}"}
            conn.send(("result", answer))
            if kind == "evaluate" and evaluated == 1:  # after answering: the launchers its first check built (the
                share_host_modules(settings, into_study=False)  # problem's sizes and edge shapes)
            if context_lost(answer.get("status", ""), answer.get("error", "")):
                os._exit(3)  # the CUDA context is unusable: the driver starts a fresh worker


def _start_session(conn: Any, settings: WorkerSettings, steps: dict[str, float]) -> tuple[_Session | None, list]:
    """Set the problem's environment, load the kernel and the problem, check the reference, say ``ready`` (or
    ``fatal``: then None), then warm up (:meth:`_Session.warm`) and say ``warmed``; the session, and the requests
    read during the warm-up, for the loop."""
    if settings.gpu is not None and not settings.interpret:
        try:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible_device(str(settings.gpu),
                                                                os.environ.get("CUDA_VISIBLE_DEVICES"))
        except ValueError as exc:
            conn.send(("fatal", str(exc), ""))
            return None, []
    if settings.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    if settings.triton_cache_dir:
        os.environ["TRITON_CACHE_DIR"] = settings.triton_cache_dir
    share_host_modules(settings, into_study=True)  # before Triton is imported: it finds them as its own
    os.environ.update(settings.env)
    try:
        session = _Session(settings, conn)
        if not settings.interpret:  # the kernel's launchers, built beside the rest of the start (no launch interpreted)
            session.launchers = start_launcher_builds(session.runner.kernel, settings.launcher_jobs)
        steps["torch_imported"] = time.monotonic()
        session.check_reference()
        steps["reference_checked"] = time.monotonic()
        edges = session.harness_edges()
        import torch
        import triton

        steps["ready"] = time.monotonic()

        device = "cpu (TRITON_INTERPRET=1)" if settings.interpret else torch.cuda.get_device_name(0)
        conn.send(("ready", {"pid": os.getpid(), "device": device, "torch": str(torch.__version__),  # a plain str: a
                             # TorchVersion would make the driver import torch (seconds) just to unpickle it
                             "triton": triton.__version__, "edge_signatures": edges, "steps": steps}))
    except BaseException as exc:  # noqa: BLE001 - the driver turns this into one clear error
        conn.send(("fatal", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-3000:]))
        return None, []
    early: list[tuple] = []  # messages read before the loop: a request sent while the worker warmed up
    # after "ready": a request sent meanwhile waits in the socket for what it would have done itself; the driver's
    # Triton source hash, if it came by then, is installed before the warm-up would compute its own
    session.warm(before_triton=lambda: early.extend(take_early_messages(conn)))
    conn.send(("warmed", time.monotonic()))
    share_host_modules(settings, into_study=False)  # the CUDA helper, built by warm()
    return session, early


def main(argv: list[str] | None = None) -> None:
    """``python -m kernelrules.tune.bench_process FD``: import torch, receive the settings on FD, then serve.

    torch comes first, before the settings: the driver may spawn the worker before it has loaded the problem
    (:meth:`~kernelrules.tune.worker.BenchWorker.spawn`), and torch's import (seconds with a CUDA build) is the
    longest step of the worker's start. It does not start CUDA (``CUDA_VISIBLE_DEVICES`` is still set from the
    settings before any CUDA call) and does not import Triton (torch 2.13's CPU build; Triton reads its cache and
    interpreter settings from the environment when it uses them in any case)."""
    import sys
    from multiprocessing.connection import Connection

    args = sys.argv[1:] if argv is None else argv
    conn = Connection(int(args[0]))
    steps = {"entered": time.monotonic()}
    die_with_parent()
    try:
        import torch  # noqa: F401
    except ImportError:
        pass  # reported as the problem's error once the settings say what runs
    steps["torch_loaded"] = time.monotonic()
    try:
        settings = conn.recv()
    except (EOFError, OSError):
        return  # the driver closed the connection before sending the settings: nothing to run
    steps["settings_received"] = time.monotonic()
    worker_main(conn, settings, steps)


if __name__ == "__main__":
    main()
