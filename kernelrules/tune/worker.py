"""Benchmark workers: one process per GPU, restarted when a config kills it.

The driver talks to each worker over a socket pair (``python -m
kernelrules.tune.bench_process``, a fresh interpreter in its own session: nothing of the
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
and a watchdog thread). Starting, timing, killing and classifying the process is
:class:`kernelrules.compile.workers.SupervisedProcess`'s; this module keeps the protocol.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any

from ..compile.workers import Death, SupervisedProcess, WorkerLog
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
    max_error: float = 0.01
    timer: str = "held"
    attempts: int = 3
    interpret_runs: int = 3
    l2_bytes: int = 0
    env: dict[str, str] = field(default_factory=dict)
    #: For a harness problem with edge shapes (and a shared Triton cache): two configs of the space and the space's
    #: signature, with which the worker reads the edge shapes' launch signatures at start
    #: (:mod:`kernelrules.tune.harness_edges`) and reports them in its ``ready`` message.
    edge_probe_configs: list[dict] = field(default_factory=list)
    space_signature: dict = field(default_factory=dict)
    #: Where Triton's host modules (its CUDA helper and kernel launchers, built with the C compiler) are kept between
    #: runs (:mod:`kernelrules.tune.host_modules`); None: built afresh in each study's Triton cache.
    host_module_store: str | None = None
    #: Compile jobs of the space's signature and of its edge shapes' (one config each), whose launchers the worker
    #: builds as the problem starts (:func:`kernelrules.tune.jit_warmup.start_launcher_builds`); none: its first
    #: launches build them.
    launcher_jobs: list = field(default_factory=list)


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


class WorkerError(Exception):
    """A worker that cannot start (the kernel, the harness or the reference fails)."""


class BenchWorker:
    """One benchmark worker process and the request it is running.

    The worker is ``python -m kernelrules.tune.bench_process FD`` in its own session, talking
    over a socket pair wrapped in ``multiprocessing.connection.Connection``: no
    ``__main__`` guard is needed in the caller's script, and a kill takes the whole
    process group (compilers it started included).
    """

    def __init__(self, index: int, settings: WorkerSettings | None, *, compile_timeout: float,
                 bench_timeout: float) -> None:
        self.index = index
        #: None until :meth:`configure`: a worker spawned before the run knows its problem imports torch meanwhile.
        self.settings = settings
        self.compile_timeout = compile_timeout
        self.bench_timeout = bench_timeout
        self.process: SupervisedProcess | None = None
        self.conn: Any = None
        self.info: dict[str, Any] = {}
        self.request: Any = None
        self.tag: Any = None
        self.phase = ""
        self.restarts = 0
        #: When the first process's start-up steps ended (``time.monotonic()``, one clock for every process on the
        #: machine): spawned here, then the worker's own (``entered``, ``torch_loaded``, ``settings_received``,
        #: ``torch_imported``, ``reference_checked``, ``ready``) and ``warmed``, once its warm-up after ``ready`` is
        #: done. A restarted process adds nothing.
        self.steps: dict[str, float] = {}
        #: The driver's Triton source hash (:mod:`kernelrules.compile.triton_key`), once shared: sent to each process.
        self.shared_key: tuple[str, str] | None = None

    @property
    def label(self) -> str:
        gpu = self.settings.gpu if self.settings is not None else None
        return f"gpu {gpu}" if gpu is not None else f"worker {self.index}"

    @property
    def busy(self) -> bool:
        return self.request is not None

    def start(self) -> None:
        """Start the worker process (without waiting for it) and send it the settings."""
        self.spawn()
        self.configure()

    def spawn(self) -> None:
        """Start the worker process without waiting for it. It imports torch first (seconds with a CUDA build), then
        waits for its settings (:meth:`configure`): the driver can spawn it before it has loaded the problem."""
        import socket
        from multiprocessing.connection import Connection

        if self.process is not None:  # a restart: the previous worker's output is no longer read
            self.process.close()
        else:
            self.steps["spawned"] = time.monotonic()
        ours, theirs = socket.socketpair()
        # the worker gets this process's whole environment: its kernel, harness and reference may read any of it
        self.process = SupervisedProcess.start("kernelrules.tune.bench_process", [str(theirs.fileno())],
                                               env=os.environ, log=WorkerLog(), startup_timeout=STARTUP_TIMEOUT,
                                               pass_fds=[theirs.fileno()])
        theirs.close()
        self.conn = Connection(ours.detach())

    def configure(self, settings: WorkerSettings | None = None) -> None:
        """Send the spawned worker its settings (``settings``, kept for restarts, or those it has)."""
        if settings is not None:
            self.settings = settings
        try:
            self.conn.send(self.settings)
        except OSError:  # BrokenPipeError among them
            pass  # the worker died while it imported torch: wait_ready reports it
        if self.shared_key is not None:  # a restarted process: it takes the hash before its warm-up too
            self._send_key()

    def load(self, settings: WorkerSettings) -> None:
        """Give a worker that served another problem this one (``load``): the same process, its torch, GPU context and
        Triton kept, makes the new problem's session and says ``ready`` again (:meth:`wait_ready`), its start-up
        steps counted anew. A worker that is gone is started afresh with ``settings``."""
        self.settings, self.info, self.restarts = settings, {}, 0
        self.steps = {"spawned": time.monotonic()}
        if self.process is None or not self.process.alive():
            if self.process is not None:
                self.kill()
            self.start()
            return
        self.process.ready = False
        self.process.startup_deadline = time.monotonic() + STARTUP_TIMEOUT
        try:
            self.conn.send(("load", settings))
        except OSError:  # BrokenPipeError among them
            pass  # the worker died: wait_ready reports it

    def share_triton_key(self, shared: tuple[str, str] | None) -> None:
        """Hand the worker the driver's Triton source hash, once: a worker that finds it waiting when it is ready
        skips computing its own in its warm-up (0.33-0.38 s on the H200, the first trial waiting on it; it uses
        the hash only for the same Triton installation, so no cache key changes). Nothing is answered to it."""
        if shared is None or self.shared_key is not None:
            return
        self.shared_key = shared
        self._send_key()

    def _send_key(self) -> None:
        try:
            self.conn.send(("triton_key", self.shared_key))
        except OSError:  # BrokenPipeError among them
            pass  # the worker died: the next request finds out

    def log_tail(self) -> str:
        """The last lines the worker printed (for a start-up failure)."""
        return self.process.log_tail(2000) if self.process is not None else ""

    def wait_ready(self, timeout: float = STARTUP_TIMEOUT) -> dict[str, Any]:
        """Block until the worker is ready; raise WorkerError with its message if it cannot start."""
        if not self.conn.poll(timeout):
            self.kill()
            raise WorkerError(f"benchmark worker ({self.label}) did not start within {timeout:g} s")
        try:
            message = self.conn.recv()
            while message[0] in ("warmed", "phase") and self.conn.poll(timeout):  # left from a problem before (load)
                message = self.conn.recv()
        except (EOFError, OSError):
            code = self.process.death(wait=10).returncode if self.process is not None else None
            tail = self.log_tail().strip().splitlines()
            self.kill()
            raise WorkerError(f"benchmark worker ({self.label}) died while starting (exit code {code})"
                              + (f": {tail[-1]}" if tail else "")) from None
        if message[0] == "fatal":
            self.kill()
            raise WorkerError(f"the problem cannot run: {message[1]}")
        if message[0] != "ready":
            self.kill()
            raise WorkerError(f"benchmark worker ({self.label}) did not start within {timeout:g} s")
        self.info = message[1]
        steps = self.info.pop("steps", None) or {}
        if not self.restarts:
            self.steps.update(steps)
        if self.process is not None:
            self.process.ready = True
        return self.info

    def send(self, request: tuple, tag: Any) -> None:
        """Send ``request`` (answered with ``tag``) and start the clock of its first phase."""
        self.request, self.tag = request, tag
        self._enter_phase("compile" if request[0] == "evaluate" else "time")
        try:
            self.conn.send(request)
        except OSError:  # BrokenPipeError among them
            pass  # the worker died: handle() sees end of file

    def _enter_phase(self, phase: str) -> None:
        """The running request is now in ``phase``: it gets that phase's time limit from now."""
        self.phase = phase
        if self.process is not None:
            self.process.arm(self._limit())

    def _limit(self) -> float:
        """The time limit of the current phase: compiles get their own, everything else the benchmark's."""
        return self.compile_timeout if self.phase == "compile" else self.bench_timeout

    def handle(self) -> tuple[Any, dict] | None:
        """Read one message; return (tag, result) when the request finished (or the worker died)."""
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            return self._died()
        if message[0] == "phase":
            self._enter_phase(message[1])
            return None
        if message[0] == "warmed":
            if not self.restarts:
                self.steps.setdefault("warmed", message[1])
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
        if not self.busy or self.process is None or not self.process.past_deadline():
            return None
        status = "compile_timeout" if self.phase == "compile" else "timeout"
        limit = self._limit()
        self.restart()
        return self._finish({"status": status, "phase": self.phase,
                             "error": f"no answer within {limit:g} s in the {self.phase} phase; worker killed"})

    def _died(self) -> tuple[Any, dict] | None:
        """The worker closed its end: classify its death (a signal, an exit code) and start a fresh one."""
        death = self.process.death(wait=5) if self.process is not None else Death(None)
        phase = self.phase
        self.restart()
        if not self.request:
            return None
        if death.signal is not None:
            status = "illegal_address" if death.memory_fault else "crash"
            error = f"the worker died of {death.signal_name} in the {phase} phase"
        else:
            status, error = "crash", f"the worker exited (code {death.returncode}) in the {phase} phase"
        return self._finish({"status": status, "phase": phase, "error": error})

    def _finish(self, result: dict) -> tuple[Any, dict]:
        tag = self.tag
        self.request, self.tag, self.phase = None, None, ""
        return tag, result

    def restart(self) -> None:
        """Kill the worker and start a fresh one (:meth:`ensure_ready` waits for it)."""
        self.kill()
        self.restarts += 1
        self.start()

    def ensure_ready(self) -> None:
        """After a restart, wait until the fresh worker is ready (it has no request yet)."""
        if self.process is not None and not self.process.ready:
            self.wait_ready()

    def kill(self) -> None:
        """Kill the worker's process group and close the connection."""
        if self.process is not None:
            self.process.kill()
        if self.conn is not None:
            try:
                self.conn.close()
            except OSError:
                pass

    def stop(self) -> None:
        """Ask an idle worker to stop (killing it if it does not), then close its log."""
        if self.conn is not None and self.process is not None and self.process.alive() and not self.busy:
            try:
                self.conn.send(("stop",))
                self.process.proc.wait(timeout=5)
            except Exception:  # noqa: BLE001 - killed below
                pass
        self.kill()
        if self.process is not None:
            self.process.log.close()
