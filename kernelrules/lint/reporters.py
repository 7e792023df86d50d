"""Render a :class:`~kernelrules.lint.findings.LintReport` as text, JSON, SARIF or GitHub annotations.

Every renderer is a pure function of the report and returns a string; output
is deterministic (findings sorted by path, line, column, code). The formats
are documented in ``docs/lint-output.md``.
"""

from __future__ import annotations

import json
from pathlib import PurePosixPath, PureWindowsPath
from typing import Any, Iterable
from urllib.parse import quote

from ..errors import KernelrulesError
from .findings import LINT_CODES, SEVERITIES, SEVERITY_RANK, Finding, KernelReport, LintReport

#: Version of the JSON output; bumped on any incompatible change.
SCHEMA_VERSION = 1

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}
GITHUB_COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}

_ANSI = {"bold": "\033[1m", "red": "\033[31m", "yellow": "\033[33m", "cyan": "\033[36m",
         "dim": "\033[2m", "reset": "\033[0m"}
_SEVERITY_COLOR = {"error": "red", "warning": "yellow", "info": "cyan"}


# -- text ------------------------------------------------------------------------


def _paint(text: str, style: str, color: bool) -> str:
    """Wrap ``text`` in an ANSI style when ``color`` is on."""
    return f"{_ANSI[style]}{text}{_ANSI['reset']}" if color else text


def _finding_lines(f: Finding, *, color: bool, show_source: bool) -> list[str]:
    """The header line of one finding, then its source line and a caret under the column."""
    where = _paint(f"{f.path}:{f.line}:{f.column}:", "bold", color)
    code = _paint(f.code, _SEVERITY_COLOR.get(f.severity, "bold"), color)
    context = f" ({f.arch})" if f.arch else ""
    lines = [f"{where} {code} {f.message}{context} [{f.name}]"]
    if f.config:
        lines.append(f"  config: {config_label(f.config)}")
    if f.fix:
        lines.append(f"  fix: {f.fix}")
    if f.repair:
        lines.append(f"  nearest passing config: {config_label(f.repair)}")
    if show_source and f.source_line is not None:
        number = str(f.line)
        gutter = " " * len(number)
        source = f.source_line.rstrip("\r\n").expandtabs(4)
        lines.append(f"  {number} | {source}")
        lines.append(f"  {gutter} | " + " " * max(f.column - 1, 0) + _paint("^", "red", color))
    return lines


def config_label(config: dict[str, Any]) -> str:
    """``KEY=VALUE, ...`` in the config's own key order."""
    return ", ".join(f"{k}={v}" for k, v in config.items())


def record_cell(record: dict[str, Any]) -> str:
    """``pass``, or the code of the first error diagnostic that rejected the config."""
    if record.get("verdict") == "pass":
        return "pass"
    codes = [d["code"] for d in record.get("diagnostics", ()) if d.get("severity") == "error"]
    return codes[0] if codes else "reject"


def kernel_matrix(kernel: KernelReport) -> list[list[str]]:
    """Rows of configs × columns of architectures; the first row is the header."""
    archs = sorted({r["arch"] for r in kernel.records})
    rows: dict[str, dict[str, str]] = {}
    for record in kernel.records:
        row = rows.setdefault(config_label(record["config"]), {})
        row.setdefault(record["arch"], record_cell(record))
    table = [["config", *archs]]
    table += [[label, *(cells.get(a, "-") for a in archs)] for label, cells in rows.items()]
    return table


def _align(table: list[list[str]], indent: str = "  ") -> list[str]:
    """Left-align the columns of ``table`` two spaces apart."""
    widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
    return [(indent + "  ".join(c.ljust(w) for c, w in zip(row, widths))).rstrip() for row in table]


def _kernel_lines(kernel: KernelReport, color: bool) -> list[str]:
    """The heading of one kernel, then its matrix or the reason it has none."""
    head = _paint(f"{kernel.path}:{kernel.line}", "bold", color) + f" {kernel.name} ({kernel.status})"
    if kernel.status != "analyzed" or not kernel.records:
        return [head + (f": {kernel.message}" if kernel.message else "")]
    return [head, *_align(kernel_matrix(kernel))]


def _plural(n: int, word: str, plural: str | None = None) -> str:
    """``1 error``, ``2 errors``."""
    return f"{n} {word if n == 1 else plural or word + 's'}"


def totals_line(report: LintReport) -> str:
    """``N findings (E errors, W warnings), K kernels analyzed, S need a spec``."""
    s = report.summary()
    parts = [_plural(s["errors"], "error"), _plural(s["warnings"], "warning")]
    if s["info"]:
        parts.append(f"{s['info']} info")
    text = f"{_plural(s['findings'], 'finding')} ({', '.join(parts)})"
    if s["suppressed"]:
        text += f", {s['suppressed']} suppressed"
    text += f", {_plural(s['analyzed'], 'kernel')} analyzed, {s['needs_spec']} need a spec"
    if s["kernel_errors"]:
        text += f", {s['kernel_errors']} failed"
    return text


def render_text(report: LintReport, *, color: bool = False, show_source: bool = True) -> str:
    """Ruff-like text: one block per unsuppressed finding, a matrix per kernel, then totals."""
    lines: list[str] = []
    for finding in report.active_findings():
        lines += _finding_lines(finding, color=color, show_source=show_source)
    kernels = sorted(report.kernels, key=lambda k: (k.path, k.line, k.name))
    if kernels:
        if lines:
            lines.append("")
        for kernel in kernels:
            lines += _kernel_lines(kernel, color)
    if lines:
        lines.append("")
    lines.append(totals_line(report))
    return "\n".join(lines) + "\n"


# -- JSON ------------------------------------------------------------------------


def report_json(report: LintReport) -> dict[str, Any]:
    """The JSON document as a Python mapping (schema_version 1)."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kernels": [k.to_json() for k in sorted(report.kernels, key=lambda k: (k.path, k.line, k.name))],
        "findings": [f.to_json() for f in report.all_findings()],
        "unused_suppressions": [{"path": p, "line": line, "code": c}
                                for p, line, c in sorted(report.unused_suppressions)],
        "summary": report.summary(),
    }


def render_json(report: LintReport) -> str:
    """The JSON output, indented, keys in a fixed order."""
    return json.dumps(report_json(report), indent=2) + "\n"


# -- SARIF -----------------------------------------------------------------------


def artifact_uri(path: str) -> str:
    """A SARIF artifact URI: relative paths with forward slashes, absolute ones as ``file://``; both
    percent-encoded (``x #1.py`` is ``x%20%231.py``, ``c%41.py`` is ``c%2541.py``), as RFC 3986 wants."""
    windows = PureWindowsPath(path)
    if windows.drive:
        return windows.as_uri()
    posix = PurePosixPath(path.replace("\\", "/"))
    return posix.as_uri() if posix.is_absolute() else quote(posix.as_posix(), safe="/")


def _rule_descriptions(codes: Iterable[str]) -> dict[str, tuple[str, str]]:
    """``code -> (short, full)`` from the built-in rules and :data:`LINT_CODES`."""
    out = {c.code: (c.summary, c.summary) for c in LINT_CODES.values()}
    wanted = set(codes) - set(out)
    if wanted:
        from ..judge.ruleset import builtin_rules  # loading the YAML rules is only needed here

        for rule in builtin_rules():
            if rule.code in wanted:
                out[rule.code] = (rule.summary, (rule.rationale or rule.summary).strip())
    return out


def help_page(code: str) -> str:
    """The documentation page of a code, as a path in kernelrules' source tree."""
    if code in LINT_CODES:
        return "docs/lint-output.md#lint-codes"
    return f"docs/rules/{code}.md"


def sarif_rules(findings: list[Finding]) -> list[dict[str, Any]]:
    """One ``reportingDescriptor`` per code that appears, sorted by code."""
    first: dict[str, Finding] = {}
    for f in findings:
        first.setdefault(f.code, f)
    texts = _rule_descriptions(first)
    rules = []
    for code in sorted(first):
        f = first[code]
        short, full = texts.get(code, (f.name, f.name))
        rules.append({
            "id": code,
            "name": f.name,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full},
            "help": {"text": f"{full}\n\nReference: {help_page(code)} in the kernelrules source.",
                     "markdown": f"{full}\n\nReference: `{help_page(code)}` in the kernelrules source."},
            "defaultConfiguration": {"level": SARIF_LEVELS[f.severity]},
        })
    return rules


def sarif_result(f: Finding, rule_index: int) -> dict[str, Any]:
    """One SARIF ``result``; a suppressed finding keeps an ``inSource`` suppression."""
    result: dict[str, Any] = {
        "ruleId": f.code,
        "ruleIndex": rule_index,
        "level": SARIF_LEVELS[f.severity],
        "message": {"text": f.message},
        "locations": [{
            "physicalLocation": {
                "artifactLocation": {"uri": artifact_uri(f.path)},
                "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
            }
        }],
    }
    props = {k: v for k, v in (("kernel", f.kernel), ("arch", f.arch), ("config", f.config),
                               ("repair", f.repair), ("fix", f.fix)) if v is not None}
    if props:
        result["properties"] = props
    if f.suppressed:
        result["suppressions"] = [{"kind": "inSource"}]
    return result


def report_sarif(report: LintReport) -> dict[str, Any]:
    """The SARIF 2.1.0 log as a Python mapping: one run, every finding (suppressed ones tagged)."""
    from .. import __version__

    findings = report.all_findings()
    rules = sarif_rules(findings)
    index = {r["id"]: i for i, r in enumerate(rules)}
    driver = {"name": "kernelrules", "version": __version__, "rules": rules}
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{"tool": {"driver": driver},
                  "results": [sarif_result(f, index[f.code]) for f in findings]}],
    }


def render_sarif(report: LintReport) -> str:
    """The SARIF 2.1.0 output, indented."""
    return json.dumps(report_sarif(report), indent=2) + "\n"


# -- GitHub annotations ------------------------------------------------------------


def escape_data(text: str) -> str:
    """Escape a workflow command's message: ``%``, ``\\r``, ``\\n``."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command property value: the data escapes plus ``:`` and ``,``."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(f: Finding) -> str:
    """``::error file=...,line=...,col=...,title=CODE::message`` for one finding."""
    props = {"file": f.path.replace("\\", "/"), "line": str(f.line), "col": str(f.column),
             "title": f"{f.code} {f.name}"}
    rendered = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    message = f.message + (f" ({f.arch})" if f.arch else "")
    return f"::{GITHUB_COMMANDS[f.severity]} {rendered}::{escape_data(message)}"


def render_github(report: LintReport) -> str:
    """One GitHub workflow command per unsuppressed finding."""
    return "".join(github_annotation(f) + "\n" for f in report.active_findings())


# -- exit code -----------------------------------------------------------------------


def exit_code(report: LintReport, fail_on: str = "error", exit_zero: bool = False) -> int:
    """0 when clean, 1 when an unsuppressed finding is at least as severe as ``fail_on``.

    ``exit_zero`` forces 0. Exit code 2 (usage and configuration errors) is
    raised elsewhere, as :class:`~kernelrules.errors.KernelrulesError`.
    """
    if fail_on not in SEVERITY_RANK:
        raise KernelrulesError(f"unknown fail-on level {fail_on!r}", hint=f"use one of {', '.join(SEVERITIES)}")
    if exit_zero:
        return 0
    threshold = SEVERITY_RANK[fail_on]
    failing = any(SEVERITY_RANK[f.severity] <= threshold for f in report.active_findings())
    return 1 if failing else 0
