"""Pinned-config tables: per architecture and tuning key, the config to launch, with where it came from.

A table (``*.json``, ``kernelrules/schemas/pinned.schema.json``, docs/pinned.md) belongs
to one kernel and holds entries; each says: on this architecture (a profile name,
``sm_90``), for a launch whose autotune key arguments have these values and whose tensor
arguments these dtypes, launch this config. ``kernelrules tune --export`` writes entries,
``kernelrules pin merge`` combines tables, ``kernelrules.autotune(pinned=...)`` launches
them without benchmarking, and ``kernelrules lint --pinned`` checks them against the
kernel's source and the rules.

This module is the format alone: loading (schema, then meaning: a known architecture,
no two entries for the same launch), the canonical key a launch is looked up by, the
source hash that tells a stale entry, merging, and writing (atomic, entries sorted, so a
table under version control diffs cleanly). It imports neither Triton nor torch.
"""

from __future__ import annotations

import ast
import datetime
import hashlib
import json
import re
import textwrap
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .atomicio import write_output
from .errors import KernelrulesError

FORMAT = "kernelrules-pinned"
VERSION = 1
#: Set to 1 (or true/yes) to forbid benchmarking at run time in every ``kernelrules.autotune`` tuner.
NO_BENCHMARK_ENV = "KERNELRULES_NO_BENCHMARK"
#: Launch options of a config; every other config name is a constexpr.
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")

#: Triton's short type names (space files, ``*fp16`` pointers) -> torch's dtype names, the table's spelling.
_TRITON_TO_TORCH = {
    "fp16": "float16", "bf16": "bfloat16", "fp32": "float32", "fp64": "float64", "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2", "fp8e4b8": "float8_e4m3fnuz", "fp8e5b16": "float8_e5m2fnuz", "i1": "bool",
    "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32",
    "u64": "uint64",
}
TORCH_TO_TRITON = {v: k for k, v in _TRITON_TO_TORCH.items()}


def normalize_dtype(text: Any) -> str:
    """A dtype as the table spells it: torch's name without ``torch.`` (``float16``), from
    ``torch.float16``, ``float16``, ``fp16`` or ``*fp16``; anything else is kept as written."""
    name = str(text).strip().lstrip("*")
    name = name[len("torch."):] if name.startswith("torch.") else name
    return _TRITON_TO_TORCH.get(name, name)


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second (``2025-06-01T12:00:00Z``)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- the source hash ------------------------------------------------------------------------


def source_sha256(path: str | Path, name: str, line: int | None = None) -> str:
    """SHA-256 of a function's own text in ``path``: from its ``def`` line to its last line,
    decorators excluded, dedented, trailing whitespace of every line dropped, ``\\n`` line
    ends. ``line`` (any line from its first decorator to its ``def``) picks one of several
    functions of that name. Comments and the docstring count; called helpers do not.
    Raises KernelrulesError when the file cannot be read or has no such function."""
    try:
        text = Path(path).read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise KernelrulesError(f"cannot read the kernel source to hash it: {exc}", path=str(path)) from None
    found = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
    if line is not None and len(found) > 1:
        found = [n for n in found if min([d.lineno for d in n.decorator_list] + [n.lineno]) <= line <= n.lineno] or found
    if not found:
        raise KernelrulesError(f"no function {name!r} to hash", path=str(path))
    node = found[0]
    lines = text.splitlines()[node.lineno - 1: node.end_lineno]
    body = textwrap.dedent("\n".join(lines))
    canonical = "\n".join(part.rstrip() for part in body.split("\n")) + "\n"
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


# -- entries and tables ----------------------------------------------------------------------


def _scalar_items(mapping: Mapping[str, Any] | None) -> tuple | None:
    if mapping is None:
        return None
    return tuple(sorted((k, type(v).__name__ if isinstance(v, bool) else "", v) for k, v in mapping.items()))


@dataclass
class Entry:
    """One pinned launch: architecture, key values, dtypes (None: any), config, provenance."""

    arch: str
    key: dict[str, Any]
    config: dict[str, Any]
    dtypes: dict[str, str] | None = None
    source_sha256: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)
    line: int | None = None  # where the entry starts in the file it was loaded from

    def identity(self) -> tuple:
        """What two entries must share to describe the same launch (booleans kept apart from 0 and 1)."""
        return (self.arch, _scalar_items(self.key), _scalar_items(self.dtypes))

    def describe(self) -> str:
        """``sm_90 M=32, N=32, K=32 (a_ptr=float16, ...)`` for messages."""
        key = ", ".join(f"{k}={v}" for k, v in self.key.items()) or "no key"
        dtypes = "" if self.dtypes is None else " (" + ", ".join(f"{k}={v}" for k, v in self.dtypes.items()) + ")"
        return f"{self.arch} {key}{dtypes}"

    def config_text(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.config.items())

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"arch": self.arch, "key": dict(self.key)}
        if self.dtypes is not None:
            out["dtypes"] = dict(sorted(self.dtypes.items()))
        out["config"] = dict(self.config)
        if self.source_sha256:
            out["source_sha256"] = self.source_sha256
        if self.provenance:
            out["provenance"] = dict(self.provenance)
        return out


@dataclass
class PinnedTable:
    """A loaded table: the kernel it pins and its entries (see the module docstring)."""

    kernel: dict[str, Any]
    entries: list[Entry] = field(default_factory=list)
    path: Path | None = None

    @property
    def kernel_name(self) -> str:
        return str(self.kernel["name"])

    def lookup(self, arch: str, key: Mapping[str, Any], dtypes: Mapping[str, str] | None) -> Entry | None:
        """The entry for a launch: the one with these dtypes, else one that gives none; None if unlisted."""
        index = self._index()
        exact = index.get((arch, _scalar_items(key), _scalar_items(dtypes)))
        return exact if exact is not None else index.get((arch, _scalar_items(key), None))

    def _index(self) -> dict[tuple, Entry]:
        cached = getattr(self, "_cache", None)
        if cached is None or cached[0] != len(self.entries):
            cached = (len(self.entries), {e.identity(): e for e in self.entries})
            self._cache = cached
        return cached[1]

    def upsert(self, entry: Entry) -> Entry | None:
        """Put ``entry`` in, replacing the entry for the same launch (returned), as ``tune --export`` does."""
        for i, old in enumerate(self.entries):
            if old.identity() == entry.identity():
                self.entries[i] = entry
                return old
        self.entries.append(entry)
        return None

    def to_json(self) -> dict[str, Any]:
        entries = sorted(self.entries, key=lambda e: json.dumps([e.arch, e.key, e.dtypes], sort_keys=True, default=str))
        return {"format": FORMAT, "version": VERSION, "kernel": dict(self.kernel),
                "entries": [e.to_json() for e in entries]}

    def save(self, path: str | Path) -> None:
        """Write the table atomically (entries sorted by architecture, key and dtypes)."""
        write_output(path, json.dumps(self.to_json(), indent=2) + "\n")


@lru_cache(maxsize=1)
def _validator() -> Any:
    import jsonschema

    text = resources.files("kernelrules.schemas").joinpath("pinned.schema.json").read_text(encoding="utf-8")
    return jsonschema.Draft202012Validator(json.loads(text))


def _entry_lines(text: str) -> list[int]:
    """The line on which each element of the top-level ``entries`` array starts (best effort)."""
    match = re.search(r'"entries"\s*:\s*\[', text)
    if match is None:
        return []
    decoder, lines, i = json.JSONDecoder(), [], match.end()
    line, counted = 1, 0  # newlines before ``counted``, counted once (not from the start for every entry)
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            return lines
        try:
            _value, end = decoder.raw_decode(text, i)
        except ValueError:
            return lines
        line, counted = line + text.count("\n", counted, i), i
        lines.append(line)
        i = end


#: Largest pinned table read (a table of thousands of entries is a few hundred kB).
MAX_TABLE_BYTES = 8 * 1024 * 1024


def load_table(path: str | Path) -> PinnedTable:
    """Read and check a table; every problem is one KernelrulesError naming the file, the line
    of the entry where there is one, and the JSON path (``entries.2.config.num_warps``)."""
    from .inputfile import loads_json, read_input_text

    shown = str(path)
    text = read_input_text(path, MAX_TABLE_BYTES, missing="no such pinned table")
    return table_from_json(loads_json(text, shown=shown, label="not valid JSON"), shown, _entry_lines(text))


def table_from_json(data: Any, shown: str = "<table>", lines: Sequence[int] = ()) -> PinnedTable:
    """A table from parsed JSON (see :func:`load_table`)."""
    import jsonschema

    def line_of(where: Sequence[Any]) -> int | None:
        if len(where) >= 2 and where[0] == "entries" and isinstance(where[1], int) and where[1] < len(lines):
            return lines[where[1]]
        return None

    if isinstance(data, dict) and data.get("format") == FORMAT and data.get("version") not in (None, VERSION):
        raise KernelrulesError(f"pinned table version {data.get('version')!r} is not supported (this kernelrules reads "
                               f"version {VERSION})", path=shown, hint="upgrade kernelrules")
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        where = list(error.absolute_path)
        key = ".".join(str(p) for p in where) or "<top level>"
        message = error.message if len(error.message) <= 200 else error.message[:197] + "..."
        raise KernelrulesError(f"invalid pinned table at '{key}': {message}", path=shown, line=line_of(where),
                               hint="see docs/pinned.md")
    table = PinnedTable(kernel=dict(data["kernel"]), path=Path(shown))
    seen: dict[tuple, int] = {}
    for i, raw in enumerate(data["entries"]):
        entry = _entry(raw, i, shown, line_of(["entries", i]))
        if entry.identity() in seen:
            raise KernelrulesError(f"entries.{i} pins the same launch as entries.{seen[entry.identity()]} "
                                   f"({entry.describe()})", path=shown, line=entry.line,
                                   hint="keep one; 'kernelrules pin merge' picks one for you")
        seen[entry.identity()] = i
        table.entries.append(entry)
    return table


def _entry(raw: Mapping[str, Any], i: int, shown: str, line: int | None) -> Entry:
    from .arch import load_arch
    from .config import KernelConfig

    try:
        arch = load_arch(raw["arch"]).name
    except KernelrulesError as exc:
        raise KernelrulesError(f"entries.{i}.arch: {exc.message}", path=shown, line=line,
                               hint="see 'kernelrules arch list'") from None
    try:
        KernelConfig.from_dict(raw["config"]).validate()
    except KernelrulesError as exc:
        raise KernelrulesError(f"entries.{i}.config: {exc.message}", path=shown, line=line) from None
    dtypes = raw.get("dtypes")
    return Entry(arch=arch, key=dict(raw["key"]), config=dict(raw["config"]),
                 dtypes=None if dtypes is None else {k: normalize_dtype(v) for k, v in dtypes.items()},
                 source_sha256=raw.get("source_sha256"), provenance=dict(raw.get("provenance") or {}), line=line)


def new_table(kernel_name: str, module: str | None = None, key: Sequence[str] | None = None) -> PinnedTable:
    kernel: dict[str, Any] = {"name": kernel_name}
    if module:
        kernel["module"] = module
    if key is not None:
        kernel["key"] = list(key)
    return PinnedTable(kernel=kernel)


# -- merging --------------------------------------------------------------------------------


def _date(entry: Entry) -> datetime.datetime:
    text = str(entry.provenance.get("date") or "")
    try:
        parsed = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return datetime.datetime.min.replace(tzinfo=datetime.timezone.utc)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)


def comparable(a: Entry, b: Entry) -> bool:
    """Whether two timings may be compared: both measured (not under the interpreter) on the same
    GPU model for the same kernel source."""
    pa, pb = a.provenance, b.provenance
    return (isinstance(pa.get("ms"), (int, float)) and isinstance(pb.get("ms"), (int, float))
            and bool(pa.get("gpu")) and pa.get("gpu") == pb.get("gpu")
            and not pa.get("interpret") and not pb.get("interpret") and a.source_sha256 == b.source_sha256)


def pick(a: Entry, b: Entry) -> tuple[Entry, str]:
    """The entry to keep of two for the same launch, ``b`` coming later, and why:
    the faster when :func:`comparable`, else the newer (``provenance.date``), else the later one."""
    if comparable(a, b) and a.provenance["ms"] != b.provenance["ms"]:
        return (a, "faster") if a.provenance["ms"] < b.provenance["ms"] else (b, "faster")
    if _date(a) != _date(b):
        return (a, "newer") if _date(a) > _date(b) else (b, "newer")
    return b, "later"


@dataclass
class MergeResult:
    table: PinnedTable
    added: int = 0
    identical: int = 0
    conflicts: list[tuple[Entry, Entry, str]] = field(default_factory=list)  # (kept, dropped, why)

    def summary(self) -> str:
        why: dict[str, int] = {}
        for _kept, _dropped, reason in self.conflicts:
            why[reason] = why.get(reason, 0) + 1
        reasons = ", ".join(f"{n} by {r}" for r, n in sorted(why.items()))
        n = len(self.table.entries)
        return (f"{n} {'entry' if n == 1 else 'entries'} ({self.identical} identical duplicates dropped, "
                f"{len(self.conflicts)} conflicting resolved" + (f": {reasons}" if reasons else "") + ")")


def merge(tables: Iterable[PinnedTable]) -> MergeResult:
    """Combine tables of one kernel, in order; conflicting entries are resolved by :func:`pick`.
    Raises KernelrulesError when the tables pin different kernels."""
    tables = list(tables)
    if not tables:
        raise KernelrulesError("nothing to merge")
    first = tables[0]
    for other in tables[1:]:
        if other.kernel_name != first.kernel_name:
            raise KernelrulesError(f"pins kernel {other.kernel_name!r}, not {first.kernel_name!r} like "
                                   f"{first.path}", path=str(other.path), hint="merge tables of one kernel")
    kernel = dict(first.kernel)
    for other in tables[1:]:
        for name, value in other.kernel.items():
            kernel.setdefault(name, value)
    result = MergeResult(PinnedTable(kernel=kernel))
    by_identity: dict[tuple, int] = {}
    for table in tables:
        for entry in table.entries:
            index = by_identity.get(entry.identity())
            if index is None:
                by_identity[entry.identity()] = len(result.table.entries)
                result.table.entries.append(entry)
                result.added += 1
                continue
            old = result.table.entries[index]
            if old.to_json() == entry.to_json():
                result.identical += 1
                continue
            kept, why = pick(old, entry)
            result.conflicts.append((kept, entry if kept is old else old, why))
            result.table.entries[index] = kept
    return result
