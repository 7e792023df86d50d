"""MLIR ``loc(...)`` expressions resolved back to Python ``file:line:col``.

Triton dumps locations as aliases (``loc(#loc12)``) defined at the bottom of the
module (``#loc12 = loc("/path/kernel.py":42:20)``), wrapped in names
(``loc("acc"(#loc43))``), call sites (``loc(callsite(#callee at #caller))``, one
per inlined ``@triton.jit`` helper or ``tl.cdiv``) and fusions
(``loc(fused[#a, #b])``). ``resolve`` follows those to a ``SourceLocation`` whose
``frames`` list the call stack innermost first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .mlir_text import mask_strings, matching_close, split_top, unescape

#: A frame inside Triton's own package (``tl.cdiv`` lives in ``triton/language``).
_TRITON_FRAME = re.compile(r"[/\\]triton[/\\](?:language|runtime|compiler|experimental|tools|_utils)")
_FILE_LINE_COL = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)(?:\s+to\s+\S+)?$', re.S)
_NAME = re.compile(r'^"((?:[^"\\]|\\.)*)"\s*(\((.*)\))?$', re.S)


def is_triton_frame(path: str) -> bool:
    """True for a file inside Triton's own package (``triton/language/standard.py``)."""
    return bool(_TRITON_FRAME.search(path))


@dataclass(frozen=True)
class Frame:
    """One source position: file, 1-based line, column."""

    file: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class SourceLocation:
    """A resolved location: ``frames`` innermost first, ``name`` the nearest name tag.

    ``file``/``line``/``col`` are the innermost frame. ``user_frame`` skips frames in
    Triton's own package, which is what a diagnostic about the user's kernel wants.
    """

    frames: tuple[Frame, ...]
    name: str | None = None

    @property
    def file(self) -> str:
        return self.frames[0].file

    @property
    def line(self) -> int:
        return self.frames[0].line

    @property
    def col(self) -> int:
        return self.frames[0].col

    def user_frame(self) -> Frame:
        """The innermost frame outside Triton's package (else the innermost)."""
        for frame in self.frames:
            if not is_triton_frame(frame.file):
                return frame
        return self.frames[0]

    def __str__(self) -> str:
        return str(self.user_frame())


def strip_loc(text: str) -> str:
    """The inside of ``loc(...)`` (the text itself when it is not wrapped)."""
    text = text.strip()
    if text.startswith("loc(") and text.endswith(")"):
        return text[4:-1].strip()
    return text


def _frames(expr: str, aliases: dict[str, str], seen: frozenset) -> tuple[tuple[Frame, ...], str | None]:
    """Frames and name for one location expression (alias chains followed, cycles cut)."""
    expr = strip_loc(expr)
    if expr.startswith("#"):
        if expr in seen or expr not in aliases:
            return (), None
        return _frames(aliases[expr], aliases, seen | {expr})
    match = _FILE_LINE_COL.match(expr)
    if match:
        return (Frame(unescape(match.group(1)), int(match.group(2)), int(match.group(3))),), None
    if expr.startswith("callsite(") and expr.endswith(")"):
        return _callsite(expr[len("callsite("):-1], aliases, seen)
    if expr.startswith("fused"):
        return _fused(expr, aliases, seen)
    match = _NAME.match(expr)
    if match:
        frames, inner = _frames(match.group(3), aliases, seen) if match.group(3) else ((), None)
        return frames, inner or unescape(match.group(1))
    return (), None


def _callsite(body: str, aliases: dict[str, str], seen: frozenset) -> tuple[tuple[Frame, ...], str | None]:
    """``callee at caller``: the callee's frames, then the caller's."""
    masked = mask_strings(body)
    cut = _depth0_word(masked, " at ")
    if cut < 0:
        return (), None
    callee, name = _frames(body[:cut], aliases, seen)
    caller, caller_name = _frames(body[cut + 4:], aliases, seen)
    return callee + caller, name or caller_name


def _fused(expr: str, aliases: dict[str, str], seen: frozenset) -> tuple[tuple[Frame, ...], str | None]:
    """``fused[...]`` or ``fused<meta>[...]``: the first member that resolves."""
    masked = mask_strings(expr)
    start = masked.find("[", len("fused"))
    if masked[len("fused"):].lstrip().startswith("<"):
        close = matching_close(masked, masked.find("<"))
        start = masked.find("[", close)
    end = matching_close(masked, start) if start >= 0 else -1
    if end < 0:
        return (), None
    for member in split_top(expr[start + 1:end]):
        frames, name = _frames(member, aliases, seen)
        if frames:
            return frames, name
    return (), None


def _depth0_word(masked: str, word: str) -> int:
    """Index of ``word`` outside brackets in ``masked`` (``-1`` when absent)."""
    depth = 0
    for i, ch in enumerate(masked):
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif depth == 0 and masked.startswith(word, i):
            return i
    return -1


def resolve(expr: str | None, aliases: dict[str, str]) -> SourceLocation | None:
    """Resolve a location expression against the module's ``#loc`` aliases.

    Returns ``None`` for ``unknown`` locations and anything without a file position.
    """
    if not expr:
        return None
    frames, name = _frames(expr, aliases, frozenset())
    return SourceLocation(frames, name) if frames else None
