"""What module-level code reads of the platform, as it is on the GPU kernelrules lints for.

Packages choose at import time which code their kernels get from the platform they run on:
``torch.version.hip`` (None on a CUDA build of PyTorch), or Triton's
``triton.runtime.driver.active.get_current_target().backend`` (``"cuda"`` on an NVIDIA GPU).
kernelrules runs neither the package nor torch and has no GPU, but it knows the GPU it lints
for: when every target architecture of a lint is NVIDIA, these reads have the values they have
on any NVIDIA machine (:data:`FACTS`), and the values computed from them are decided
(:mod:`kernelrules.discover.pkgcompute`). The lint sets :data:`TARGET_ENV` for the run and its
compile workers (:func:`targeting`), so the walk over the package and the rebuilt module in a
worker see the same values. Without it (an AMD target, a mix of vendors, or a caller that does
not say) no fact is assumed and such names stay unresolved, as before.
"""

from __future__ import annotations

import contextlib
import os
from typing import Any, Iterable, Iterator

#: Set (by ``lint``) to the Triton backend every target of the run has, when they share one.
TARGET_ENV = "KERNELRULES_TARGET_BACKEND"

#: Per backend: what a module-level read gives on any GPU of it, by the read's canonical text (the
#: module written out in full, ``torch.version.hip`` however ``torch`` was imported).
FACTS: dict[str, dict[str, Any]] = {
    "cuda": {
        "torch.version.hip": None,
        "triton.runtime.driver.active.get_current_target().backend": "cuda",
    },
}

#: What each backend's facts assume, for the note on a kernel that used them.
TARGET_WORDS = {"cuda": "an NVIDIA GPU"}

#: What :func:`fact` returns for a read no fact covers.
NO_FACT = object()


@contextlib.contextmanager
def targeting(backends: Iterable[str]) -> Iterator[None]:
    """Assume the facts of the one backend all ``backends`` share (none when they differ) for the
    duration; the environment is restored after."""
    wanted = set(backends)
    backend = next(iter(wanted)) if len(wanted) == 1 and next(iter(wanted)) in FACTS else None
    before = os.environ.get(TARGET_ENV)
    if backend is None:
        os.environ.pop(TARGET_ENV, None)
    else:
        os.environ[TARGET_ENV] = backend
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TARGET_ENV, None)
        else:
            os.environ[TARGET_ENV] = before


def target_backend() -> str | None:
    """The backend whose facts are assumed now, or None (also part of the caches' keys)."""
    backend = os.environ.get(TARGET_ENV)
    return backend if backend in FACTS else None


def fact(text: str) -> Any:
    """The value of the read ``text`` (canonical form, see :data:`FACTS`) on the target, or :data:`NO_FACT`."""
    backend = target_backend()
    if backend is None:
        return NO_FACT
    return FACTS[backend].get(text, NO_FACT)


def fact_note(text: str, value: Any) -> str:
    """``on an NVIDIA GPU `torch.version.hip` is None``, for a note."""
    return f"on {TARGET_WORDS.get(target_backend() or '', 'the target')} `{text}` is {value!r}"
