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
and a watchdog thread).
"""

from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any

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
        self.proc = subprocess.Popen([sys.executable, *isolate, "-m", "kernelrules.tune.bench_process", str(theirs.fileno())],
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
