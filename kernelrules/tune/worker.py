"""Benchmark workers: one process per GPU, restarted when a config kills it.

The driver talks to each worker over a socket pair (``python -m
kernelrules.tune.worker``, a fresh interpreter in its own session: nothing of the
driver's state, and no CUDA context, is inherited). A worker sets
``CUDA_VISIBLE_DEVICES`` (its GPU), ``TRITON_INTERPRET=1`` under ``--interpret`` and
the shared Triton cache *before* importing torch or Triton, loads the kernel and the
problem, checks that the reference runs, and answers requests:

* ``("evaluate", config)``: compile (``kernel.warmup``), check against the float64
  reference on every seed and edge shape, then time; answers a result dict;
* ``("time", config)`` and ``("baseline",)``: one timing (the final interleaved rounds);

It reports its phase (``compile``, ``check``, ``time``) as it goes, so the driver can
tell a compile time-out from a hang. A config that hangs is killed at its deadline; an
illegal address (the CUDA context is lost) makes the worker answer and exit; a
segfault kills it. In every case the driver records the config as failed with its
class and starts a fresh worker. Workers die with the driver (``PR_SET_PDEATHSIG``
and a watchdog thread).
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Mapping

from .problem import ProblemSpec

STARTUP_TIMEOUT = 300.0


@dataclass
class WorkerSettings:
    """What a worker needs; picklable."""

    spec: ProblemSpec
    gpu: str | None = None
    interpret: bool = False
    triton_cache_dir: str | None = None
    warmup_ms: float = 25.0
    rep_ms: float = 100.0
    max_spread: float = 0.05
    attempts: int = 3
    interpret_runs: int = 3
    l2_bytes: int = 0
    env: dict[str, str] = field(default_factory=dict)


# --------------------------------------------------------------------------- worker side


def _die_with_parent() -> None:
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux: the watchdog below still works
        pass
    parent = os.getppid()

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


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
        torch = self.torch
        config = ", ".join(f"{k}={v}" for k, v in self.spec.reference_config.items())
        cases = [(self.spec.sizes, s) for s in self.spec.seeds] + [(e, self.spec.seeds[0]) for e in self.spec.edge_sizes]
        for sizes, seed in cases:
            _tensors, ref, _ = self.case(sizes, seed)
            for name in self.runner.outputs:
                value = ref[name]
                if value.dtype.is_floating_point:
                    bad = ~torch.isfinite(value)
                elif value.dtype == torch.bool:
                    continue
                else:
                    bad = value == torch.iinfo(value.dtype).min
                count = int(bad.sum())
                if count:
                    where = ", ".join(f"{k}={v}" for k, v in sizes.items())
                    raise ValueError(f"the reference config ({config}) leaves {count} of {value.numel()} elements of "
                                     f"{name} unwritten or not finite at {where} (outputs are poisoned first; NaN "
                                     f"from the inputs? try init: rand): pick another reference config")

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
        from .launch import poison_outputs

        result: dict[str, Any] = {"status": "ok"}
        phase = "compile"
        try:
            self.phase("compile")
            tensors, _, _ = self.case(self.spec.sizes, self.spec.seeds[0])
            start = time.perf_counter()
            compiled = None
            if not self.settings.interpret and not self.spec.harness:
                compiled = self.runner.launch(config, tensors, self.spec.sizes, warmup=True)
            result["compile_seconds"] = round(time.perf_counter() - start, 3)
            phase = "check"
            self.phase("check")
            rtol, atol = tolerance_for(self.spec.precision_dtype(), self.spec.tolerance)
            checks = []
            cases = [(self.spec.sizes, s) for s in self.spec.seeds]
            cases += [(sizes, self.spec.seeds[0]) for sizes in self.spec.edge_sizes]
            for sizes, seed in cases:
                tensors, ref64, lowp = self.case(sizes, seed)
                poison_outputs(self.runner, tensors)
                launched = self.runner.launch(config, tensors, sizes)
                compiled = compiled or launched
                self.sync()
                for name in self.runner.outputs:
                    check = compare(name, tensors[name], ref64[name], rtol=rtol, atol=atol, floor=lowp.get(name))
                    check.update(seed=seed, sizes=dict(sizes))
                    checks.append(check)
                    if not check["ok"]:
                        result.update(status="wrong_result", error=check["message"], checks=checks)
                        return result
            result["checks"] = [{k: c.get(k) for k in ("output", "seed", "sizes", "max_abs_error", "rounding_floor")}
                                for c in checks]
            result["launch_facts"] = _launch_facts(compiled)
            phase = "time"
            self.phase("time")
            result["timing"] = self._time(config).to_json()
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
        return measure(run, interpret=s.interpret, warmup_ms=s.warmup_ms, rep_ms=s.rep_ms, max_spread=s.max_spread,
                       attempts=s.attempts, runs=s.interpret_runs)

    def time_config(self, config: dict) -> dict:
        try:
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
                             max_spread=s.max_spread, attempts=s.attempts, runs=s.interpret_runs)
            return {"status": "ok", "timing": timing.to_json()}
        except BaseException as exc:  # noqa: BLE001
            return {"status": "launch_error", "error": f"{type(exc).__name__}: {exc}"[:300]}


def _launch_facts(compiled: Any) -> dict[str, Any]:
    """Registers, spills and shared memory of the kernel the launch used (GPU only)."""
    if compiled is None:
        return {}
    facts = {}
    for key, attr in (("registers", "n_regs"), ("spills", "n_spills")):
        value = getattr(compiled, attr, None)
        if isinstance(value, int):
            facts[key] = value
    shared = getattr(getattr(compiled, "metadata", None), "shared", None)
    if isinstance(shared, int):
        facts["shared_bytes"] = shared
    return facts


def visible_device(gpu: str, inherited: str | None) -> str:
    """What the worker of ``--gpus`` entry ``gpu`` sets ``CUDA_VISIBLE_DEVICES`` to.

    An index is read, as torch reads ``cuda:N``, into the ``CUDA_VISIBLE_DEVICES`` the
    driver was started with (``CUDA_VISIBLE_DEVICES=2,3 ... --gpus 1`` is physical GPU 3), so
    a worker never leaves the GPUs the driver was given; a UUID, or an index without such
    a list, is used as it is.
    """
    visible = [d.strip() for d in (inherited or "").split(",") if d.strip()]
    if visible and gpu.isdigit():
        if int(gpu) >= len(visible):
            raise ValueError(f"--gpus {gpu}: CUDA_VISIBLE_DEVICES={inherited} makes only {len(visible)} GPU(s) visible")
        return visible[int(gpu)]
    return gpu


def worker_main(conn: Any, settings: WorkerSettings) -> None:
    """Entry point of a benchmark worker process."""
    _die_with_parent()
    if settings.gpu is not None and not settings.interpret:
        try:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible_device(str(settings.gpu),
                                                                os.environ.get("CUDA_VISIBLE_DEVICES"))
        except ValueError as exc:
            conn.send(("fatal", str(exc), ""))
            return
    if settings.interpret:
        os.environ["TRITON_INTERPRET"] = "1"
    if settings.triton_cache_dir:
        os.environ["TRITON_CACHE_DIR"] = settings.triton_cache_dir
    os.environ.update(settings.env)
    import warnings

    warnings.simplefilter("ignore")
    try:
        session = _Session(settings, conn)
        session.check_reference()
        import torch
        import triton

        device = "cpu (TRITON_INTERPRET=1)" if settings.interpret else torch.cuda.get_device_name(0)
        conn.send(("ready", {"pid": os.getpid(), "device": device, "torch": torch.__version__,
                             "triton": triton.__version__}))
    except BaseException as exc:  # noqa: BLE001 - the driver turns this into one clear error
        conn.send(("fatal", f"{type(exc).__name__}: {exc}", traceback.format_exc()[-3000:]))
        return
    from .feedback import context_lost

    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):
            return
        kind = message[0]
        if kind == "stop":
            return
        if kind == "evaluate":
            answer = session.evaluate(message[1])
        elif kind == "time":
            answer = session.time_config(message[1])
        elif kind == "baseline":
            answer = session.time_baseline()
        else:
            answer = {"status": "launch_error", "error": f"unknown request {kind!r}"}
        conn.send(("result", answer))
        if context_lost(answer.get("status", ""), answer.get("error", "")):
            os._exit(3)  # the CUDA context is unusable: the driver starts a fresh worker


# --------------------------------------------------------------------------- driver side


class WorkerError(Exception):
    """A worker that cannot start (the kernel, the harness or the reference fails)."""


class BenchWorker:
    """One benchmark worker process and the request it is running.

    The worker is ``python -m kernelrules.tune.worker FD`` in its own session, talking
    over a socket pair wrapped in ``multiprocessing.connection.Connection``: no
    ``__main__`` guard is needed in the caller's script, and a kill takes the whole
    process group (compilers it started included).
    """

    def __init__(self, index: int, settings: WorkerSettings, *, compile_timeout: float, bench_timeout: float) -> None:
        self.index = index
        self.settings = settings
        self.compile_timeout = compile_timeout
        self.bench_timeout = bench_timeout
        self.proc: Any = None
        self.conn: Any = None
        self.info: dict[str, Any] = {}
        self.request: Any = None
        self.tag: Any = None
        self.phase = ""
        self.deadline = 0.0
        self.restarts = 0
        self._restarting = False
        self._log: Any = None

    @property
    def label(self) -> str:
        return f"gpu {self.settings.gpu}" if self.settings.gpu is not None else f"worker {self.index}"

    @property
    def busy(self) -> bool:
        return self.request is not None

    def start(self) -> None:
        import socket
        import subprocess
        import sys
        import tempfile
        from multiprocessing.connection import Connection

        if self._log is not None:  # a restart: the previous worker's output is no longer read
            self._log.close()

        ours, theirs = socket.socketpair()
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        python_path = os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)
        env = dict(os.environ, PYTHONPATH=python_path, PYTHONUNBUFFERED="1")
        self._log = tempfile.TemporaryFile()
        # -P (3.11+): not the working directory first on sys.path, so the worker imports the kernelrules the
        # driver runs (package_root, on PYTHONPATH) even when started from a checkout's root
        isolate = ["-P"] if sys.version_info >= (3, 11) else []
        self.proc = subprocess.Popen([sys.executable, *isolate, "-m", "kernelrules.tune.worker", str(theirs.fileno())],
                                     pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True, env=env, close_fds=True)
        theirs.close()
        self.conn = Connection(ours.detach())
        self.conn.send(self.settings)

    def log_tail(self) -> str:
        """The last lines the worker printed (for a start-up failure)."""
        if self._log is None:
            return ""
        try:
            self._log.seek(0)
            return self._log.read()[-2000:].decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> dict[str, Any]:
        """Block until the worker is ready; raise WorkerError with its message if it cannot start."""
        if not self.conn.poll(timeout):
            self.kill()
            raise WorkerError(f"benchmark worker ({self.label}) did not start within {timeout:g} s")
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            code = self.proc.wait(timeout=10) if self.proc is not None else None
            tail = self.log_tail().strip().splitlines()
            self.kill()
            raise WorkerError(f"benchmark worker ({self.label}) died while starting (exit code {code})"
                              + (f": {tail[-1]}" if tail else "")) from None
        if message[0] == "fatal":
            self.kill()
            raise WorkerError(f"the problem cannot run: {message[1]}")
        self.info = message[1]
        return self.info

    def send(self, request: tuple, tag: Any) -> None:
        self.request, self.tag = request, tag
        self.phase = "compile" if request[0] == "evaluate" else "time"
        self.deadline = time.monotonic() + (self.compile_timeout if self.phase == "compile" else self.bench_timeout)
        try:
            self.conn.send(request)
        except (OSError, BrokenPipeError):
            pass  # the worker died: handle() sees end of file

    def handle(self) -> tuple[Any, dict] | None:
        """Read one message; return (tag, result) when the request finished (or the worker died)."""
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            return self._died()
        if message[0] == "phase":
            self.phase = message[1]
            limit = self.compile_timeout if self.phase == "compile" else self.bench_timeout
            self.deadline = time.monotonic() + limit
            return None
        if message[0] == "result":
            result = message[1]
            done = self._finish(result)
            from .feedback import context_lost

            if context_lost(result.get("status", ""), result.get("error") or ""):
                # the worker answers, then exits (its CUDA context is unusable): start a fresh one now, or
                # the next request goes to the dying process and an innocent config is recorded as a crash
                self.restart()
            return done
        return None

    def expire(self) -> tuple[Any, dict] | None:
        """Kill a request past its deadline: a compile time-out or a hang."""
        if not self.busy or time.monotonic() < self.deadline:
            return None
        status = "compile_timeout" if self.phase == "compile" else "timeout"
        limit = self.compile_timeout if self.phase == "compile" else self.bench_timeout
        self.restart()
        return self._finish({"status": status, "phase": self.phase,
                             "error": f"no answer within {limit:g} s in the {self.phase} phase; worker killed"})

    def _died(self) -> tuple[Any, dict] | None:
        code = None
        if self.proc is not None:
            try:
                code = self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - still alive after closing its end: killed below
                code = None
        phase = self.phase
        self.restart()
        if not self.request:
            return None
        if code is not None and code < 0:
            sig = -code
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            status = "illegal_address" if sig in (signal.SIGSEGV, signal.SIGBUS) else "crash"
            error = f"the worker died of {name} in the {phase} phase"
        else:
            status, error = "crash", f"the worker exited (code {code}) in the {phase} phase"
        return self._finish({"status": status, "phase": phase, "error": error})

    def _finish(self, result: dict) -> tuple[Any, dict]:
        tag = self.tag
        self.request, self.tag, self.phase = None, None, ""
        return tag, result

    def restart(self) -> None:
        self.kill()
        self.restarts += 1
        self.start()
        self._restarting = True

    def ensure_ready(self) -> None:
        """After a restart, wait until the fresh worker is ready (it has no request yet)."""
        if getattr(self, "_restarting", False):
            self._restarting = False
            self.wait_ready()

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except Exception:  # noqa: BLE001 - SIGKILL does not fail
                pass
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass

    def stop(self) -> None:
        if self.conn is not None and self.proc is not None and self.proc.poll() is None and not self.busy:
            try:
                self.conn.send(("stop",))
                self.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - killed below
                pass
        self.kill()
        if self._log is not None:
            self._log.close()
            self._log = None


def main(argv: list[str] | None = None) -> None:
    """``python -m kernelrules.tune.worker FD``: receive the settings on FD, then serve."""
    import sys
    from multiprocessing.connection import Connection

    args = sys.argv[1:] if argv is None else argv
    conn = Connection(int(args[0]))
    settings = conn.recv()
    worker_main(conn, settings)


if __name__ == "__main__":
    main()
