"""Lexical helpers for Triton's MLIR text: strings, brackets, types, attribute values.

The structure parser (``mlir.py``) and the location resolver (``mlir_loc.py``) need
the same few primitives: find things at bracket depth 0 while ignoring string
contents, read a type such as ``tensor<128x64xf16, #blocked>`` and read an
attribute value such as ``{vec = 8, order = [1, 0]}`` into Python. They live here
so that each of those modules stays about one thing.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import Any

_OPEN = {"(": ")", "[": "]", "{": "}", "<": ">"}
_CLOSE = {v: k for k, v in _OPEN.items()}


def mask_strings(text: str) -> str:
    """``text`` with the inside of every string literal replaced by ``_`` (same length).

    Searching the masked copy for brackets, ``%`` names or ``loc(`` can never match
    inside a file path or a string attribute, and indices stay valid for ``text``.
    An escaped character (``\\"``) stays inside; a string never closed runs to the end.
    """
    if '"' not in text:
        return text
    return _STRING.sub(lambda m: '"' + "_" * len(m.group(1)) + m.group(2), text)


#: A string literal: its inside (escapes included, to the end when it never closes) and its closing quote.
_STRING = re.compile(r'"((?:[^"\\]|\\.|\\\Z)*)("?)', re.S)
#: The characters that open or close a bracket; the ``>`` of an arrow ``->`` is not one.
_BRACKET = re.compile(r"[(\[{<)\]}]|(?<!-)>")


def depth_map(masked: str) -> list[int]:
    """Bracket depth in front of each character of ``masked``.

    ``<``/``>`` count as brackets (types and attributes use them); the ``>`` of an
    arrow ``->`` never closes one. (Only the brackets are visited: this runs on every line of a dump.)
    """
    depths = [0] * len(masked)
    depth, start = 0, 0
    for match in _BRACKET.finditer(masked):
        i = match.start()
        if depth:
            depths[start:i + 1] = [depth] * (i + 1 - start)
        depth = depth + 1 if masked[i] in "([{<" else max(0, depth - 1)
        start = i + 1
    if depth:
        depths[start:] = [depth] * (len(masked) - start)
    return depths


def depth0_positions(masked: str, wanted: str) -> list[int]:
    """Indices of the characters in ``wanted`` that sit outside every bracket pair."""
    if not any(ch in masked for ch in wanted):
        return []
    found, depth = [], 0
    for match in _depth0_pattern(wanted).finditer(masked):
        i, ch = match.start(), match.group()
        if depth == 0 and ch in wanted:
            found.append(i)
        if ch in "([{<":
            depth += 1
        elif ch in ")]}" or (ch == ">" and (i == 0 or masked[i - 1] != "-")):
            depth = max(0, depth - 1)
    return found


@functools.lru_cache(maxsize=None)
def _depth0_pattern(wanted: str) -> re.Pattern:
    """The brackets and the ``wanted`` characters, one match each."""
    return re.compile("[" + re.escape("([{<)]}>" + wanted) + "]")


def matching_close(masked: str, start: int) -> int:
    """Index of the bracket closing the one at ``start`` (``-1`` when it never closes)."""
    expected: list[str] = []
    for i in range(start, len(masked)):
        ch = masked[i]
        if ch in _OPEN:
            expected.append(_OPEN[ch])
        elif ch in _CLOSE and not (ch == ">" and i > 0 and masked[i - 1] == "-"):
            if not expected or expected[-1] != ch:
                return -1
            expected.pop()
            if not expected:
                return i
    return -1


def unescape(body: str) -> str:
    """The value of a string literal's inside: ``\\"``, ``\\\\``, ``\\n``, ``\\t`` and ``\\XX`` hex."""
    simple = {'"': '"', "\\": "\\", "n": "\n", "t": "\t"}

    def one(match: re.Match) -> str:
        code = match.group(1)
        return simple.get(code) or chr(int(code, 16))

    return re.sub(r'\\(["\\nt]|[0-9A-Fa-f]{2})', one, body)


def split_top(text: str, sep: str = ",") -> list[str]:
    """Split ``text`` at the depth-0 occurrences of the one-character ``sep``; strip parts."""
    masked = mask_strings(text)
    cuts = depth0_positions(masked, sep)
    parts, last = [], 0
    for cut in cuts:
        parts.append(text[last:cut].strip())
        last = cut + 1
    parts.append(text[last:].strip())
    return [p for p in parts if p]


# ----------------------------------------------------------------------------- types

_DIMS = re.compile(r"^((?:(?:\d+|\?)x)*)(.*)$", re.S)
_BITS = re.compile(r"^(?:[iuf]|bf|si|ui)(\d+)")


@dataclass(frozen=True)
class MlirType:
    """A parsed MLIR type: ``kind`` is tensor, memdesc, tensordesc, ptr, scalar or other.

    ``shape`` is empty for scalars; ``dtype`` is the element type as MLIR spells it
    (``f16``, ``f8E4M3FN``, ``!tt.ptr<f16>``); ``encoding`` the layout attribute
    (``#blocked`` or an inline ``#ttg.slice<...>``); ``memory_space`` and
    ``mutable`` are set for shared/tensor-memory descriptors.
    """

    raw: str
    kind: str
    shape: tuple[int, ...] = ()
    dtype: str | None = None
    encoding: str | None = None
    memory_space: str | None = None
    mutable: bool = False
    extra: tuple[str, ...] = field(default=())

    @property
    def element_bits(self) -> int | None:
        """Bit width of the element type, when it has one (pointers are 64)."""
        return dtype_bits(self.dtype)

    def pointee(self) -> "MlirType":
        """The type a load of this pointer (or tensor of pointers) produces."""
        inner = self.dtype if self.kind == "tensor" else self.raw
        match = re.fullmatch(r"!tt\.ptr<\s*([^,>]+)(?:,\s*\d+)?\s*>", (inner or "").strip())
        if not match:
            return self
        if self.kind == "tensor":
            return MlirType(self.raw, "tensor", self.shape, match.group(1).strip(), self.encoding)
        return parse_type(match.group(1))


def dtype_bits(dtype: str | None) -> int | None:
    """Bits per element of an MLIR element type name (``f8E4M3FN`` → 8, ``i1`` → 1)."""
    if not dtype:
        return None
    if dtype.startswith("!tt.ptr"):
        return 64
    if dtype == "index":
        return 64
    match = _BITS.match(dtype)
    return int(match.group(1)) if match else None


def _shaped(body: str) -> tuple[tuple[int, ...], str, list[str]]:
    """Split ``128x64xf16, #enc, ...`` into shape, element type and the other parts."""
    parts = split_top(body)
    if not parts:
        return (), "", []
    match = _DIMS.match(parts[0])
    dims = tuple(int(d) if d.isdigit() else -1 for d in match.group(1).split("x") if d)
    return dims, match.group(2).strip(), parts[1:]


def parse_type(text: str) -> MlirType:
    """Parse one MLIR type; anything unrecognised comes back as kind ``other``."""
    raw = text.strip()
    head, _, rest = raw.partition("<")
    body = rest[:-1] if rest.endswith(">") else rest
    if head == "tensor":
        shape, dtype, others = _shaped(body)
        return MlirType(raw, "tensor", shape, dtype, others[0] if others else None)
    if head in ("!ttg.memdesc", ""):
        if head == "" and not raw.startswith("<"):
            return MlirType(raw, "other")
        shape, dtype, others = _shaped(body)
        flags = [o for o in others if not o.startswith("#") and o != "mutable"]
        refs = [o for o in others if o.startswith("#")]
        return MlirType(raw, "memdesc", shape, dtype, refs[0] if refs else None,
                        refs[1] if len(refs) > 1 else None, "mutable" in others, tuple(flags))
    if head == "!tt.tensordesc":
        inner = parse_type(body)
        return MlirType(raw, "tensordesc", inner.shape, inner.dtype, inner.encoding)
    if head == "!tt.ptr":
        return MlirType(raw, "ptr", (), raw)
    if re.fullmatch(r"(?:[iuf]\d+|bf16|f8\w+|f4\w+|f6\w+|tf32|index|i1)", raw):
        return MlirType(raw, "scalar", (), raw)
    return MlirType(raw, "other")


# ----------------------------------------------------------------------------- attributes

_TOKEN = re.compile(
    r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<arrow>->)'
    r"|(?P<num>[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w]))"
    r"|(?P<id>[#!@^]?[A-Za-z_][\w$.]*)|(?P<punct>[{}\[\]()<>=,:*?+-])|(?P<word>[\w$.]+)|(?P<other>\S))"
)


class _AttrParser:
    """Recursive descent over one attribute value; unknown forms come back as raw text."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = []
        pos = 0
        while pos < len(text):
            match = _TOKEN.match(text, pos)
            if not match or match.lastgroup is None:
                break  # only white space is left
            kind = match.lastgroup
            self.tokens.append((kind, match.group(kind), match.start(kind), match.end()))
            pos = match.end()
        self.i = 0

    def peek(self, offset: int = 0) -> tuple[str, str, int, int] | None:
        j = self.i + offset
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self) -> tuple[str, str, int, int]:
        tok = self.peek()
        if tok is None:
            raise ValueError("unexpected end of attribute")
        self.i += 1
        return tok

    def expect(self, text: str) -> None:
        tok = self.take()
        if tok[1] != text:
            raise ValueError(f"expected {text!r}, found {tok[1]!r}")

    def skip_balanced_until(self, stops: str) -> str:
        """Consume tokens up to a depth-0 token in ``stops``; return their raw text."""
        start = self.peek()[2] if self.peek() else len(self.text)
        end, depth = start, 0
        while (tok := self.peek()) is not None:
            value = tok[1]
            if depth == 0 and value in stops:
                break
            if value in "([{<":
                depth += 1
            elif value in ")]}>":
                depth -= 1
            end = tok[3]
            self.i += 1
        return self.text[start:end].strip()

    def value(self) -> Any:
        tok = self.peek()
        if tok is None:
            raise ValueError("missing value")
        kind, text = tok[0], tok[1]
        if text == "{":
            return self.dictionary()
        if text == "[":
            return self.listing()
        if kind == "num":
            self.i += 1
            self.typed_suffix()
            return _number(text)
        if kind == "str":
            self.i += 1
            self.typed_suffix()
            return unescape(text[1:-1])
        if text in ("true", "false"):
            self.i += 1
            return text == "true"
        if kind == "id" and text.startswith("#") and self.peek(1) and self.peek(1)[1] == "<":
            return self.dialect_attr()
        if kind == "id" and text.startswith("#"):
            self.i += 1
            return text
        start = self.i
        raw = self.skip_balanced_until(",]}>")
        if self.i == start:
            raise ValueError(f"unexpected {text!r} in attribute")
        return raw

    def typed_suffix(self) -> None:
        """Drop a ``: i32`` type annotation after a number or string."""
        if self.peek() and self.peek()[1] == ":":
            self.i += 1
            self.skip_balanced_until(",]}>")

    def dictionary(self) -> dict:
        self.expect("{")
        out: dict[str, Any] = {}
        while self.peek() and self.peek()[1] != "}":
            key_tok = self.take()
            key = key_tok[1][1:-1] if key_tok[0] == "str" else key_tok[1]
            if self.peek() and self.peek()[1] == "=":
                self.i += 1
                out[key] = self.value()
            else:
                out[key] = True  # a unit attribute
            if self.peek() and self.peek()[1] == ",":
                self.i += 1
        self.expect("}")
        return out

    def listing(self) -> list:
        self.expect("[")
        items = []
        while self.peek() and self.peek()[1] != "]":
            items.append(self.value())
            if self.peek() and self.peek()[1] == ",":
                self.i += 1
        self.expect("]")
        return items

    def dialect_attr(self) -> dict:
        """``#dialect.name<{...}>`` or ``#dialect.name<k = v, ...>`` as ``{"kind": ..., fields}``."""
        name = self.take()[1]
        self.expect("<")
        out: dict[str, Any] = {"kind": name.lstrip("#").split(".", 1)[-1]}
        if self.peek() and self.peek()[1] == "[":
            out["interval_padding_pairs"] = self.padding_pairs()
        if self.peek() and self.peek()[1] == "{":
            out.update(self.dictionary())
        else:
            while self.peek() and self.peek()[1] != ">":
                key = self.take()[1]
                self.expect("=")
                out[key] = self.value()
                if self.peek() and self.peek()[1] == ",":
                    self.i += 1
        self.expect(">")
        return out

    def padding_pairs(self) -> list[list[int]]:
        """Gluon's ``[32:+4, 64:+8]`` (interval, padding) list of ``padded_shared``."""
        raw = self.skip_balanced_until("{>")
        return [[int(a), int(b)] for a, b in re.findall(r"(\d+)\s*:\s*\+?(\d+)", raw)]


def _number(text: str) -> int | float:
    """An MLIR integer (decimal or hex) or float literal."""
    if text.lower().startswith(("0x", "-0x", "+0x")):
        return int(text, 16)
    try:
        return int(text)
    except ValueError:
        return float(text)


def parse_attribute(text: str) -> Any:
    """Parse an attribute value (dict, list, number, string, ``#alias``, ``#d.kind<...>``).

    Raises ``ValueError`` when the text is not one attribute value.
    """
    parser = _AttrParser(text)
    result = parser.value()
    if parser.peek() is not None:
        raise ValueError(f"trailing text after attribute: {text[parser.peek()[2]:]!r}")
    return result


def parse_attribute_dict(text: str) -> dict:
    """Parse ``{k = v, ...}``; on text this reader does not understand, an empty dict."""
    try:
        value = parse_attribute(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
