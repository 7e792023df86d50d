"""What a hostile case is: the files it writes, the ``kernelrules`` arguments it runs, what it expects.

A case is plain data, so the child processes of :mod:`hostile.runner` rebuild the same list
by name instead of receiving it, and a failing case can be rerun alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Union

#: The three ways a command may end on a hostile input.
REFUSED = "refused"  # exit 2, one line ``kernelrules: error: ...`` naming the problem, nothing written
USAGE = "usage"      # exit 2 from the argument parser: one line ``kernelrules <command>: error: ...`` naming the command
JUDGED = "judged"    # exit 0 or 1: the input was read and judged (a bad Python file is one LNT004 finding)

#: Bounds from issue 18: every input file up to 1 MB is judged or refused within these.
CASE_SECONDS = 10.0
CASE_MEMORY_BYTES = 1 << 30


class Special:
    """A path that is not a plain file with bytes: a directory, a FIFO, a symlink."""

    def __init__(self, kind: str, target: str = "") -> None:
        self.kind, self.target = kind, target

    def make(self, path: Path) -> None:
        if self.kind == "dir":
            path.mkdir(parents=True, exist_ok=True)
        elif self.kind == "fifo":
            os.mkfifo(path)
        elif self.kind == "symlink":
            os.symlink(self.target, path)
        else:  # pragma: no cover - a typo in a generator
            raise ValueError(self.kind)


DIRECTORY = Special("dir")
FIFO = Special("fifo")


def symlink(target: str) -> Special:
    return Special("symlink", target)


Content = Union[bytes, str, Special]


@dataclass(frozen=True)
class Case:
    """One hostile input: ``kernelrules *argv`` run in a fresh directory holding ``files``.

    ``expect`` is :data:`REFUSED`, :data:`USAGE` or :data:`JUDGED`; ``message`` must appear in
    the error line (refused, usage) or in stderr+stdout (judged); ``finding`` is a code that
    must be in the JSON report of a judged run; ``exits`` narrows the accepted exit codes of a
    judged run; ``writes`` are the only new files a judged run may leave (a refused run leaves none).
    """

    name: str
    argv: tuple[str, ...]
    files: Mapping[str, Content] = field(default_factory=dict)
    expect: str = REFUSED
    message: str = ""
    finding: str = ""
    exits: tuple[int, ...] = (0, 1)
    writes: tuple[str, ...] = ()
    group: str = ""
    slow: bool = False      # kept out of the CI run (pytest -m slow runs it)

    def materialize(self, directory: Path) -> None:
        """Write the case's files under ``directory`` (specials last: a symlink may name a file)."""
        for relative, content in sorted(self.files.items(), key=lambda item: isinstance(item[1], Special)):
            path = directory / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, Special):
                content.make(path)
            else:
                path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
