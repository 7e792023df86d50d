"""Errors that reach the user as one clear line and a distinct exit code.

Every failure caused by user input (a malformed YAML file, an unknown
architecture, an unparseable ``KEY=VALUE``) is raised as a
:class:`KernelrulesError`. The CLI prints ``str(error)`` and exits with
``error.exit_code``; it never shows a traceback for these.
"""

from __future__ import annotations

import re

#: Exit code for usage, configuration and input errors (ruff's convention).
EXIT_USAGE = 2

#: Longest message or hint shown whole; a longer one (a 200,000-character expression echoed
#: back) keeps its start and end around a count of what was left out.
MAX_MESSAGE = 600


#: ``scheme://user:password@`` in any text: the password part.
_CREDENTIALS = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*:)([^\s@/]+)(@)")


def mask_credentials(text: str) -> str:
    """``text`` with the password of every URL in it replaced by ``***`` (a storage URL in an error from
    SQLAlchemy or Optuna, say): no output of kernelrules ever shows one."""
    return _CREDENTIALS.sub(r"\1***\3", text)


def shorten(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line, at most about ``limit`` characters."""
    text = " ".join(str(text).splitlines())
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 4):]
    return f"{head} ... [{len(text) - len(head) - len(tail)} characters left out] ... {tail}"


class KernelrulesError(Exception):
    """A user-facing error: one line naming where (file, line, column) and what to do."""

    exit_code = EXIT_USAGE

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        column: int | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.path = path
        self.line = line
        self.column = column
        self.hint = hint
        super().__init__(self.render())

    def render(self) -> str:
        """Return ``path:line:col: message (hint)`` with the parts that are known."""
        where = ""
        if self.path is not None:
            where = str(self.path)
            if self.line is not None:
                where += f":{self.line}"
                if self.column is not None:
                    where += f":{self.column}"
            where += ": "
        text = f"{where}{shorten(self.message)}"
        if self.hint:
            text += f" ({shorten(self.hint)})"
        return mask_credentials(text)


class ProfileError(KernelrulesError):
    """An architecture profile is malformed or cannot be found."""


class UnknownArchError(ProfileError):
    """An architecture name that no profile or alias resolves."""


class RuleFileError(KernelrulesError):
    """A rule YAML file is malformed: schema, expression or example error."""


class ConfigValueError(KernelrulesError):
    """A config given on the command line or in a file cannot be understood."""


class KernelSourceError(KernelrulesError):
    """A kernel cannot be read from its file: missing file, syntax error, no such jit function."""


class SignatureSpecError(KernelrulesError):
    """A launch signature spec does not match the kernel's parameters or names an unknown type."""


class KernelSyntaxError(KernelSourceError):
    """The kernel's file does not parse as Python."""
