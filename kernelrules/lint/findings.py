"""The data model of ``kernelrules lint``: findings, per-kernel reports, the whole report.

The lint command fills a :class:`LintReport`; the reporters in
:mod:`kernelrules.lint.reporters` only read it. Rule findings carry the codes of the
YAML rules (``MEM001``, ...). Problems found by the lint command itself use the
reserved ``LNT`` codes of :data:`LINT_CODES`; they are not YAML rules and are
documented in ``docs/lint-output.md``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

#: Severities, most severe first.
SEVERITIES = ("error", "warning", "info")

#: Rank of each severity: lower is more severe.
SEVERITY_RANK = {name: rank for rank, name in enumerate(SEVERITIES)}

#: Kernel statuses: judged, could not be judged for lack of a signature, failed.
KERNEL_STATUSES = ("analyzed", "needs-spec", "error")


@dataclass(frozen=True)
class LintCode:
    """A code the lint command reports itself (not a YAML rule)."""

    code: str
    name: str
    severity: str
    summary: str


#: The lint command's own codes, by code.
LINT_CODES: dict[str, LintCode] = {
    c.code: c
    for c in (
        LintCode("LNT001", "needs-spec", "warning",
                 "A kernel's launch signature could not be found, so its configs were not judged."),
        LintCode("LNT002", "unparseable-autotune", "warning",
                 "An @triton.autotune config list could not be read statically."),
        LintCode("LNT003", "unused-suppression", "warning",
                 "A `# kernelrules: ignore[...]` entry suppressed nothing."),
        LintCode("LNT004", "file-error", "error",
                 "A file could not be read or does not parse as Python."),
        LintCode("LNT005", "not-judged", "warning",
                 "Configs were judged without the predictions a rule needs (the probe compiles failed), "
                 "so what those rules check was not checked."),
        LintCode("LNT006", "autotune-side-effect", "error",
                 "An autotuned kernel updates an argument in place or accumulates into it (tl.atomic_add), and "
                 "the autotuner's timing runs corrupt it: it is not in reset_to_zero or restore_value."),
        LintCode("LNT007", "pinned-stale", "warning",
                 "A pinned-table entry was tuned for another version of the kernel's source (its source_sha256 "
                 "differs)."),
        LintCode("LNT008", "pinned-never-matches", "error",
                 "No launch can match a pinned-table entry: its key names are not the kernel's autotune key, or its "
                 "dtypes name arguments that are not tensors of the kernel."),
        LintCode("LNT009", "pinned-config-rejected", "error",
                 "A pinned-table entry's config cannot launch on its architecture: the rules reject it, or it sets "
                 "a name that is not a constexpr of the kernel."),
    )
}


@dataclass
class Finding:
    """One reported problem at one place in a file.

    ``line`` and ``column`` are 1-based. ``kernel``, ``arch`` and ``config``
    say which kernel, architecture and config the finding is about, when it is
    about one; ``repair`` is the nearest passing config, when one was found.
    """

    path: str
    line: int
    column: int
    code: str
    name: str
    severity: str
    message: str
    kernel: str | None = None
    arch: str | None = None
    config: dict[str, Any] | None = None
    fix: str | None = None
    repair: dict[str, Any] | None = None
    suppressed: bool = False
    source_line: str | None = None

    def sort_key(self) -> tuple:
        """Deterministic order: path, line, column, code, then the rest."""
        return (self.path, self.line, self.column, self.code, self.arch or "", self.kernel or "",
                self.message)

    def to_json(self) -> dict[str, Any]:
        """Every field, JSON-ready."""
        return asdict(self)


def lint_finding(code: str, path: str, line: int, message: str, *, column: int = 1,
                 kernel: str | None = None, source_line: str | None = None) -> Finding:
    """A finding with one of the lint command's own :data:`LINT_CODES`."""
    spec = LINT_CODES[code]
    return Finding(path=path, line=line, column=column, code=code, name=spec.name,
                   severity=spec.severity, message=message, kernel=kernel, source_line=source_line)


@dataclass
class KernelReport:
    """What lint learned about one ``@triton.jit`` kernel.

    ``records`` are the per-config, per-architecture records exactly as
    :meth:`kernelrules.judge.pipeline.PruneRecord.to_json` writes them. ``message``
    explains a ``needs-spec`` or ``error`` status.
    """

    path: str
    name: str
    line: int
    status: str
    signature_provenance: dict[str, str] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    message: str | None = None
    #: Lines where a suppression comment covers the whole kernel (def, decorators).
    anchor_lines: list[int] = field(default_factory=list)
    #: (config dict, line of its triton.Config(...)) for config-line suppressions.
    config_lines: list[tuple[dict[str, Any], int]] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The kernel entry of the JSON output (``records`` become ``results``)."""
        return {
            "path": self.path,
            "name": self.name,
            "line": self.line,
            "status": self.status,
            "signature_provenance": dict(self.signature_provenance),
            "message": self.message,
            "results": list(self.records),
        }


@dataclass
class LintReport:
    """Everything one lint run found.

    ``findings`` are rule findings, ``problems`` file- or kernel-level
    findings with ``LNT`` codes, ``unused_suppressions`` the
    ``(path, line, code)`` suppression entries that suppressed nothing.
    """

    kernels: list[KernelReport] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unused_suppressions: list[tuple[str, int, str]] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    def unused_suppression_findings(self) -> list[Finding]:
        """One ``LNT003`` finding per unused suppression entry."""
        return [lint_finding("LNT003", path, line, f"unused suppression for {code}")
                for path, line, code in self.unused_suppressions]

    def all_findings(self) -> list[Finding]:
        """Rule findings, problems and unused suppressions, sorted; suppressed ones included."""
        every = [*self.findings, *self.problems, *self.unused_suppression_findings()]
        return sorted(every, key=Finding.sort_key)

    def active_findings(self) -> list[Finding]:
        """:meth:`all_findings` without the suppressed ones."""
        return [f for f in self.all_findings() if not f.suppressed]

    def summary(self) -> dict[str, int]:
        """Counts for the totals line and the JSON ``summary``."""
        every = self.all_findings()
        active = [f for f in every if not f.suppressed]
        counts = {s: sum(1 for f in active if f.severity == s) for s in SEVERITIES}
        statuses = {s: sum(1 for k in self.kernels if k.status == s) for s in KERNEL_STATUSES}
        return {
            "findings": len(active),
            "errors": counts["error"],
            "warnings": counts["warning"],
            "info": counts["info"],
            "suppressed": len(every) - len(active),
            "kernels": len(self.kernels),
            "analyzed": statuses["analyzed"],
            "needs_spec": statuses["needs-spec"],
            "kernel_errors": statuses["error"],
        }
