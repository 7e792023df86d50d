"""Writing output files whole or not at all.

A report, a spec skeleton or a tune space written in place and interrupted (Ctrl-C, a full
disk, kill -9) leaves half a file that looks like a result. :func:`write_text_atomic`
writes a temporary file beside the target and renames it over the target, so readers see
the old file or the new one, never a mix.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_text_atomic(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` (UTF-8) atomically and durably; the temporary file is removed on failure."""
    write_bytes_atomic(path, text.encode("utf-8"))


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, renamed over it). ``durable``
    also syncs it to disk first: user outputs are; cache entries, which a crash may lose, are not."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:16]}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def write_output(path: str | os.PathLike[str], text: str) -> None:
    """:func:`write_text_atomic` for a file the user asked for (``spec -o``, ``report -o``, a pinned
    table): a folder that does not exist, a directory in the way or a full disk is one
    :class:`~kernelrules.errors.KernelrulesError` naming the file, not an internal error."""
    from .errors import KernelrulesError

    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise KernelrulesError(f"cannot write the file: {exc.strerror or exc}", path=str(path)) from None
