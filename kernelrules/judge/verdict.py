"""What judging gives: a :class:`Verdict` per config, holding a :class:`Diagnostic` per finding.

A diagnostic's message is rendered from its rule's template when first read: judging many
configs only decides verdicts, and most messages are never shown.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from ..config import KernelConfig

_new_object = object.__new__


class Diagnostic:
    """One finding: which rule, how bad, what it says, and the first repair it suggests.

    The message is rendered from the rule's template when first read: judging
    many configs only decides verdicts, and most messages are never shown.
    """

    __slots__ = ("code", "name", "severity", "stage", "fix", "_message", "_template", "_env")

    def __init__(
        self,
        code: str,
        name: str,
        severity: str,
        message: str | None = None,
        stage: str = "config",
        fix: str | None = None,
        *,
        template: Any = None,
        env: Mapping[str, Any] | None = None,
    ) -> None:
        self.code, self.name, self.severity, self.stage, self.fix = code, name, severity, stage, fix
        self._message, self._template, self._env = message, template, env

    @classmethod
    def fired(cls, code: str, name: str, severity: str, stage: str, fix: str | None, template: Any,
              env: Mapping[str, Any]) -> "Diagnostic":
        """A rule's finding whose message is rendered from ``template`` in ``env`` when first read
        (``Diagnostic(code, name, severity, None, stage, fix, template=..., env=...)``, built faster)."""
        diagnostic = _new_object(cls)
        diagnostic.code, diagnostic.name, diagnostic.severity, diagnostic.stage = code, name, severity, stage
        diagnostic.fix, diagnostic._message, diagnostic._template, diagnostic._env = fix, None, template, env
        return diagnostic

    @property
    def message(self) -> str:
        """The rendered message, with the numbers filled in."""
        if self._message is None:
            self._message = self._template.render(self._env) if self._template is not None else ""
            self._template = self._env = None
        return self._message

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Diagnostic):
            return NotImplemented
        return self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"Diagnostic({self.code}, {self.severity}, {self.message!r})"

    def to_json(self) -> dict[str, Any]:
        """The JSON form shared by every command: code, name, severity, message (+ fix)."""
        out = {"code": self.code, "name": self.name, "severity": self.severity, "message": self.message}
        if self.fix:
            out["fix"] = self.fix
        return out


@dataclass
class Verdict:
    """The judgement of one config on one architecture."""

    config: KernelConfig
    arch: str
    stage: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    deferred: list[str] = field(default_factory=list)
    repair: KernelConfig | None = None
    repair_steps: tuple[str, ...] = ()

    @property
    def rejected(self) -> bool:
        """True when an error-severity rule fired."""
        return any(d.severity == "error" for d in self.diagnostics)

    @property
    def verdict(self) -> str:
        """``"reject"`` or ``"pass"``."""
        return "reject" if self.rejected else "pass"

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record of this verdict."""
        return {
            "config": self.config.to_dict(),
            "arch": self.arch,
            "verdict": self.verdict,
            "stage": self.stage,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "deferred": list(self.deferred),
            "repair": None if self.repair is None else self.repair.to_dict(),
            "repair_steps": list(self.repair_steps),
        }
