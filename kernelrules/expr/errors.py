"""Errors of the expression language.

Every failure caused by an expression's text or by the values it meets is an
:class:`ExprError`: the rule loader turns one into a located
``RuleFileError`` and the engine turns one into "could not judge". Nothing
else may escape from parsing, checking or evaluating user text, so callers
can catch this one family and never see ``RecursionError``, ``MemoryError``
or a bare ``TypeError``.

Positions are 1-based and relative to the expression text itself; the caller
maps them into the file the expression came from.
"""

from __future__ import annotations

from typing import Any


class ExprError(Exception):
    """Base class: a message plus the line and column it refers to (when known)."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None) -> None:
        self.message = message
        self.line = line
        self.column = column
        super().__init__(message)

    def __str__(self) -> str:
        if self.line is None:
            return self.message
        if self.column is None:
            return f"line {self.line}: {self.message}"
        return f"line {self.line}, column {self.column}: {self.message}"

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, line={self.line}, column={self.column})"

    def __reduce__(self) -> tuple[Any, ...]:
        # Keep errors picklable (e.g. across a process pool) despite the keyword fields.
        return (_rebuild, (type(self), self.__dict__.copy()))

    def locate(self, line: int, column: int) -> "ExprError":
        """Fill in a position if none is known yet; return self for ``raise err.locate(...)``."""
        if self.line is None:
            self.line = line
            self.column = column
        return self


def _rebuild(cls: type, state: dict[str, Any]) -> ExprError:
    """Unpickle helper: recreate an error without calling a subclass ``__init__``."""
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


class ExprSyntaxError(ExprError):
    """The text is not a well-formed expression (or breaks a size or depth limit)."""


class ExprNameError(ExprError):
    """Static check failure: unknown namespace, field or function, or a wrong argument count."""


class ExprEvalError(ExprError):
    """Evaluation failed: division by zero, mismatched types, a result too large, ..."""


class MissingName(ExprError):
    """A dotted name has no value in the environment.

    Not a failure of the rule: the engine reads a missing ``facts.*`` as
    "cannot judge yet" and a missing ``config.*`` key as "does not apply".
    ``root`` is the namespace (``"facts"``), ``name`` the full dotted name
    (``"facts.shared_bytes"``).
    """

    def __init__(self, root: str, name: str, line: int | None = None, column: int | None = None) -> None:
        self.root = root
        self.name = name
        super().__init__(f"'{name}' is not known", line, column)
