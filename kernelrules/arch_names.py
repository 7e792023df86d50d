"""Resolve user-typed architecture names (``ada``, ``sm86``, ``8.9``, ``rtx4090``) to a profile.

Resolution order, case-insensitive, with spaces, ``-`` and ``_`` ignored:

1. the exact canonical name of a compute capability (``sm_89``);
2. a compute-capability form: ``sm86``, ``sm_86``, ``sm_90a``, ``cc86``, ``compute_86``,
   ``8.6``, ``cc8.6`` (a form naming a capability no profile defines is an error);
3. an architecture (family) alias declared under ``aliases`` of a compute capability;
4. a SKU key or one of the SKU's ``aliases`` (selects that compute capability *and* SKU).

An alias declared for two targets in the same file is ambiguous: resolving it is an
error listing the candidates. An alias (or canonical name) defined in two different
files is a load error, as is an alias that looks like a compute-capability name
(it could never be reached). Unknown names get close matches in the error hint.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from .errors import ProfileError, UnknownArchError

#: Hint appended to every unknown-name error.
LIST_HINT = "see 'kernelrules arch list'"

_SEPARATORS = re.compile(r"[\s_-]+")
_CC_PREFIXED = re.compile(r"(?:sm|cc|compute)(\d{1,2})(\d)a?\Z")
_CC_DOTTED = re.compile(r"(?:sm|cc|compute)?(\d{1,2})\.(\d)\Z")


def normalize(name: str) -> str:
    """Lower-case ``name`` and drop spaces, dashes and underscores (``H100 SXM`` -> ``h100sxm``)."""
    return _SEPARATORS.sub("", name.strip().lower())


def parse_compute_capability(name: str) -> str | None:
    """``"8.9"`` for any compute-capability spelling of 8.9, else None."""
    text = normalize(name)
    match = _CC_PREFIXED.match(text) or _CC_DOTTED.match(text)
    if not match:
        return None
    return f"{int(match.group(1))}.{int(match.group(2))}"


@dataclass(frozen=True)
class Target:
    """What a name resolves to: a compute capability (``sm_89``) and optionally a SKU key."""

    arch: str
    sku: str | None = None

    def __str__(self) -> str:
        return self.sku or self.arch


@dataclass(frozen=True)
class Declaration:
    """Where a name was declared: the target, the file and the path of the key in it."""

    target: Target
    origin: str
    doc_path: tuple[Any, ...] = ()


#: Maps (file, path of a key in it) to the key's line, for error messages.
Locate = Callable[[str, tuple[Any, ...]], "int | None"]


def _no_line(origin: str, doc_path: tuple[Any, ...]) -> None:
    return None


@dataclass
class NameIndex:
    """Every accepted name of every loaded profile, built once per set of profile files."""

    locate: Locate = _no_line
    canonical: dict[str, Declaration] = field(default_factory=dict)
    capabilities: dict[str, str] = field(default_factory=dict)
    arch_aliases: dict[str, list[Declaration]] = field(default_factory=dict)
    sku_aliases: dict[str, list[Declaration]] = field(default_factory=dict)
    spellings: dict[str, str] = field(default_factory=dict)

    # -- building ------------------------------------------------------------------

    def add_architecture(self, name: str, compute_capability: str, where: Declaration) -> None:
        """Register a compute capability's canonical name; a second file defining it is an error."""
        key = normalize(name)
        previous = self.canonical.get(key)
        if previous is not None:
            raise ProfileError(
                f"architecture '{name}' is already defined in {previous.origin}",
                path=where.origin,
                line=self.locate(where.origin, where.doc_path),
                hint="each compute capability may be defined by one profile file only",
            )
        self.canonical[key] = where
        if compute_capability.count(".") == 1:
            self.capabilities[compute_capability] = name
        else:  # an AMD GFX IP version (9.4.2 for gfx942) names its target directly
            self.canonical.setdefault(normalize(compute_capability), where)
            self.spellings.setdefault(normalize(compute_capability), compute_capability)
        self.spellings.setdefault(key, name)

    def add_alias(self, alias: str, where: Declaration, *, sku_level: bool) -> None:
        """Register an alias of an architecture (``sku_level=False``) or of a SKU."""
        key = normalize(alias)
        if key in self.canonical or parse_compute_capability(alias) is not None:
            raise ProfileError(
                f"alias '{alias}' looks like a compute-capability name and could never be resolved",
                path=where.origin,
                line=self.locate(where.origin, where.doc_path),
            )
        for table in (self.arch_aliases, self.sku_aliases):
            for other in table.get(key, ()):
                if other.origin != where.origin:
                    raise ProfileError(
                        f"alias '{alias}' is already defined in {other.origin} (for {other.target})",
                        path=where.origin,
                        line=self.locate(where.origin, where.doc_path),
                        hint="aliases must be unique across profile files",
                    )
        table = self.sku_aliases if sku_level else self.arch_aliases
        entries = table.setdefault(key, [])
        if all(e.target != where.target for e in entries):
            entries.append(where)
        self.spellings.setdefault(key, alias)

    # -- resolving -----------------------------------------------------------------

    def resolve(self, name: str) -> Target:
        """The target ``name`` designates; :class:`UnknownArchError` when none or ambiguous."""
        key = normalize(name)
        if not key:
            raise UnknownArchError("empty architecture name", hint=LIST_HINT)
        if key in self.canonical:
            return self.canonical[key].target
        capability = parse_compute_capability(name)
        if capability is not None:
            return self._by_capability(name, capability)
        for table in (self.arch_aliases, self.sku_aliases):
            entries = table.get(key)
            if entries:
                return _single(name, entries)
        raise UnknownArchError(f"unknown architecture '{name}'", hint=self._suggestion_hint(key))

    def _by_capability(self, name: str, capability: str) -> Target:
        arch = self.capabilities.get(capability)
        if arch is None:
            known = ", ".join(sorted(self.capabilities, key=_cc_order))
            raise UnknownArchError(
                f"unknown architecture '{name}': no profile for compute capability {capability}",
                hint=f"profiles exist for {known}; {LIST_HINT}",
            )
        return Target(arch)

    def _suggestion_hint(self, key: str) -> str:
        """``did you mean: a, b? see ...`` from difflib, widened to aliases that extend a match."""
        close = difflib.get_close_matches(key, self.spellings, n=4, cutoff=0.6)
        picked: list[str] = []
        for match in close:
            for other in sorted(self.spellings, key=len):
                if other.startswith(match) and self.spellings[other] not in picked:
                    picked.append(self.spellings[other])
        if not picked:
            return LIST_HINT
        return f"did you mean: {', '.join(picked[:6])}? {LIST_HINT}"

    def names(self) -> dict[str, Target]:
        """Every declared spelling (canonical names and unambiguous aliases) and its target."""
        result = {self.spellings[k]: d.target for k, d in self.canonical.items()}
        for table in (self.arch_aliases, self.sku_aliases):
            for key, entries in table.items():
                if len(entries) == 1:
                    result.setdefault(self.spellings[key], entries[0].target)
        return result


def _single(name: str, entries: list[Declaration]) -> Target:
    if len(entries) == 1:
        return entries[0].target
    candidates = ", ".join(str(e.target) for e in entries)
    raise UnknownArchError(
        f"ambiguous architecture '{name}'",
        path=entries[0].origin,
        hint=f"it names {candidates}; use one of those names",
    )


def _cc_order(capability: str) -> tuple[int, int]:
    major, minor = capability.split(".")
    return int(major), int(minor)
