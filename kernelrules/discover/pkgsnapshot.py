"""A digest of every module a kernel's package can import, so a warm lint can trust a stored launch.

What lint makes of a kernel before it compiles anything (its launch signature, guessed
constexprs, the helpers and module values it reads) comes from the kernel's own file
and from the modules its imports reach, looked up under its search roots
(:func:`kernelrules.discover.pkgfiles.search_roots`: the package root, then ``--src``).
A digest of every Python file under those roots therefore stands for all of those
inputs at once: when none of those files changed, the kernel's launch is the one a
previous run resolved, and that run's whole outcome can be replayed without reading
the kernel again (:mod:`kernelrules.lint.launch_replay`).

The digest is of file contents (SHA-256), not modification times, so a copy or a
``git checkout`` that keeps a file's bytes keeps its digest, and an edit that keeps the
time and size does not. Only what an ``import`` can name is walked: ``*.py`` files and
directories whose names are identifiers (``__pycache__`` and hidden or dashed
directories cannot be imported). A root too large to read quickly has no digest
(:data:`MAX_FILES`, :data:`MAX_BYTES`); its kernels are then resolved as on a cold run.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

#: A root with more Python files than this is not digested (its kernels are simply resolved again).
MAX_FILES = 20_000
#: A root whose Python files hold more bytes than this is not digested.
MAX_BYTES = 256 * 1024 * 1024
#: A root with more directory entries of any kind than this is not walked to the end (a home directory).
MAX_ENTRIES = 200_000


def _importable_dir(name: str) -> bool:
    """Whether an ``import`` can name a directory called ``name``."""
    return name.isidentifier() and name != "__pycache__"


def _python_files(root: Path) -> list[Path] | None:
    """The importable ``*.py`` files under ``root``, sorted; None past :data:`MAX_FILES` or :data:`MAX_ENTRIES`."""
    found: list[Path] = []
    entries = 0
    for dirpath, dirnames, filenames in os.walk(root):
        entries += len(dirnames) + len(filenames)
        dirnames[:] = sorted(d for d in dirnames if _importable_dir(d))
        found.extend(Path(dirpath) / f for f in sorted(filenames) if f.endswith(".py"))
        if len(found) > MAX_FILES or entries > MAX_ENTRIES:
            return None
    return sorted(found)


def tree_digest(root: str | os.PathLike[str], seen: dict[Path, bytes] | None = None) -> str | None:
    """SHA-256 over the relative path and content of every importable Python file under ``root``.

    None when ``root`` is too large (:data:`MAX_FILES`, :data:`MAX_BYTES`) or cannot be
    walked; a file that cannot be read counts as its error, so it still changes the digest
    when it becomes readable. ``seen`` holds the files' digests already read (by path), so nested
    roots read each file once.
    """
    seen = {} if seen is None else seen
    root = Path(root)
    files = _python_files(root) if root.is_dir() else None
    if files is None:
        return None
    digest = hashlib.sha256()
    total = 0
    for path in files:
        digest.update(b"\0file:" + str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        if path not in seen:
            data = file_bytes(path)
            total += len(data)
            if total > MAX_BYTES:
                return None
            seen[path] = hashlib.sha256(data).digest()
        digest.update(seen[path])
    return digest.hexdigest()


def file_bytes(path: Path) -> bytes:
    """The bytes of a regular file; for anything else (a FIFO named ``*.py``, which a plain read would wait
    on forever, a device, a dangling link or loop) a marker naming what it is."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # opening a FIFO must not wait for a writer
    except OSError as exc:
        return f"\0unreadable:{type(exc).__name__}".encode()
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return f"\0not a regular file:{stat.S_IFMT(info.st_mode)}".encode()
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(MAX_BYTES + 1)
    except OSError as exc:
        return f"\0unreadable:{type(exc).__name__}".encode()
    finally:
        os.close(fd)


class Snapshots:
    """Digests of search roots, each computed once: one instance serves one lint run (files may change
    between runs in one process, so nothing is kept across instances)."""

    def __init__(self) -> None:
        self._digests: dict[Path, str | None] = {}
        self._files: dict[Path, bytes] = {}

    def digest(self, roots: tuple[Path, ...]) -> str | None:
        """One digest over ``roots`` in order; None when any root has none."""
        parts = []
        for root in roots:
            if root not in self._digests:
                self._digests[root] = tree_digest(root, self._files)
            if self._digests[root] is None:
                return None
            parts.append(f"{root}={self._digests[root]}")
        return hashlib.sha256("\n".join(parts).encode("utf-8", "surrogateescape")).hexdigest()
