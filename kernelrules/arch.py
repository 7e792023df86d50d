"""Architecture profiles: the hardware limits and Triton features of each target GPU.

A profile file (``arch_profiles/<family>.yaml``, shipped as ``kernelrules.arch_profiles``)
describes one GPU family: per compute capability its ``limits`` and ``features``, and
its ``skus``. Every number carries its source. Files are validated against
``kernelrules/schemas/arch_profile.schema.json`` plus semantic checks when loaded, and a
malformed file is a one-line :class:`~kernelrules.errors.ProfileError` naming file, line
and key. User profiles (``--arch-file``) go through the same checks.

This module is pure data access: it imports neither the rule engine nor the CLI.
Name resolution rules are documented in :mod:`kernelrules.arch_names`.

Why over 400 lines: the profile model, its loading and its validation against the schema and the
sources, kept with the dataclasses they fill.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping, Sequence

import jsonschema
import yaml
from jsonschema.exceptions import best_match

from . import yamlio
from .arch_names import Declaration, NameIndex, Target
from .errors import KernelrulesError, ProfileError

__all__ = ["Arch", "load_arch", "list_archs", "list_skus", "known_names", "MEASURED"]

#: Prefix of a source that records a measurement instead of citing a ``sources`` tag.
MEASURED = "measured:"

_WHAT = "architecture profile"
DocPath = tuple[Any, ...]
PathLike = str | Path


@dataclass(frozen=True)
class Arch:
    """One resolved target: a compute capability and, optionally, one SKU of it.

    ``limits`` and ``features`` are per compute capability; ``sku_data`` holds the SKU's
    figures (``sm_count``, ``l2_bytes``, ...) when a SKU was selected. ``sources`` maps
    every field name to its source text as written in the profile.
    """

    name: str
    compute_capability: str
    sm: int
    vendor: str
    family: str
    sku: str | None = None
    limits: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    features: Mapping[str, Any] = field(default_factory=dict, compare=False, repr=False)
    sku_data: Mapping[str, Any] | None = field(default=None, compare=False, repr=False)
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    display_name: str = field(default="", compare=False)
    aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    skus: tuple[str, ...] = field(default=(), compare=False, repr=False)
    sku_display_name: str | None = field(default=None, compare=False, repr=False)
    sku_aliases: tuple[str, ...] = field(default=(), compare=False, repr=False)
    citations: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)
    origin: str = field(default="", compare=False, repr=False)
    backend: str = field(default="cuda", compare=False)

    @property
    def triton_target(self) -> tuple[str, int | str, int]:
        """``(backend, arch, warp_size)`` as in Triton's ``GPUTarget``: ``("cuda", 89, 32)``, ``("hip", "gfx942", 64)``."""
        warp_size = int(self.limits.get("warp_size", 32))
        return (self.backend, self.sm if self.backend == "cuda" else self.name, warp_size)

    @property
    def label(self) -> str:
        """``sm_89`` or ``sm_89 (rtx4090)``: how messages name this target."""
        return f"{self.name} ({self.sku})" if self.sku else self.name

    def flat(self) -> dict[str, Any]:
        """One JSON-ready object: identity, every limit and feature, and the SKU's figures."""
        out: dict[str, Any] = {
            "name": self.name,
            "compute_capability": self.compute_capability,
            "sm": self.sm,
            "vendor": self.vendor,
            "family": self.family,
            "backend": self.backend,
            "display_name": self.display_name,
            "aliases": list(self.aliases),
            "skus": list(self.skus),
            "sku": self.sku,
        }
        out.update((k, _plain(v)) for k, v in self.limits.items())
        out.update((k, _plain(v)) for k, v in self.features.items())
        if self.sku_data is not None:
            out["sku_display_name"] = self.sku_display_name
            out["sku_aliases"] = list(self.sku_aliases)
            out.update((k, _plain(v)) for k, v in self.sku_data.items())
        return out

    @cached_property
    def _namespace(self) -> dict[str, Any]:
        return self.flat()

    def namespace(self) -> dict[str, Any]:
        """The mapping rule expressions see as ``arch.*`` (cached; do not mutate it)."""
        return self._namespace

    def citation(self, key: str) -> str:
        """The source of ``key`` with its tag expanded to the full citation."""
        source = self.sources.get(key, "")
        tag = _source_tag(source)
        if tag in self.citations:
            return f"{source} [{tag}: {self.citations[tag]}]"
        return source

    def unverified(self) -> list[str]:
        """Fields whose source says the figure could not be verified."""
        return [k for k, s in self.sources.items() if "unverified" in s.lower()]


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


# -- public API ----------------------------------------------------------------------


def load_arch(name: str, extra_files: Sequence[PathLike] = ()) -> Arch:
    """Resolve ``name`` (``ada``, ``sm_86``, ``8.9``, ``rtx4090``, ...) to an :class:`Arch`.

    Raises :class:`~kernelrules.errors.UnknownArchError` (with close matches) for an
    unknown or ambiguous name and :class:`~kernelrules.errors.ProfileError` for a
    malformed profile file.
    """
    registry = _registry(_files_key(extra_files))
    target = registry.index.resolve(name)
    if target.sku is None:
        return registry.archs[target.arch]
    return registry.skus[(target.arch, target.sku)]


def list_archs(extra_files: Sequence[PathLike] = ()) -> list[Arch]:
    """One :class:`Arch` per compute capability (no SKU selected), sorted by vendor and sm."""
    return sorted(_registry(_files_key(extra_files)).archs.values(), key=_arch_order)


def list_skus(extra_files: Sequence[PathLike] = ()) -> list[Arch]:
    """One :class:`Arch` per SKU (``sku`` set), sorted by compute capability then SKU key."""
    skus = _registry(_files_key(extra_files)).skus.values()
    return sorted(skus, key=lambda a: (*_arch_order(a), a.sku or ""))


def known_names(extra_files: Sequence[PathLike] = ()) -> dict[str, Target]:
    """Every accepted spelling (canonical names and aliases) and the target it selects."""
    return _registry(_files_key(extra_files)).index.names()


def _arch_order(arch: Arch) -> tuple[int, int, str]:
    return (arch.vendor != "nvidia", arch.sm, arch.name)


# -- registry: all profiles, built once per set of extra files ----------------------


@dataclass(frozen=True)
class _Source:
    """A profile file's text and the name errors show for it."""

    origin: str
    text: str
    user: bool = False  # a --arch-file: parsed with positions at once (libyaml's fast path pays off for the built-ins)


@dataclass
class _Registry:
    archs: dict[str, Arch] = field(default_factory=dict)
    skus: dict[tuple[str, str], Arch] = field(default_factory=dict)
    index: NameIndex = field(default_factory=NameIndex)


def _files_key(extra_files: Sequence[PathLike]) -> tuple[tuple[str, int, int], ...]:
    """A cache key that changes when a user profile file is edited."""
    key = []
    for path in extra_files:
        try:
            stat = Path(path).stat()
        except OSError:
            raise ProfileError("architecture profile file not found", path=str(path)) from None
        key.append((str(path), stat.st_mtime_ns, stat.st_size))
    return tuple(key)


@lru_cache(maxsize=16)
def _registry(files_key: tuple[tuple[str, int, int], ...]) -> _Registry:
    sources = list(_builtin_sources()) + [_read_source(path) for path, _, _ in files_key]
    registry = _Registry()
    located = _Locator(sources)
    registry.index = NameIndex(locate=located.line)
    for source in sources:
        _register(registry, source, _parsed(source))
    return registry


@lru_cache(maxsize=1)
def _builtin_sources() -> tuple[_Source, ...]:
    package = resources.files("kernelrules.arch_profiles")
    files = sorted((f for f in package.iterdir() if f.name.endswith(".yaml")), key=lambda f: f.name)
    return tuple(_Source(str(f), f.read_text(encoding="utf-8")) for f in files)


def _read_source(path: str) -> _Source:
    """A user profile file (read within the YAML size bound); marked ``user`` so that it is parsed by
    :func:`kernelrules.yamlio.load_text`, with its alias and depth bounds, never by libyaml's fast path,
    which would expand an alias bomb for the schema check to walk."""
    from .inputfile import read_input_text

    text = read_input_text(path, yamlio.MAX_BYTES, error=ProfileError, missing="architecture profile file not found")
    return _Source(path, text, user=True)


def _register(registry: _Registry, source: _Source, data: dict[str, Any]) -> None:
    """Build the :class:`Arch` objects of one validated file and index their names."""
    for name, spec in data["architectures"].items():
        base = _base_arch(name, spec, data, source.origin)
        where = Declaration(Target(name), source.origin, ("architectures", name))
        registry.index.add_architecture(name, base.compute_capability, where)
        for i, alias in enumerate(spec["aliases"]):
            registry.index.add_alias(alias, replace(where, doc_path=where.doc_path + ("aliases", i)), sku_level=False)
        registry.archs[name] = base
        for sku_key, sku_spec in spec.get("skus", {}).items():
            sku_path = ("architectures", name, "skus", sku_key)
            sku_where = Declaration(Target(name, sku_key), source.origin, sku_path)
            registry.index.add_alias(sku_key, sku_where, sku_level=True)
            for i, alias in enumerate(sku_spec["aliases"]):
                registry.index.add_alias(alias, replace(sku_where, doc_path=sku_path + ("aliases", i)), sku_level=True)
            registry.skus[(name, sku_key)] = _sku_arch(base, sku_key, sku_spec)


def _base_arch(name: str, spec: Mapping[str, Any], data: Mapping[str, Any], origin: str) -> Arch:
    cc = spec["compute_capability"]
    limits, features = _values(spec["limits"]), _values(spec["features"])
    sources = {**_entry_sources(spec["limits"]), **_entry_sources(spec["features"])}
    return Arch(
        name=name,
        compute_capability=cc,
        sm=int(cc.replace(".", "")) if data["vendor"] == "nvidia" else 0,
        vendor=data["vendor"],
        family=data["family"],
        limits=MappingProxyType(limits),
        features=MappingProxyType(features),
        sources=MappingProxyType(sources),
        display_name=spec.get("display_name", name),
        aliases=tuple(spec["aliases"]),
        skus=tuple(spec.get("skus", {})),
        citations=MappingProxyType(dict(data["sources"])),
        origin=origin,
        backend=data.get("backend") or ("hip" if data["vendor"] == "amd" else "cuda"),
    )


def _sku_arch(base: Arch, key: str, spec: Mapping[str, Any]) -> Arch:
    entries = {k: v for k, v in spec.items() if isinstance(v, dict)}
    return replace(
        base,
        sku=key,
        sku_data=MappingProxyType(_values(entries)),
        sources=MappingProxyType({**base.sources, **_entry_sources(entries)}),
        sku_display_name=spec["display_name"],
        sku_aliases=tuple(spec["aliases"]),
    )


def _values(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``{key: value}`` from ``{key: {value, source}}``; lists become tuples (immutable)."""
    return {k: tuple(e["value"]) if isinstance(e["value"], list) else e["value"] for k, e in entries.items()}


def _entry_sources(entries: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    return {k: e["source"] for k, e in entries.items()}


# -- parsing and validation ----------------------------------------------------------


class _DuplicateKey(Exception):
    """Raised by the fast loader so the located loader can report the duplicate key."""


class _FastLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """libyaml-backed safe loader that refuses duplicate keys (PyYAML keeps the last one)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        mapping = super().construct_mapping(node, deep=deep)
        if len(mapping) != len(node.value):
            raise _DuplicateKey
        return mapping


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    text = resources.files("kernelrules.schemas").joinpath("arch_profile.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


@lru_cache(maxsize=64)
def _parsed(source: _Source) -> dict[str, Any]:
    """The validated data of one profile file.

    The fast libyaml path is tried first; positions (from :mod:`kernelrules.yamlio`)
    are computed only when something is wrong and an error must name a line.
    """
    try:
        data = _located(source).data if source.user else yaml.load(source.text, Loader=_FastLoader)
    except (yaml.YAMLError, _DuplicateKey, ValueError):  # ValueError: an integer of thousands of digits
        data = _located(source).data
    error = best_match(_validator().iter_errors(data))
    if error is not None:
        raise _as_profile_error(yamlio.schema_error(_located(source), _pin_unexpected_key(error), _WHAT))
    for doc_path, message in _semantic_problems(data):
        raise _problem(_located(source), doc_path, message)
    return data


@lru_cache(maxsize=64)
def _located(source: _Source) -> yamlio.LocatedDocument:
    """Parse with positions; a YAML syntax error becomes a located :class:`ProfileError`."""
    try:
        return yamlio.load_text(source.text, source.origin)
    except KernelrulesError as exc:
        raise _as_profile_error(exc) from None


def _pin_unexpected_key(error: jsonschema.ValidationError) -> jsonschema.ValidationError:
    """Point an ``additionalProperties`` error at the first unexpected key, not its parent."""
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        allowed = set(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        if extra:
            error.path.append(extra[0])
    return error


def _as_profile_error(exc: KernelrulesError) -> ProfileError:
    return ProfileError(exc.message, path=exc.path, line=exc.line, column=exc.column, hint=exc.hint)


def _problem(doc: yamlio.LocatedDocument, doc_path: DocPath, message: str) -> ProfileError:
    line, column = doc.where(doc_path) or (None, None)
    key = ".".join(str(p) for p in doc_path)
    return ProfileError(f"invalid {_WHAT} at '{key}': {message}", path=doc.source, line=line, column=column)


class _Locator:
    """Line numbers for index errors, parsing a file with positions only when asked."""

    def __init__(self, sources: Sequence[_Source]) -> None:
        self._by_origin = {s.origin: s for s in sources}

    def line(self, origin: str, doc_path: DocPath) -> int | None:
        source = self._by_origin.get(origin)
        where = _located(source).where(doc_path) if source else None
        return where[0] if where else None


# -- semantic checks (what the schema cannot say) ------------------------------------


def _semantic_problems(data: Mapping[str, Any]) -> Iterator[tuple[DocPath, str]]:
    """Yield ``(document path, message)`` for every inconsistency, in file order."""
    tags = set(data["sources"])
    for doc_path, entry in _entries(data):
        if not (entry["source"].startswith(MEASURED) or _source_tag(entry["source"]) in tags):
            known = ", ".join(sorted(tags))
            yield doc_path + ("source",), f"source must start with a tag from 'sources' ({known}) or with '{MEASURED}'"
    for name, spec in data["architectures"].items():
        base = ("architectures", name)
        yield from _name_problems(data["vendor"], name, spec["compute_capability"], base)
        yield from _rule_problems(_LIMIT_RULES, _values(spec["limits"]), base + ("limits",))
        yield from _rule_problems(_FEATURE_RULES, _values(spec["features"]), base + ("features",))


def _entries(data: Mapping[str, Any]) -> Iterator[tuple[DocPath, Mapping[str, Any]]]:
    """Every ``{value, source}`` entry with its document path."""
    for name, spec in data["architectures"].items():
        for group in ("limits", "features"):
            for key, entry in spec[group].items():
                yield ("architectures", name, group, key), entry
        for sku, sku_spec in spec.get("skus", {}).items():
            for key, entry in sku_spec.items():
                if isinstance(entry, dict):
                    yield ("architectures", name, "skus", sku, key), entry


def _source_tag(source: str) -> str:
    words = source.split(None, 1)
    return words[0].rstrip(":,;") if words else ""


def _name_problems(vendor: str, name: str, cc: str, base: DocPath) -> Iterator[tuple[DocPath, str]]:
    expected = "sm_" + cc.replace(".", "")
    if vendor == "nvidia" and name != expected:
        yield base + ("compute_capability",), f"'{name}' does not match compute capability {cc} (expected {expected})"
    if vendor == "amd" and name != "gfx" + cc.replace(".", ""):
        # gfx942 <-> "9.4.2": the GFX IP major, minor and stepping of the LLVM target name
        yield base + ("compute_capability",), f"'{name}' does not match GFX IP version {cc} (expected gfx{cc.replace('.', '')})"


#: ``(key reported, check, message)``: each check gets the values of one limits/features block.
Rule = tuple[str, Callable[[Mapping[str, Any]], bool], str]

_LIMIT_RULES: tuple[Rule, ...] = (
    ("max_threads_per_sm", lambda v: v["max_threads_per_sm"] == v["max_warps_per_sm"] * v["warp_size"],
     "must equal max_warps_per_sm * warp_size"),
    ("max_threads_per_block", lambda v: v["max_threads_per_block"] <= v["max_threads_per_sm"],
     "must not exceed max_threads_per_sm"),
    ("max_threads_per_block", lambda v: v["max_threads_per_block"] % v["warp_size"] == 0,
     "must be a multiple of warp_size"),
    ("registers_per_block", lambda v: v["registers_per_block"] <= v["registers_per_sm"],
     "must not exceed registers_per_sm"),
    ("registers_per_sm", lambda v: v["registers_per_sm"] % (v["register_sub_partitions"] * v["register_allocation_unit"]) == 0,
     "must be a multiple of register_sub_partitions * register_allocation_unit"),
    ("shared_memory_per_block", lambda v: v["shared_memory_per_block"] <= v["shared_memory_per_block_optin"],
     "must not exceed shared_memory_per_block_optin"),
    ("shared_memory_per_block_optin",
     lambda v: v["shared_memory_per_block_optin"] + v["reserved_shared_memory_per_block"] <= v["shared_memory_per_sm"],
     "plus reserved_shared_memory_per_block must not exceed shared_memory_per_sm"),
    ("shared_memory_per_sm", lambda v: v["shared_memory_per_sm"] % v["shared_memory_allocation_granularity"] == 0,
     "must be a multiple of shared_memory_allocation_granularity"),
    ("shared_memory_carveout_steps", lambda v: list(v["shared_memory_carveout_steps"]) == sorted(set(v["shared_memory_carveout_steps"])),
     "must be strictly increasing (bytes)"),
    ("shared_memory_carveout_steps", lambda v: v["shared_memory_carveout_steps"][-1] == v["shared_memory_per_sm"],
     "must end at shared_memory_per_sm (steps are in bytes)"),
)

_FEATURE_RULES: tuple[Rule, ...] = (
    ("fp8_mma_dtypes", lambda f: set(f["fp8_mma_dtypes"]) <= set(f["fp8_dtypes"]),
     "must be a subset of fp8_dtypes"),
    ("fp8_tensor_cores", lambda f: f["fp8_tensor_cores"] == bool(f["fp8_mma_dtypes"]),
     "must be true exactly when fp8_mma_dtypes is not empty"),
    ("max_num_ctas", lambda f: f["clusters"] or f["max_num_ctas"] == 1,
     "must be 1 when clusters is false"),
    ("deprecated_fp8_dot_operand_dtypes",
     lambda f: set(f.get("deprecated_fp8_dot_operand_dtypes", ())) <= set(f["fp8_dtypes"]),
     "must be a subset of fp8_dtypes"),
)


def _rule_problems(rules: Sequence[Rule], values: Mapping[str, Any], base: DocPath) -> Iterator[tuple[DocPath, str]]:
    for key, check, message in rules:
        if not check(values):
            yield base + (key,), f"{key} = {_plain(values[key])} {message}"
