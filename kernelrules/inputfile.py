"""Reading an input file (YAML, JSON, TOML) without hanging on it or reading it whole when too large.

``Path.read_text`` on a FIFO waits forever for a writer, on a device it may never end, and on
a directory it raises an ``IsADirectoryError`` whose text names nothing useful. Every data
file kernelrules is given (profiles, space, tune and spec files, traces, pinned tables,
``pyproject.toml``) goes through :func:`read_input_text`, which opens without blocking,
reads only regular files, refuses one larger than its bound before reading it, and decodes
UTF-8; each problem is one :class:`~kernelrules.errors.KernelrulesError` naming the file.
"""

from __future__ import annotations

import os
import stat

from .errors import KernelrulesError


def read_input_text(path: str | os.PathLike[str], max_bytes: int, *, shown: str | None = None,
                    error: type[KernelrulesError] = KernelrulesError, missing: str = "file not found") -> str:
    """The UTF-8 text of the regular file ``path``, at most ``max_bytes`` long (a leading BOM dropped)."""
    shown = shown if shown is not None else str(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))  # a FIFO must not wait for a writer
    except FileNotFoundError:
        raise error(missing, path=shown) from None
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", path=shown) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise error("is a directory, not a file", path=shown)
        if not stat.S_ISREG(info.st_mode):
            raise error("not a regular file (a FIFO, socket or device is not read)", path=shown)
        if info.st_size > max_bytes:
            raise error(f"the file is {info.st_size} bytes; kernelrules reads such files up to {max_bytes} bytes",
                        path=shown)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            data = handle.read(max_bytes + 1)
    except OSError as exc:
        raise error(f"cannot read file: {exc.strerror or exc}", path=shown) from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:  # grew while being read
        raise error(f"the file is over {max_bytes} bytes; kernelrules reads such files up to {max_bytes} bytes",
                    path=shown)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"not UTF-8: cannot decode byte {data[exc.start]:#04x} at offset {exc.start}", path=shown) from None
    return text[1:] if text.startswith("\ufeff") else text


def _not_json(constant: str) -> float:
    raise ValueError(f"{constant} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"the number {text[:40]} is out of range")
    return value


def loads_json(text: str, *, shown: str, line: int | None = None,
               error: type[KernelrulesError] = KernelrulesError, label: str = "invalid JSON") -> object:
    """``text`` parsed as strict JSON: ``NaN``, ``Infinity``, numbers that overflow a float and integers
    of thousands of digits are refused, and so is nesting deeper than Python's recursion allows; every
    problem is one :class:`~kernelrules.errors.KernelrulesError` with the file and line."""
    import json

    try:
        return json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except json.JSONDecodeError as exc:
        where = exc.lineno if line is None else line + exc.lineno - 1
        raise error(f"{label}: {exc.msg}", path=shown, line=where, column=exc.colno) from None
    except RecursionError:
        raise error(f"{label}: nested too deeply", path=shown, line=line) from None
    except ValueError as exc:  # parse_constant, parse_float, or int() past its 4300 digits
        message = str(exc)
        if "integer string conversion" in message:
            message = "an integer of more than 4300 digits"
        raise error(f"{label}: {message}", path=shown, line=line) from None
