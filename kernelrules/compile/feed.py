"""Jobs handed to a running :class:`kernelrules.compile.pool.CompilePool` from another thread.

``pool.run(jobs)`` compiles a list it knows up front and yields each answer as its compile
ends. ``kernelrules tune`` asks for its candidates one at a time while earlier compiles
still run; with a list per call, each new batch would wait for the slowest compile of the
previous one while the other workers sit idle. A :class:`JobFeed` is the open-ended
alternative: ``pool.run(feed)`` takes jobs as :meth:`JobFeed.put` hands them over, starts
them on idle workers at once, and yields answers until the feed is closed and every job
taken is answered (or at once when it is closed with ``abandon``).

A :class:`Signal` is a pipe a thread can select on: :meth:`Signal.set` from any thread
wakes a ``select`` (the pool's) or :func:`multiprocessing.connection.wait` (the tune
loop's) waiting on its :meth:`Signal.fileno`.
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any


class Signal:
    """A wake-up a ``select`` can wait on, set from any thread."""

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._read, False)
        os.set_blocking(self._write, False)

    def fileno(self) -> int:
        return self._read

    def set(self) -> None:
        """Make the read end readable (a full pipe is readable already)."""
        try:
            os.write(self._write, b"!")
        except (BlockingIOError, OSError):
            pass

    def clear(self) -> None:
        """Read everything set so far, so the next ``select`` waits again."""
        try:
            while os.read(self._read, 4096):
                pass
        except (BlockingIOError, OSError):
            pass

    def close(self) -> None:
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass


class JobFeed:
    """A thread-safe queue of compile jobs for one ``CompilePool.run`` (see the module docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: collections.deque[Any] = collections.deque()
        self._closed = False
        self._abandoned = False
        self.signal = Signal()

    def put(self, job: Any) -> None:
        """Hand one job to the pool (ignored once the feed is closed)."""
        with self._lock:
            if self._closed:
                return
            self._jobs.append(job)
        self.signal.set()

    def take(self) -> list[Any]:
        """The jobs put since the last call, in order (the pool's side)."""
        self.signal.clear()
        with self._lock:
            jobs = list(self._jobs)
            self._jobs.clear()
        return jobs

    def close(self, *, abandon: bool = False) -> None:
        """No more jobs: the run ends once those taken are answered; with ``abandon``, at once."""
        with self._lock:
            self._closed = True
            self._abandoned = self._abandoned or abandon
            if abandon:
                self._jobs.clear()
        self.signal.set()

    @property
    def open(self) -> bool:
        """Whether more jobs may come (or wait to be taken)."""
        with self._lock:
            return not self._closed or bool(self._jobs)

    @property
    def abandoned(self) -> bool:
        with self._lock:
            return self._abandoned
