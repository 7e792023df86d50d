"""Rules as data: load, validate and check the YAML rule files.

Each file in ``rules/`` (shipped as ``kernelrules.rules``) is one rule. Loading
validates it against ``schemas/rule.schema.json``, parses its condition,
message placeholders and repairs with the expression language, and checks
every name and function they use, so a broken rule is an error naming the
file, line and column at load, never a surprise at evaluation.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import jsonschema

from .. import expr as exprlang
from ..errors import RuleFileError
from .namespaces import FACTS, KERNEL
from .template import Template, TemplateError, parse_template
from ..yamlio import LocatedDocument, load_file, load_text

SEVERITIES = ("error", "warning", "info")
STAGES = ("config", "compiled")
SELECTORS = ("all", "nvidia", "amd")  # besides families and sm_XX / sm_XX+
_SELECTOR = re.compile(r"sm_(\d{2,3})([a-z]?)(\+?)\Z")


@dataclass(frozen=True)
class Compiled:
    """A parsed and checked expression with its fast evaluator."""

    source: str
    node: Any
    evaluate: Callable[[Mapping[str, Any]], Any]


@dataclass(frozen=True)
class Repair:
    """One config edit: set keys to expressions (``value`` is the key's current value) or remove keys."""

    description: str
    when: Compiled | None
    set: tuple[tuple[str, Compiled], ...]
    remove: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class Rule:
    """One loaded rule."""

    code: str
    name: str
    aliases: tuple[str, ...]
    summary: str
    severity: str
    stage: str
    applies_to: tuple[str, ...]
    condition: Compiled
    message: Template
    repairs: tuple[Repair, ...]
    rationale: str
    references: tuple[str, ...]
    examples: Mapping[str, Sequence[Mapping[str, Any]]]
    path: str

    @property
    def roots(self) -> frozenset[str]:
        """Namespaces the condition reads; a rule that does not read ``config`` judges all configs alike."""
        return _condition_names(self)[0]

    @property
    def fact_names(self) -> frozenset[str]:
        """The facts the condition names: the rule judges only when all of them are known."""
        return _condition_names(self)[1]



    def applies(self, arch: Any) -> bool:
        """Whether this rule judges configs for ``arch`` (an :class:`~kernelrules.arch.Arch`)."""
        return any(selector_matches(s, arch) for s in self.applies_to)


@lru_cache(maxsize=None)
def _condition_names(rule: "Rule") -> tuple[frozenset[str], frozenset[str]]:
    names = [n for n in exprlang.ast.walk(rule.condition.node) if isinstance(n, exprlang.Name)]
    roots = frozenset(n.root for n in names)
    facts = frozenset(n.parts[1] for n in names if n.root == "facts" and len(n.parts) > 1)
    return roots, facts


def architecture_families() -> tuple[str, ...]:
    """The families of the architecture profiles, in profile order: the family selectors of
    ``applies_to``. A new family is a new profile file; no code names the families."""
    from ..arch import list_archs

    return tuple(dict.fromkeys(arch.family for arch in list_archs()))


def selector_matches(selector: str, arch: Any) -> bool:
    """Match one ``applies_to`` selector: all, a vendor, a family, ``sm_80`` or ``sm_80+``."""
    if selector == "all":
        return True
    if selector in ("nvidia", "amd"):
        return arch.vendor == selector
    match = _SELECTOR.match(selector)
    if match is None:
        return arch.family == selector
    if arch.vendor != "nvidia":
        return False
    sm = int(match.group(1))
    return arch.sm >= sm if match.group(3) else arch.sm == sm


class RuleSet:
    """All loaded rules, addressable by code, name or alias."""

    def __init__(self, rules: Iterable[Rule]) -> None:
        self.rules: tuple[Rule, ...] = tuple(sorted(rules, key=lambda r: r.code))
        self._index: dict[str, Rule] = {}
        for rule in self.rules:
            for key in (rule.code, rule.name, *rule.aliases):
                other = self._index.get(key.lower())
                if other is not None and other is not rule:
                    raise RuleFileError(f"rule identifier {key!r} is used by {other.code} too", path=rule.path)
                self._index[key.lower()] = rule

    def __iter__(self):
        return iter(self.rules)

    def __len__(self) -> int:
        return len(self.rules)

    def get(self, key: str) -> Rule | None:
        """Find a rule by code, name or alias (case-insensitive)."""
        return self._index.get(key.strip().lower())

    def select(self, select: Sequence[str] = (), ignore: Sequence[str] = ()) -> "RuleSet":
        """The rules a :class:`RuleSelection` of ``select`` and ``ignore`` enables (all when both are empty)."""
        selection = RuleSelection(tuple(select), tuple(ignore))
        return RuleSet(r for r in self.rules if selection.enabled(r.code, r.name))


def _matches(code: str, name: str | None, selectors: Sequence[str]) -> bool:
    """Whether a selector names the rule: ``ALL``, a code prefix (any case) or the rule's name."""
    return any(s.upper() == "ALL" or code.upper().startswith(s.upper()) or (name is not None and name == s.lower())
               for s in selectors)


@dataclass(frozen=True)
class RuleSelection:
    """Which findings a lint run reports, as ruff selects: ``select``, ``ignore``, ``extend_select``
    and ``per_file_ignores`` (glob → selectors ignored in the files it matches).

    A selector is ``ALL``, a code or code prefix (``MEM``, ``MEM001``) or a rule name. An empty
    ``select`` selects every code; ``extend_select`` adds to a non-empty one. Per-file globs match
    the path relative to ``root`` (the pyproject's directory) and the path as given.
    """

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: Mapping[str, Sequence[str]] = field(default_factory=dict)
    root: Path | None = None

    def enabled(self, code: str, name: str | None = None, path: str | None = None) -> bool:
        """Whether the rule ``code`` (named ``name``) is reported, in ``path`` when given."""
        selected = not self.select or _matches(code, name, self.select) or _matches(code, name, self.extend_select)
        if not selected or _matches(code, name, self.ignore):
            return False
        return path is None or not _matches(code, name, self.ignores_for(path))

    def ignores_for(self, path: str) -> list[str]:
        """The ``per_file_ignores`` selectors whose glob matches ``path``."""
        candidates = {Path(path).as_posix()}
        if self.root is not None:
            try:
                candidates.add(Path(path).resolve().relative_to(self.root.resolve()).as_posix())
            except ValueError:
                pass
        return [code for glob, codes in self.per_file_ignores.items()
                if any(fnmatch.fnmatch(c, glob) for c in candidates) for code in codes]


# -- loading -------------------------------------------------------------------


@lru_cache(maxsize=1)
def _schema_validator() -> jsonschema.protocols.Validator:
    text = resources.files("kernelrules.schemas").joinpath("rule.schema.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    return jsonschema.Draft202012Validator(schema)


@lru_cache(maxsize=1)
def _arch_fields() -> frozenset[str] | None:
    """Every field an ``arch.*`` name may use: the union of the built-in profiles' flat keys."""
    try:
        from ..arch import list_archs, list_skus
    except ImportError:  # pragma: no cover - the arch module is part of the package
        return None
    fields: set[str] = set()
    for arch in [*list_archs(), *list_skus()]:
        fields.update(arch.flat())
    return frozenset(fields)


def expression_roots() -> dict[str, Any]:
    """Namespace roots rule expressions may use, with their known fields (None: open)."""
    return {
        "config": None,
        "problem": None,
        "arch": _arch_fields(),
        "facts": frozenset(FACTS),
        "kernel": frozenset(KERNEL),
    }


def _locate(doc: LocatedDocument, path: tuple, line: int = 1, column: int = 1) -> tuple[int | None, int | None]:
    """Map a position inside an expression string back to the rule file."""
    where = doc.positions.get(path + ("<value>",)) or doc.where(path)
    if where is None:
        return None, None
    value_line, value_col = where
    raw = doc.text.splitlines()[value_line - 1] if doc.text else ""
    lead = raw[value_col - 1 : value_col] if len(raw) >= value_col else ""
    if lead in ("|", ">"):  # block scalar: the text starts on the next line
        return value_line + line, None
    quote = 1 if lead in ("'", '"') else 0
    if line == 1:
        return value_line, value_col + quote + column - 1
    return value_line + line - 1, None


def _compile(doc: LocatedDocument, path: tuple, source: str, allow_value: bool = False) -> Compiled:
    """Parse and check one expression, raising a located RuleFileError."""
    try:
        node = exprlang.parse(source)
        problems = exprlang.check(node, expression_roots(), allow_value=allow_value)
    except exprlang.ExprError as exc:
        problems = [exc]
    if problems:
        first = problems[0]
        line, col = _locate(doc, path, first.line or 1, first.column or 1)
        where = ".".join(str(p) for p in path)
        raise RuleFileError(f"in '{where}': {first.message}", path=doc.source, line=line, column=col)
    return Compiled(source, node, exprlang.compile_expr(node))


def _template(doc: LocatedDocument, text: str) -> Template:
    try:
        template = parse_template(text)
    except TemplateError as exc:
        line, col = _locate(doc, ("message",), 1, exc.offset + 1)
        raise RuleFileError(f"in 'message': {exc}", path=doc.source, line=line, column=col) from None
    for ph in template.expressions():
        problems = exprlang.check(ph.node, expression_roots())
        if problems:
            line, col = _locate(doc, ("message",), 1, ph.offset + (problems[0].column or 1))
            raise RuleFileError(
                f"in 'message' placeholder {{{ph.source}}}: {problems[0].message}",
                path=doc.source,
                line=line,
                column=col,
            )
    return template


def _repairs(doc: LocatedDocument, items: Sequence[Mapping[str, Any]]) -> tuple[Repair, ...]:
    repairs = []
    for i, item in enumerate(items):
        base = ("repairs", i)
        when = _compile(doc, base + ("when",), item["when"]) if "when" in item else None
        sets = tuple(
            (key, _compile(doc, base + ("set", key), text, allow_value=True)) for key, text in item.get("set", {}).items()
        )
        repairs.append(Repair(item["description"], when, sets, tuple(item.get("remove", ()))))
    return tuple(repairs)


def _check_selectors(doc: LocatedDocument, selectors: Sequence[str]) -> None:
    """Every ``applies_to`` selector names a target (the schema checks only its spelling)."""
    families = architecture_families()
    for i, selector in enumerate(selectors):
        if selector in SELECTORS or selector in families or _SELECTOR.match(selector):
            continue
        line, col = doc.where(("applies_to", i)) or (None, None)
        raise RuleFileError(f"invalid rule at 'applies_to.{i}': unknown architecture selector {selector!r}",
                            path=doc.source, line=line, column=col,
                            hint=f"use {', '.join(SELECTORS)}, sm_XX, sm_XX+ or a family: {', '.join(families)}")


def rule_from_document(doc: LocatedDocument, expected_code: str | None = None) -> Rule:
    """Validate one parsed rule file and build its :class:`Rule`."""
    if not isinstance(doc.data, dict):
        raise RuleFileError("a rule file must be a YAML mapping", path=doc.source, line=1)
    validator = _schema_validator()
    error = jsonschema.exceptions.best_match(validator.iter_errors(doc.data))
    if error is not None:
        path = tuple(error.absolute_path)
        line, col = doc.where(path) or (None, None)
        key = ".".join(str(p) for p in path) or "<top level>"
        raise RuleFileError(f"invalid rule at '{key}': {error.message}", path=doc.source, line=line, column=col)
    data = doc.data
    _check_selectors(doc, data["applies_to"])
    if expected_code is not None and data["code"] != expected_code:
        line, col = doc.where(("code",)) or (None, None)
        raise RuleFileError(
            f"rule code {data['code']!r} does not match the file name {expected_code}.yaml",
            path=doc.source,
            line=line,
            column=col,
        )
    return Rule(
        code=data["code"],
        name=data["name"],
        aliases=tuple(data.get("aliases", ())),
        summary=data["summary"],
        severity=data["severity"],
        stage=data["stage"],
        applies_to=tuple(data["applies_to"]),
        condition=_compile(doc, ("condition",), data["condition"]),
        message=_template(doc, data["message"]),
        repairs=_repairs(doc, data.get("repairs", ())),
        rationale=data["rationale"].strip(),
        references=tuple(data["references"]),
        examples=data["examples"],
        path=doc.source,
    )


def load_rule_file(path: str | Path) -> Rule:
    """Load one rule file from disk (a user's own rule)."""
    path = Path(path)
    return rule_from_document(load_file(path, error=RuleFileError), expected_code=path.stem)


@lru_cache(maxsize=1)
def builtin_rules() -> RuleSet:
    """The rules shipped in the package, loaded once."""
    rules = []
    for entry in sorted(resources.files("kernelrules.rules").iterdir(), key=lambda e: e.name):
        if not entry.name.endswith(".yaml"):
            continue
        text = entry.read_text(encoding="utf-8")
        doc = load_text(text, f"rules/{entry.name}", RuleFileError)
        rules.append(rule_from_document(doc, expected_code=entry.name[: -len(".yaml")]))
    return RuleSet(rules)


def load_rules(extra: Sequence[str | Path] = ()) -> RuleSet:
    """Built-in rules plus rule files or directories of rule files given by the user."""
    if not extra:
        return builtin_rules()
    rules = list(builtin_rules())
    for item in extra:
        item = Path(item)
        files = sorted(item.glob("*.yaml")) if item.is_dir() else [item]
        rules.extend(load_rule_file(f) for f in files)
    return RuleSet(rules)
