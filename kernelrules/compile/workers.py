"""Supervised worker processes: what the compile pool and the benchmark workers share.

Compiles (:mod:`kernelrules.compile.pool`) and benchmarks (:mod:`kernelrules.tune.worker`) run work
that may hang, crash or print anything, so each runs in a worker process that this
module supervises; the two keep only their protocols (framed pickles over pipes, a
``multiprocessing`` connection over a socket pair):

* **spawn**: ``python -P -m MODULE ARGS`` in a **new session** (its own process group, so a
  kill takes the compilers it started too), with the package this process runs first on
  ``PYTHONPATH`` and without the working directory on ``sys.path`` (``-P``), so a source
  checkout in the user's directory cannot shadow it; output unbuffered, into a
  :class:`WorkerLog`;
* **handshake**: a worker is :attr:`~SupervisedProcess.ready` once its protocol says so;
  until then its start-up deadline runs;
* **deadline**: a request past its :attr:`~SupervisedProcess.deadline` gets the whole
  process group SIGKILLed (:meth:`~SupervisedProcess.kill`), and the owner starts a fresh
  worker;
* **death**: :meth:`~SupervisedProcess.death` classifies how a worker ended (a signal, or
  an exit code);
* **parent death**, in the worker: :func:`watch_parent` and :func:`die_with_parent`, so a
  killed ``kernelrules`` never leaves workers running.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from typing import IO, Callable, Mapping, Sequence


def package_root() -> str:
    """The folder that holds the ``kernelrules`` package this process runs (first on a worker's ``PYTHONPATH``)."""
    package = sys.modules[__name__.split(".")[0]]
    return os.path.dirname(os.path.dirname(os.path.abspath(package.__file__ or __file__)))


class WorkerLog:
    """The file a worker's output goes to, and its tail (for a worker that fails to start or dies).

    ``path`` names the file (kept beside the worker's other files); without it the log is
    an anonymous temporary file.
    """

    def __init__(self, path: str | None = None) -> None:
        self.file: IO[bytes] = open(path, "w+b") if path is not None else tempfile.TemporaryFile()  # noqa: SIM115

    def tail(self, limit: int) -> str:
        """The last ``limit`` bytes written, decoded; empty when the log cannot be read.

        Read at an offset (``pread``): the file position is shared with the worker, which may still write.
        """
        try:
            fd = self.file.fileno()
            size = os.fstat(fd).st_size
            return os.pread(fd, limit, max(0, size - limit)).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""

    def close(self) -> None:
        """Close the parent's handle (the worker keeps its own until it exits)."""
        self.file.close()


@dataclass(frozen=True)
class Death:
    """How a worker process ended: its return code, None when it was still running when asked."""

    returncode: int | None

    @property
    def signal(self) -> int | None:
        """The signal that killed it, or None when it exited (or its end is unknown)."""
        return -self.returncode if self.returncode is not None and self.returncode < 0 else None

    @property
    def signal_name(self) -> str:
        """The signal's name (``SIGSEGV``), or its number when it has none; empty when it exited."""
        number = self.signal
        if number is None:
            return ""
        try:
            return signal.Signals(number).name
        except ValueError:  # a real-time signal, say
            return str(number)

    @property
    def memory_fault(self) -> bool:
        """Whether it died of a bad memory access (SIGSEGV or SIGBUS)."""
        return self.signal in (signal.SIGSEGV, signal.SIGBUS)


class SupervisedProcess:
    """One worker process: started in its own session, with its log, ready flag and request deadline.

    Start one with :meth:`start`. ``deadline`` (monotonic seconds) is that of the request
    it runs (:meth:`arm`); ``startup_deadline`` is when a worker that never became
    ready is given up.
    """

    def __init__(self, proc: subprocess.Popen, log: WorkerLog, startup_timeout: float) -> None:
        self.proc = proc
        self.log = log
        self.started = time.monotonic()
        self.startup_deadline = self.started + startup_timeout
        self.ready = False
        self.deadline = 0.0
        self._killed = False

    @classmethod
    def start(cls, module: str, args: Sequence[str] = (), *, env: Mapping[str, str], log: WorkerLog,
              startup_timeout: float, stdin: int | None = subprocess.DEVNULL, stdout: int | None = None,
              pass_fds: Sequence[int] = (), cwd: str | None = None) -> "SupervisedProcess":
        """``python -P -m module args`` in a new session with ``env`` (plus this package first on its path).

        Its stderr goes to ``log``, and its stdout too unless ``stdout`` is given (``PIPE``:
        a protocol on stdout). ``pass_fds`` are inherited; nothing else is.
        """
        python_path = os.pathsep.join(p for p in (package_root(), os.environ.get("PYTHONPATH")) if p)
        isolate = ["-P"] if sys.version_info >= (3, 11) else []  # 3.10 has no -P: the caller's cwd decides
        proc = subprocess.Popen(
            [sys.executable, *isolate, "-m", module, *args],
            stdin=stdin, stdout=log.file if stdout is None else stdout, stderr=log.file,
            env={**env, "PYTHONPATH": python_path, "PYTHONUNBUFFERED": "1"},
            pass_fds=tuple(pass_fds), start_new_session=True, close_fds=True, cwd=cwd,
        )
        return cls(proc, log, startup_timeout)

    @property
    def pid(self) -> int:
        """The worker's process id, which is also its process group's."""
        return self.proc.pid

    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self.proc.poll() is None

    def arm(self, seconds: float, now: float | None = None) -> float:
        """Give the running request ``seconds`` from ``now`` (default: this moment); return the deadline."""
        self.deadline = (time.monotonic() if now is None else now) + seconds
        return self.deadline

    def past_deadline(self, now: float | None = None) -> bool:
        """Whether the running request's deadline has passed."""
        return (time.monotonic() if now is None else now) >= self.deadline

    def startup_expired(self, now: float | None = None) -> bool:
        """Whether the worker is not ready and its start-up time is over."""
        return not self.ready and (time.monotonic() if now is None else now) >= self.startup_deadline

    def death(self, wait: float = 0.0) -> Death:
        """How the worker ended, waiting up to ``wait`` seconds for it to end."""
        try:
            return Death(self.proc.wait(timeout=wait) if wait else self.proc.poll())
        except subprocess.TimeoutExpired:
            return Death(None)

    def send_kill(self) -> None:
        """SIGKILL the worker's process group without waiting for it (once): a pool stopping many
        workers signals them all first, then reaps each, so their exits overlap."""
        if not self._killed:
            self._killed = True
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            except PermissionError:  # not our group any more (the worker left it): the worker alone
                if self.proc.poll() is None:
                    self.proc.kill()

    def kill(self) -> None:
        """SIGKILL the worker's whole process group (compilers it started included), reap it, close its pipes.

        The group is killed even when the worker itself has exited: children it left keep the
        group (and so its id) alive. Only the first call kills; later ones only reap.
        """
        self.send_kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not fail
            pass
        self.release_pipes()

    def release_pipes(self) -> None:
        """Close this process's ends of the worker's stdin and stdout pipes, if it has any."""
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    def close(self) -> None:
        """Kill the worker (see :meth:`kill`) and close its log."""
        self.kill()
        self.log.close()

    def log_tail(self, limit: int) -> str:
        """The last ``limit`` bytes the worker wrote to its log."""
        return self.log.tail(limit)


# --------------------------------------------------------------------------- in the worker


def watch_parent(on_gone: Callable[[], None], period: float) -> None:
    """In a worker: call ``on_gone`` (from a daemon thread) once the process that started it is gone.

    The worker is then re-parented, so its parent id changes; checked every ``period`` seconds.
    Closed pipes alone do not stop a worker busy in a long compile or a hung kernel.
    """
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(period)
        on_gone()

    threading.Thread(target=watch, name="kernelrules-parent-watch", daemon=True).start()


def die_with_parent() -> None:
    """In a worker: ask Linux to SIGKILL this process when its parent dies (``PR_SET_PDEATHSIG``).

    Elsewhere this does nothing; :func:`watch_parent` still works there.
    """
    try:
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1: PR_SET_PDEATHSIG
    except Exception:  # noqa: BLE001 - not Linux
        pass
