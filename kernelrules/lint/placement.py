"""Where lint's findings point: the file as shown from the working directory and the quoted source line.

Every finding of a lint run (a rule's on a config, one of lint's own ``LNT`` codes at a kernel's
``def``, a file that does not parse, a finding replayed from the judgement cache) is placed by
one :class:`FindingPlacer`, which reads each file's lines once per run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .findings import Finding, lint_finding
from ..discover.pysource import read_python


def shown_path(path: str | Path) -> str:
    """``path`` relative to the working directory when it is below it, else as given."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop (RuntimeError before 3.13)
        return str(path)


class FindingPlacer:
    """Builds findings at a kernel's lines, quoting the source line; one cache of file lines per run."""

    def __init__(self) -> None:
        self.sources: dict[str, list[str]] = {}

    def source_line(self, path: str | Path, line: int | None) -> str | None:
        """Line ``line`` (1-based) of ``path``; None when there is no such line or the file cannot be read."""
        key = str(path)
        if key not in self.sources:
            try:
                self.sources[key] = read_python(Path(path)).splitlines()
            except OSError:
                self.sources[key] = []
        lines = self.sources[key]
        return lines[line - 1] if line and 0 < line <= len(lines) else None

    def at(self, kernel: Any, line: int, column: int, code: str, name: str, severity: str, message: str,
           **extra: Any) -> Finding:
        """A rule's finding on ``kernel`` at ``line``/``column``; ``extra``: arch, config, fix, repair."""
        return Finding(path=shown_path(kernel.path), line=line, column=column, code=code, name=name,
                       severity=severity, message=message, kernel=kernel.name, arch=extra.get("arch"),
                       config=extra.get("config"), fix=extra.get("fix"), repair=extra.get("repair"), suppressed=False,
                       source_line=self.source_line(kernel.path, line))

    def lint_code(self, kernel: Any, code: str, message: str) -> Finding:
        """A finding of one of the lint command's own codes, at the kernel's ``def``."""
        return lint_finding(code, shown_path(kernel.path), kernel.line, message, column=kernel.column + 1,
                            kernel=kernel.name, source_line=self.source_line(kernel.path, kernel.line))

    def file_problem(self, problem: Any) -> Finding:
        """``LNT004`` for a file that cannot be read or parsed (a discovery problem)."""
        return lint_finding("LNT004", shown_path(problem.path), problem.line or 1, problem.message,
                            column=problem.column or 1, source_line=self.source_line(problem.path, problem.line))

    def relocate(self, findings: list[Finding], kernel: Any) -> None:
        """Point findings stored by an earlier run at ``kernel``'s file as seen from this run."""
        for finding in findings:
            finding.path = shown_path(kernel.path)
            finding.source_line = self.source_line(kernel.path, finding.line)
