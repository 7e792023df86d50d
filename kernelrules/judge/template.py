"""Message templates: text with ``{expression}`` placeholders.

A rule's message is written for people, with numbers filled in from the same
namespaces the condition reads: ``"needs {facts.shared_bytes} bytes, the
limit is {arch.shared_memory_per_block_optin}"``. ``{{`` and ``}}`` are
literal braces. An optional format spec follows the last ``:`` inside the
braces (``{facts.occupancy:.0%}``); the expression language has no ``:``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from .. import expr as exprlang


@dataclass(frozen=True)
class Placeholder:
    """One ``{...}`` in a template: its parsed expression and format spec."""

    source: str
    offset: int
    spec: str
    node: Any
    evaluate: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Template:
    """A parsed message template: literal pieces interleaved with placeholders."""

    text: str
    pieces: tuple[str | Placeholder, ...]

    def render(self, env: Mapping[str, Any]) -> str:
        """Fill every placeholder; a value that cannot be computed shows as ``?``."""
        out: list[str] = []
        for piece in self.pieces:
            if isinstance(piece, str):
                out.append(piece)
                continue
            try:
                value = piece.evaluate(env)
                out.append(format_value(value, piece.spec))
            except (exprlang.ExprError, ValueError, TypeError):
                out.append("?")
        return "".join(out)

    def expressions(self) -> list[Placeholder]:
        """The placeholders, for static checking."""
        return [p for p in self.pieces if isinstance(p, Placeholder)]


def format_value(value: Any, spec: str) -> str:
    """Format one value: lists joined with commas, booleans lower-case, else ``format``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, float) and not spec and value.is_integer():
        return str(int(value))
    return format(value, spec)


class TemplateError(ValueError):
    """A template that cannot be parsed; ``offset`` is the character position."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.offset = offset


def parse_template(text: str) -> Template:
    """Split a template into literal text and parsed placeholders."""
    pieces: list[str | Placeholder] = []
    literal: list[str] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch in "{}" and text[i : i + 2] in ("{{", "}}"):
            literal.append(ch)
            i += 2
            continue
        if ch == "}":
            raise TemplateError("unmatched '}' (write '}}' for a literal brace)", i)
        if ch != "{":
            literal.append(ch)
            i += 1
            continue
        end = text.find("}", i + 1)
        if end < 0:
            raise TemplateError("unmatched '{' (write '{{' for a literal brace)", i)
        body = text[i + 1 : end]
        if "{" in body:
            raise TemplateError("unmatched '{' (write '{{' for a literal brace)", i)
        source, _, spec = body.rpartition(":") if ":" in body else (body, "", "")
        if literal:
            pieces.append("".join(literal))
            literal = []
        try:
            node = exprlang.parse(source)
        except exprlang.ExprError as exc:
            raise TemplateError(f"in placeholder {{{body}}}: {exc.message}", i + 1) from None
        pieces.append(Placeholder(source, i + 1, spec, node, exprlang.compile_expr(node)))
        i = end + 1
    if literal:
        pieces.append("".join(literal))
    return Template(text, tuple(pieces))
