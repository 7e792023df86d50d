"""Reading a Python source file as Python does, and refusing what is not one.

Every module kernelrules reads (linted files, helper modules of their package, the files a
compile worker rebuilds) goes through :func:`read_python`:

* the encoding is the one Python would use: a BOM or a PEP 263 cookie
  (``# -*- coding: latin-1 -*-``), else UTF-8; bytes that do not decode raise
  :class:`SourceReadError`, which callers turn into a finding for that file;
* only regular files are read: a FIFO named ``*.py`` would block the run forever, a
  device could be endless;
* a file over :data:`MAX_SOURCE_BYTES` is refused before it is read;
* in a compile worker, a large kernel file is read as the view the pool sent with the job
  (:func:`use_views`, :mod:`kernelrules.discover.kernelview`): the file's text with the
  statements the kernel cannot need blanked out, for that version of the file only.

:class:`SourceReadError` is an ``OSError``, so code that already handles an unreadable
file handles these the same way.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tokenize
from pathlib import Path
from typing import Any, Iterable

#: Largest source file read (the largest module of the six corpus packages is under 0.2 MB).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


class SourceReadError(OSError):
    """A source file that cannot be read as Python source: not a regular file, too large, undecodable."""


#: The views in use (a compile worker's): real path -> (modification time, size, text, digest of the text, view).
_VIEWS: dict[str, tuple[int, int, str, str, Any]] = {}


def use_views(views: Iterable[Any]) -> None:
    """Read each view's file as the view (:class:`kernelrules.discover.kernelview.FileView`) while the file's
    modification time and size are the view's; forget the views used before."""
    previous = {path: found for path, found in _VIEWS.items()}
    _VIEWS.clear()
    for view in views:
        found = previous.get(view.path)
        if found is None or found[4] != view:
            text = view.text()
            found = (view.mtime_ns, view.size, text, hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest(),
                     view)
        _VIEWS[view.path] = found


def view_digest(path: str | os.PathLike[str]) -> str | None:
    """The digest of the view ``path`` is read as, None when it is read whole: part of the key of what is
    cached per file version, since two jobs may send two views of one version."""
    if not _VIEWS:
        return None
    found = _VIEWS.get(os.path.realpath(path))
    return found[3] if found is not None else None


def read_python(path: str | os.PathLike[str]) -> str:
    """The text of a Python source file, decoded as Python decodes it (or the view in use for this version)."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceReadError(f"not a regular file: {path}")
        if info.st_size > MAX_SOURCE_BYTES:
            raise SourceReadError(f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MB ({info.st_size} bytes): {path}")
        view = _VIEWS.get(os.path.realpath(path)) if _VIEWS else None
        if view is not None and view[:2] == (info.st_mtime_ns, info.st_size):
            return view[2]
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(MAX_SOURCE_BYTES + 1)
    finally:
        os.close(fd)
    return decode_python(data, str(path))


def decode_python(data: bytes, name: str = "<source>") -> str:
    """``data`` decoded by its BOM or PEP 263 cookie (UTF-8 otherwise), newlines as Python reads them."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise SourceReadError(f"cannot decode {name} as Python source: {exc}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")
