"""Triton's source hash, computed once in the parent process and handed to the compile workers.

Every Triton cache key starts with ``triton.runtime.cache.triton_key()``: a SHA-256 of
Triton's Python sources and of ``libtriton.so`` (over 400 MB in Triton 3.6), computed once
per process on its first compile. Each compile worker would pay it at its first job (about
0.8 s of CPU on the 2-core machine, and 16 workers at once on a 16-core one contend for the
same cores). The parent of a pool that has Triton imported already (a tuner: its JIT needs
the key anyway, so nothing is computed twice) computes it in a background thread while
the workers start, and sends it with each worker's jobs; a pool whose process has not imported Triton (``tune``'s
driver) asks its first worker to compute it once ready, while it waits for its first job, and report it
(:data:`REPORT_ENV`), then sends that with the jobs and hands it to whoever asked (the benchmark workers); a worker uses it only when its own
Triton is the same installation (the same ``triton/__init__.py``), so a cache key never
changes: it is the very value the worker would compute.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

#: What a pool sends: (the parent's ``triton/__init__.py``, the key), or None while unknown.
SharedKey = tuple[str, str]


class ParentTritonKey:
    """Computes the key in a daemon thread when Triton is imported in this process already."""

    def __init__(self) -> None:
        self._value: SharedKey | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin computing, once, if this process has imported Triton (never imports it for this) and no worker
        has reported the key already (:meth:`adopt`: a pool that restarts a worker later has it)."""
        if self._thread is not None or self._value is not None or "triton" not in sys.modules:
            return
        self._thread = threading.Thread(target=self._compute, name="kernelrules-triton-key", daemon=True)
        self._thread.start()

    def _compute(self) -> None:
        try:
            import triton
            from triton.runtime import cache

            self._value = (os.path.abspath(triton.__file__), cache.triton_key())
        except Exception:  # noqa: BLE001 - no shared key: each worker computes its own
            self._value = None

    @property
    def started(self) -> bool:
        """Whether this process computes the key itself (its thread was started)."""
        return self._thread is not None

    @property
    def value(self) -> SharedKey | None:
        """The key once computed (never waits), else None."""
        return self._value

    def adopt(self, shared: Any) -> bool:
        """Take a key a worker reported (:func:`own_key`) when none is known yet; True if taken."""
        if self._value is not None or not (isinstance(shared, tuple) and len(shared) == 2
                                           and all(isinstance(part, str) for part in shared)):
            return False
        self._value = shared  # type: ignore[assignment]
        return True


#: The environment variable that asks a new compile worker to compute the key once it is ready and report it.
REPORT_ENV = "KERNELRULES_REPORT_TRITON_KEY"


def own_key() -> SharedKey | None:
    """This process's Triton installation and its key (a compile worker's report, computed in the worker while it
    waits for its first job: the parent then needs no thread for it); None if it cannot be computed."""
    try:
        import triton
        from triton.runtime import cache

        return os.path.abspath(triton.__file__), cache.triton_key()
    except Exception:  # noqa: BLE001 - nothing to report: each process computes its own
        return None


def install(shared: Any) -> bool:
    """In a worker: use the parent's key if it is for this worker's own Triton; True if in use."""
    try:
        import triton
        from triton.runtime import cache

        path, key = shared
    except Exception:  # noqa: BLE001 - nothing usable sent: the worker computes its own
        return False
    if os.path.abspath(triton.__file__) != path or not isinstance(key, str):
        return False
    if getattr(cache.triton_key, "kernelrules_shared", None) == key:
        return True

    def triton_key() -> str:
        return key

    triton_key.kernelrules_shared = key  # type: ignore[attr-defined]
    cache.triton_key = triton_key  # get_cache_key looks the name up in its module at every call
    return True
