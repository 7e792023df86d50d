"""Suppression comments: ``# kernelrules: ignore[CODE, PREFIX, ALL]``.

Comments are found with :mod:`tokenize`, so text inside strings never counts.
An entry matches a code when it is equal to it or a prefix of it (``MEM``
matches ``MEM001``); ``ALL`` matches every code. A bare
``# kernelrules: ignore`` without brackets is not a suppression: the codes
must be named.

A finding is suppressed by a matching comment on its own line, on its
kernel's ``def`` line or one of its decorator lines, or on the line of the
``triton.Config(...)`` it is about. Entries that suppressed nothing are
returned as unused (reported as ``LNT003``).
"""

from __future__ import annotations

import io
import re
import tokenize
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping, Sequence

from .findings import Finding, LintReport

_COMMENT = re.compile(r"#\s*kernelrules\s*:\s*ignore\s*\[([^\]]*)\]", re.IGNORECASE)

#: The entry that matches every code.
ALL = "ALL"

#: Codes that suppression comments never hide (they are about the comments themselves).
UNSUPPRESSIBLE = frozenset({"LNT003"})


@dataclass(frozen=True)
class Suppression:
    """The entries of one suppression comment, at ``path:line``."""

    path: str
    line: int
    entries: tuple[str, ...]

    def matching(self, code: str) -> list[str]:
        """The entries that match ``code`` (exactly, as a prefix, or ``ALL``)."""
        code = code.upper()
        return [e for e in self.entries if e == ALL or code.startswith(e)]


def parse_entries(text: str) -> tuple[str, ...]:
    """``"MEM001, reg"`` -> ``("MEM001", "REG")``: upper-cased, blanks dropped, order kept."""
    seen: dict[str, None] = {}
    for part in text.split(","):
        entry = part.strip().upper()
        if entry:
            seen.setdefault(entry, None)
    return tuple(seen)


def _comments(source: str) -> Iterable[tuple[int, str]]:
    """``(line, text)`` of every comment token; stops quietly where tokenizing fails."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    try:
        for tok in tokens:
            if tok.type == tokenize.COMMENT:
                yield tok.start[0], tok.string
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return


def parse_suppressions(source: str, path: str = "<string>") -> dict[int, Suppression]:
    """Every suppression comment of ``source``, by line number."""
    found: dict[int, Suppression] = {}
    for line, text in _comments(source):
        match = _COMMENT.search(text)
        if match:
            entries = parse_entries(match.group(1))
            if entries:
                found[line] = Suppression(path, line, entries)
    return found


def config_key(config: Mapping[str, Any] | None) -> tuple | None:
    """A hashable key for a config mapping (order-independent)."""
    if config is None:
        return None
    return tuple(sorted((str(k), repr(v)) for k, v in config.items()))


@dataclass
class KernelAnchors:
    """Lines where a kernel's suppressions may sit besides the finding's own line.

    ``def_lines`` are the ``def`` line and every decorator line;
    ``config_lines`` maps :func:`config_key` of a config to the line of its
    ``triton.Config(...)``.
    """

    def_lines: Sequence[int] = ()
    config_lines: dict[tuple, int] = field(default_factory=dict)

    def add_config(self, config: Mapping[str, Any], line: int) -> None:
        """Record the ``triton.Config(...)`` line of one config."""
        self.config_lines[config_key(config)] = line


def candidate_lines(finding: Finding, anchors: KernelAnchors | None) -> list[int]:
    """The lines whose comments may suppress ``finding``, without repeats."""
    lines = [finding.line]
    if anchors is not None:
        lines += list(anchors.def_lines)
        config_line = anchors.config_lines.get(config_key(finding.config))
        if config_line is not None:
            lines.append(config_line)
    return list(dict.fromkeys(lines))


def apply_suppressions(
    findings: Sequence[Finding],
    sources: Mapping[str, str],
    kernel_lines: Mapping[tuple[str, str], KernelAnchors] | None = None,
) -> tuple[list[Finding], list[tuple[str, int, str]]]:
    """Mark suppressed findings; return them and the unused ``(path, line, entry)``.

    ``sources`` maps a finding's ``path`` to the file's text;
    ``kernel_lines`` maps ``(path, kernel name)`` to its :class:`KernelAnchors`.
    Every matching entry on every candidate line counts as used.
    """
    kernel_lines = kernel_lines or {}
    by_path = {path: parse_suppressions(text, path) for path, text in sources.items()}
    used: set[tuple[str, int, str]] = set()
    marked: list[Finding] = []
    for finding in findings:
        comments = by_path.get(finding.path, {})
        hits: list[tuple[str, int, str]] = []
        if finding.code not in UNSUPPRESSIBLE:
            anchors = kernel_lines.get((finding.path, finding.kernel or ""))
            for line in candidate_lines(finding, anchors):
                if line in comments:
                    hits += [(finding.path, line, e) for e in comments[line].matching(finding.code)]
        used.update(hits)
        marked.append(replace(finding, suppressed=True) if hits else finding)
    unused = sorted((s.path, s.line, e) for comments in by_path.values() for s in comments.values()
                    for e in s.entries if (s.path, s.line, e) not in used)
    return marked, unused


def suppress_report(report: LintReport) -> None:
    """Mark the findings of ``report`` that a comment in their file suppresses, and record the
    unused entries, anchoring each kernel's findings at its ``def``, decorator and config lines."""
    from ..discover.pysource import read_python

    sources: dict[str, str] = {}
    for finding in report.findings:
        if finding.path not in sources:
            try:
                sources[finding.path] = read_python(finding.path)
            except OSError:
                sources[finding.path] = ""
    anchors: dict[tuple[str, str], KernelAnchors] = {}
    for kernel in report.kernels:
        anchor = anchors.setdefault((kernel.path, kernel.name), KernelAnchors(def_lines=list(kernel.anchor_lines)))
        for config, line in kernel.config_lines:
            anchor.add_config(config, line)
    report.findings, report.unused_suppressions = apply_suppressions(report.findings, sources, anchors)
