"""Text to AST: the lark LALR parser, its error messages, and the tree builder.

The work happens in four steps, each guarding the next:

1. size limit on the text;
2. lark's LALR parse (iterative, so deep nesting cannot overflow the stack);
3. an iterative depth check of the lark tree (:data:`MAX_DEPTH`);
4. a recursive tree-to-AST build, safe because step 3 bounded the depth.

Lark errors are translated to :class:`ExprSyntaxError` with the position lark
reports and a message that names the common mistakes.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from typing import Callable

from lark import Lark, Token, Tree
from lark.exceptions import LarkError, UnexpectedCharacters, UnexpectedInput, UnexpectedToken

from . import ast
from .ast import MAX_DEPTH, MAX_INT_BITS
from .errors import ExprSyntaxError

#: Longest expression text accepted, in characters.
MAX_LENGTH = 10_000
#: Digits of the longest int literal that can fit MAX_INT_BITS (checked again exactly).
_MAX_INT_DIGITS = MAX_INT_BITS * 302 // 1000 + 2

_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t"}

#: How terminals read in messages.
_TERMINAL_WORDS = {
    "$END": "the end of the expression",
    "NAME": "a name",
    "INT": "a number",
    "FLOAT": "a number",
    "STRING": "a string",
    "LPAR": "'('",
    "RPAR": "')'",
    "LSQB": "'['",
    "RSQB": "']'",
    "COMMA": "','",
    "DOT": "'.'",
}
_VALUE_STARTS = {"NAME", "INT", "FLOAT", "STRING"}
#: Words the grammar reserves; the contextual lexer would otherwise read some as names.
KEYWORDS = frozenset({"and", "or", "not", "in", "true", "false", "True", "False"})
_OPERATORS = {
    "OR", "AND", "NOT", "IN", "EQ", "NE", "LT", "LE", "GT", "GE",
    "PLUS", "MINUS", "STAR", "SLASH", "DSLASH", "PERCENT", "POW",
}  # fmt: skip
_COMPARISONS = {"EQ", "NE", "LT", "LE", "GT", "GE", "IN", "NOT"}
_CLOSERS = {"RPAR": ")", "RSQB": "]"}
_BAD_CHARACTERS = {
    "=": "'=' is not an operator; use '==' to compare",
    "!": "'!' is not an operator; use 'not' to negate or '!=' to compare",
    "&": "'&' is not an operator; use 'and'",
    "|": "'|' is not an operator; use 'or'",
    "^": "'^' is not an operator; use '**' for powers",
    "{": "braces are not part of the language (placeholders belong to message templates)",
    "}": "braces are not part of the language (placeholders belong to message templates)",
    "\x00": "NUL character in expression",
}
_BAD_WORDS = {
    "is": "'is' is not supported; use '==' or '!='",
    "if": "conditional expressions are not supported; combine conditions with 'and' / 'or'",
    "else": "conditional expressions are not supported; combine conditions with 'and' / 'or'",
    "None": "there is no null value; a missing name is reported by evaluation instead",
    "null": "there is no null value; a missing name is reported by evaluation instead",
    "lambda": "lambdas are not supported",
}


@lru_cache(maxsize=1)
def _lark() -> Lark:
    """The LALR parser, built once on first use from the packaged grammar."""
    grammar = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(grammar, parser="lalr", propagate_positions=True, maybe_placeholders=False)


def parse(text: str) -> ast.Expr:
    """Parse one expression into an AST, or raise :class:`ExprSyntaxError`."""
    if not isinstance(text, str):
        raise ExprSyntaxError(f"an expression must be a string, not {type(text).__name__}", 1, 1)
    if len(text) > MAX_LENGTH:
        raise ExprSyntaxError(f"expression is too long ({len(text)} characters; the limit is {MAX_LENGTH})", 1, 1)
    if not text.strip():
        raise ExprSyntaxError("empty expression", 1, 1)
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as exc:
        raise _syntax_error(text, exc) from None
    except LarkError as exc:  # pragma: no cover - other lark failures are not expected
        raise ExprSyntaxError(f"cannot parse expression: {exc}", 1, 1) from None
    _check_tree_depth(tree)
    return _Builder().build(tree)


# --------------------------------------------------------------------------- errors


def _syntax_error(text: str, exc: UnexpectedInput) -> ExprSyntaxError:
    """Translate a lark error into a positioned, human message."""
    if isinstance(exc, UnexpectedCharacters):
        return _unexpected_character(text, exc)
    if isinstance(exc, UnexpectedToken):
        return _unexpected_token(text, exc)
    return ExprSyntaxError("invalid expression", getattr(exc, "line", 1), getattr(exc, "column", 1))


def _unexpected_character(text: str, exc: UnexpectedCharacters) -> ExprSyntaxError:
    char = text[exc.pos_in_stream] if 0 <= exc.pos_in_stream < len(text) else ""
    if char in ("'", '"'):
        message = "unterminated string (a string ends on the line it starts; write \\n for a newline)"
    elif char in _BAD_CHARACTERS:
        message = _BAD_CHARACTERS[char]
        if char == "=" and text[exc.pos_in_stream : exc.pos_in_stream + 2] == "=>":
            message = "'=>' is not an operator; use '>='"
    elif char == "." and "NAME" in (exc.allowed or ()):
        message = "expected a field name after '.'"
    else:
        message = f"unexpected character {char!r}"
    return ExprSyntaxError(message, exc.line, exc.column)


def _unexpected_token(text: str, exc: UnexpectedToken) -> ExprSyntaxError:
    token = exc.token
    expected = set(exc.expected or ())
    if token.type == "$END" or token.type in _CLOSERS:
        bracket = _bracket_problem(text)
        if bracket is not None:
            return bracket
    if token.type == "$END":
        line, column = _end_position(text)
        return ExprSyntaxError(f"unexpected end of expression; expected {_describe(expected)}", line, column)
    line, column = token.line, token.column
    previous = exc.token_history[-1] if exc.token_history else None
    if previous is not None and previous.type == "NAME" and previous.value in KEYWORDS:
        if not text[: previous.start_pos].rstrip().endswith("."):  # 'config.in' is a field, not a keyword
            return _keyword_as_name(previous)
    if token.type in _COMPARISONS and expected & {"AND", "OR", "$END"}:
        return ExprSyntaxError(
            "comparisons cannot be chained; write 'a < b and b < c' instead of 'a < b < c'", line, column
        )
    if token.type == "NAME" and token.value in _BAD_WORDS:
        return ExprSyntaxError(_BAD_WORDS[token.value], line, column)
    return ExprSyntaxError(f"unexpected {_token_words(token)}; expected {_describe(expected)}", line, column)


def _keyword_as_name(token: Token) -> ExprSyntaxError:
    """A keyword where an operand belongs, as in 'a == not b'."""
    message = f"'{token.value}' is a keyword and cannot be used as a name"
    if token.value == "not":
        message = "'not' binds looser than comparisons and arithmetic; write 'a == (not b)'"
    return ExprSyntaxError(message, token.line, token.column)


def _token_words(token: Token) -> str:
    """How a token reads in a message: its kind and text."""
    kinds = {"NAME": "name", "INT": "number", "FLOAT": "number", "STRING": "string"}
    if token.type in kinds:
        return f"{kinds[token.type]} {token.value!r}"
    return repr(str(token.value))


def _describe(expected: set[str]) -> str:
    """Summarize an expected-terminal set: 'an operator ...', 'a value ...', or a short list."""
    if expected == {"NAME"}:
        return "a field name"
    if expected & _VALUE_STARTS:
        return "a value (a number, string, name, '(' or '[')"
    if expected & _OPERATORS:
        return "an operator"
    return " or ".join(sorted({_TERMINAL_WORDS.get(name, repr(name)) for name in expected}))


def _end_position(text: str) -> tuple[int, int]:
    """Line and column just after the last non-blank character."""
    body = text.rstrip()
    line = body.count("\n") + 1
    return line, len(body) - (body.rfind("\n") + 1) + 1


def _position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _bracket_problem(text: str) -> ExprSyntaxError | None:
    """Find the first unbalanced or mismatched bracket, skipping string literals."""
    pairs = {")": "(", "]": "["}
    opened: list[tuple[str, int]] = []
    quote = ""
    i = 0
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\":
                i += 1
            elif char == quote or char == "\n":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([":
            opened.append((char, i))
        elif char in ")]":
            if not opened:
                message = f"unbalanced parenthesis: {char!r} has no matching {pairs[char]!r}"
                return ExprSyntaxError(message, *_position(text, i))
            opener, _ = opened.pop()
            if opener != pairs[char]:
                return ExprSyntaxError(f"unbalanced parenthesis: {opener!r} is closed by {char!r}", *_position(text, i))
        i += 1
    if opened:
        opener, offset = opened[-1]
        return ExprSyntaxError(f"unbalanced parenthesis: {opener!r} is never closed", *_position(text, offset))
    return None


# --------------------------------------------------------------------------- depth


def _check_tree_depth(tree: Tree) -> None:
    """Reject lark trees deeper than MAX_DEPTH, iteratively (before any recursion)."""
    stack = [(tree, 1)]
    while stack:
        node, level = stack.pop()
        if level > MAX_DEPTH:
            line, column = _tree_position(node)
            raise ExprSyntaxError(f"expression nests too deeply (more than {MAX_DEPTH} levels)", line, column)
        stack.extend((child, level + 1) for child in node.children if isinstance(child, Tree))


def _tree_position(node: Tree) -> tuple[int | None, int | None]:
    meta = node.meta
    return (getattr(meta, "line", None), getattr(meta, "column", None))


# --------------------------------------------------------------------------- building


class _Builder:
    """Turns a depth-checked lark tree into AST nodes (one method per rule alias)."""

    def build(self, node: Tree) -> ast.Expr:
        handler: Callable[[Tree], ast.Expr] = getattr(self, f"_build_{node.data}")
        return handler(node)

    def _build_boolop(self, node: Tree) -> ast.Expr:
        left, op, right = node.children
        return ast.BoolOp(op.value, self.build(left), self.build(right), line=op.line, column=op.column)

    def _build_compare(self, node: Tree) -> ast.Expr:
        left, *ops, right = node.children
        op = " ".join(token.value for token in ops)
        return ast.Compare(op, self.build(left), self.build(right), line=ops[0].line, column=ops[0].column)

    def _build_binop(self, node: Tree) -> ast.Expr:
        left, op, right = node.children
        return ast.BinOp(op.value, self.build(left), self.build(right), line=op.line, column=op.column)

    def _build_unary(self, node: Tree) -> ast.Expr:
        op, operand = node.children
        return ast.Unary(op.value, self.build(operand), line=op.line, column=op.column)

    def _build_paren(self, node: Tree) -> ast.Expr:
        return self.build(node.children[0])

    def _build_call(self, node: Tree) -> ast.Expr:
        name, *rest = node.children
        _check_identifier(name, root=True)
        args = self._arguments(rest[0]) if rest else ()
        return ast.Call(name.value, args, line=name.line, column=name.column)

    def _build_list(self, node: Tree) -> ast.Expr:
        items = self._arguments(node.children[0]) if node.children else ()
        return ast.ListExpr(items, line=node.meta.line, column=node.meta.column)

    def _arguments(self, node: Tree) -> tuple[ast.Expr, ...]:
        return tuple(self.build(child) for child in node.children)

    def _build_name(self, node: Tree) -> ast.Expr:
        for index, token in enumerate(node.children):
            _check_identifier(token, root=index == 0)
        first = node.children[0]
        return ast.Name(tuple(t.value for t in node.children), line=first.line, column=first.column)

    def _build_int(self, node: Tree) -> ast.Expr:
        token = node.children[0]
        digits = token.value.replace("_", "").lstrip("0") or "0"  # leading zeros would count against int()'s limit
        if len(digits) > _MAX_INT_DIGITS or int(digits).bit_length() > MAX_INT_BITS:
            message = f"integer literal is too large (the limit is {MAX_INT_BITS} bits)"
            raise ExprSyntaxError(message, token.line, token.column)
        return ast.Literal(int(digits), line=token.line, column=token.column)

    def _build_float(self, node: Tree) -> ast.Expr:
        token = node.children[0]
        return ast.Literal(float(token.value), line=token.line, column=token.column)

    def _build_string(self, node: Tree) -> ast.Expr:
        token = node.children[0]
        return ast.Literal(_unescape(token), line=token.line, column=token.column)

    def _build_true(self, node: Tree) -> ast.Expr:
        token = node.children[0]
        return ast.Literal(True, line=token.line, column=token.column)

    def _build_false(self, node: Tree) -> ast.Expr:
        token = node.children[0]
        return ast.Literal(False, line=token.line, column=token.column)


def _check_identifier(token: Token, root: bool = False) -> None:
    """Reject names starting with '_' (no way to reach dunders) and keywords used as roots."""
    if root and token.value in KEYWORDS:
        raise _keyword_as_name(token)
    if token.value.startswith("_"):
        raise ExprSyntaxError(f"names may not start with '_' ({token.value!r})", token.line, token.column)


def _unescape(token: Token) -> str:
    """The value of a quoted string token: strip quotes, resolve the five escapes."""
    body = token.value[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        char = body[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        escaped = body[i + 1]
        if escaped not in _ESCAPES:
            raise ExprSyntaxError(
                f"unknown escape '\\{escaped}' in string (use \\\\, \\n, \\t, \\' or \\\")",
                token.line,
                token.column + 1 + i,
            )
        out.append(_ESCAPES[escaped])
        i += 2
    return "".join(out)
