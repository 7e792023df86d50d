"""Reading a Python source file as Python does, and refusing what is not one.

Every module kernelrules reads (linted files, helper modules of their package, the files a
compile worker rebuilds) goes through :func:`read_python`:

* the encoding is the one Python would use: a BOM or a PEP 263 cookie
  (``# -*- coding: latin-1 -*-``), else UTF-8; bytes that do not decode raise
  :class:`SourceReadError`, which callers turn into a finding for that file;
* only regular files are read: a FIFO named ``*.py`` would block the run forever, a
  device could be endless;
* a file over :data:`MAX_SOURCE_BYTES` is refused before it is read.

:class:`SourceReadError` is an ``OSError``, so code that already handles an unreadable
file handles these the same way.
"""

from __future__ import annotations

import io
import os
import stat
import tokenize
from pathlib import Path

#: Largest source file read (the largest module of the six corpus packages is under 0.2 MB).
MAX_SOURCE_BYTES = 8 * 1024 * 1024


class SourceReadError(OSError):
    """A source file that cannot be read as Python source: not a regular file, too large, undecodable."""


def read_python(path: str | os.PathLike[str]) -> str:
    """The text of a Python source file, decoded as Python decodes it."""
    path = Path(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)  # opening a FIFO must not wait for a writer
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise SourceReadError(f"not a regular file: {path}")
        if info.st_size > MAX_SOURCE_BYTES:
            raise SourceReadError(f"larger than {MAX_SOURCE_BYTES // (1024 * 1024)} MB ({info.st_size} bytes): {path}")
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
