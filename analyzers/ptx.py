"""A reader for the PTX Triton emits (``asm["ptx"]``): instruction mix and directives.

Counts are static (instructions in the listing, not executed ones). The classes
rules care about: tensor-core MMAs (``mma.sync`` with shape and types,
``wgmma.mma_async``, ``tcgen05.mma``; the other ``tcgen05`` tensor-memory instructions
by kind), scalar float math (``fma``/``mul``/``add``
by type), shared-memory traffic with its width in bits (``st.shared.v4.b32`` =
128), ``ldmatrix``/``stmatrix``, ``cp.async`` by copy size, TMA
(``cp.async.bulk.tensor``), global loads/stores by width and barriers. Each
instruction keeps the ``.loc`` in force, so counts map to source lines.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from .mlir_loc import is_triton_frame

_GUARD = re.compile(r"^@!?%\w+\s+")
_OPCODE = re.compile(r"^([a-z][a-z0-9_]*(?:\.[\w:]+)*)(?:\s+(.*))?$", re.S)
_LOC = re.compile(r"^\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
_FILE = re.compile(r'^\.file\s+(\d+)\s+"([^"]*)"(?:\s*,\s*\d+\s*,\s*\d+)?(?:\s+"([^"]*)")?')
_INLINED_DIRECTIVE = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_INLINED_COMMENT = re.compile(r"@\[\s*([^\s:\]]+):(\d+):(\d+)")
_SHAPE = re.compile(r"\.(m\d+n\d+k\d+)")
_FLOAT_TYPES = ("f16", "f16x2", "bf16", "bf16x2", "f32", "f64")
_FLOAT_OPS = ("fma", "mul", "add", "sub")


@dataclass(frozen=True)
class PtxInstruction:
    """One instruction: full dotted opcode, operand text, PTX line and source position.

    ``loc`` is ``(file, line, col)`` of the ``.loc`` in force; ``inlined_at`` the
    call sites it was inlined into, innermost first (files may be base names).
    """

    opcode: str
    operands: str
    line: int
    loc: tuple[str, int, int] | None = None
    inlined_at: tuple[tuple[str, int, int], ...] = ()
    predicated: bool = False

    @property
    def base(self) -> str:
        """The opcode's first component (``mma`` of ``mma.sync.aligned...``)."""
        return self.opcode.split(".", 1)[0]

    def source(self) -> tuple[str, int, int] | None:
        """The innermost position outside Triton's own package (its call site for ``tl.cdiv``)."""
        for frame in ((self.loc,) if self.loc else ()) + self.inlined_at:
            if not is_triton_frame(frame[0]):
                return frame
        return self.loc


@dataclass
class PtxListing:
    """Directives and instructions of one PTX module."""

    version: str | None = None
    target: str | None = None
    address_size: int | None = None
    entries: list[str] = field(default_factory=list)
    maxnreg: int | None = None
    reqntid: tuple[int, ...] | None = None
    maxntid: tuple[int, ...] | None = None
    minnctapersm: int | None = None
    files: dict[int, str] = field(default_factory=dict)
    instructions: list[PtxInstruction] = field(default_factory=list)

    def opcode_counts(self) -> Counter:
        """Instruction counts by full opcode."""
        return Counter(i.opcode for i in self.instructions)

    def class_counts(self) -> Counter:
        """Instruction counts by ``classify`` class (unclassified ones left out)."""
        return Counter(c for c in (classify(i.opcode) for i in self.instructions) if c)

    def mma(self) -> list[dict]:
        """Tensor-core MMA instructions grouped by kind, shape and types, with counts."""
        groups: Counter = Counter()
        for instr in self.instructions:
            kind = classify(instr.opcode)
            if kind in ("mma_sync", "wgmma", "tcgen05_mma"):
                groups[(kind, *mma_shape_types(instr.opcode))] += 1
        return [{"kind": k, "shape": s, "types": t, "count": n} for (k, s, t), n in sorted(groups.items())]

    def tensor_memory_columns(self) -> int | None:
        """Columns of tensor memory the kernel allocates (``tcgen05.alloc ... [dst], N;``,
        summed over the allocations); None when it allocates none."""
        columns = [int(n, 0) for i in self.instructions if i.opcode.startswith("tcgen05.alloc")
                   for n in re.findall(r",\s*(0x[0-9a-fA-F]+|\d+)\s*$", i.operands)]
        return sum(columns) if columns else None

    def float_ops(self) -> Counter:
        """Scalar/packed float ``fma``/``mul``/``add``/``sub`` by ``op.type`` (``fma.f32``)."""
        found: Counter = Counter()
        for instr in self.instructions:
            parts = instr.opcode.split(".")
            if parts[0] in _FLOAT_OPS and parts[-1] in _FLOAT_TYPES:
                found[f"{parts[0]}.{parts[-1]}"] += 1
        return found

    def access_widths(self, prefix: str) -> Counter:
        """Counts by access width in bits of the instructions whose opcode starts with
        ``prefix`` (``ld.shared``, ``st.shared``, ``ld.global``, ``st.global``)."""
        return Counter(access_bits(i.opcode) for i in self.instructions if i.opcode.startswith(prefix + "."))

    def cp_async_sizes(self) -> Counter:
        """``cp.async`` (LDGSTS) copies by size in bytes."""
        found: Counter = Counter()
        for instr in self.instructions:
            if classify(instr.opcode) == "cp_async":
                parts = [p.strip() for p in re.split(r",(?![^\[]*\])", instr.operands)]
                size = parts[2] if len(parts) > 2 else ""
                found[int(size, 0) if re.fullmatch(r"0x[0-9a-fA-F]+|\d+", size) else 0] += 1
        return found

    def counts_by_line(self) -> dict[str, Counter]:
        """Class counts per source line (``file:line`` of ``PtxInstruction.source``)."""
        lines: dict[str, Counter] = {}
        for instr in self.instructions:
            where, kind = instr.source(), classify(instr.opcode)
            if where and kind:
                lines.setdefault(f"{where[0]}:{where[1]}", Counter())[kind] += 1
        return lines


def access_bits(opcode: str) -> int | None:
    """Bits moved per thread by a load/store opcode (``.v4.b32`` → 128)."""
    vector, bits = 1, None
    for part in opcode.split(".")[1:]:
        if re.fullmatch(r"v\d+", part):
            vector = int(part[1:])
        elif re.fullmatch(r"[bsuf]\d+", part):
            bits = int(part[1:])
    return vector * bits if bits else None


def mma_shape_types(opcode: str) -> tuple[str | None, str | None]:
    """(``m16n8k16``, ``f32.f16.f16.f32``) from an MMA opcode; types as the opcode lists them."""
    shape = _SHAPE.search(opcode)
    if not shape:
        kind = re.search(r"kind::(\w+)", opcode)
        return None, kind.group(1) if kind else None
    tail = opcode[shape.end():].lstrip(".").split(".")
    types = [p for p in tail if re.fullmatch(r"(?:[bsuf]\d+|bf16|tf32|e4m3|e5m2|e2m1|e3m2|e2m3|f16x2)", p)]
    return shape.group(1), ".".join(types) or None


def classify(opcode: str) -> str | None:
    """The class of an opcode rules count, or None for everything else."""
    if opcode.startswith("mma.sync") or re.match(r"mma\.m\d", opcode):
        return "mma_sync"
    if opcode.startswith("wgmma.mma_async"):
        return "wgmma"
    if opcode.startswith("tcgen05.mma"):
        return "tcgen05_mma"
    if opcode.startswith("tcgen05."):  # tensor memory: alloc/dealloc, ld/st/cp, commit, wait (sm_100)
        return "tcgen05_" + opcode.split(".")[1].split("::")[0]
    if opcode.startswith("cp.async.bulk.tensor"):
        return "tma_store" if ".global.shared" in opcode else "tma_load"
    if opcode.startswith(("cp.async.ca.", "cp.async.cg.")):
        return "cp_async"
    if opcode.startswith(("ldmatrix", "stmatrix")):
        return opcode.split(".", 1)[0]
    if opcode.startswith(("bar.sync", "barrier.sync", "bar.arrive", "barrier.cta")):
        return "bar_sync"
    for prefix in ("ld.shared", "st.shared", "ld.global", "st.global", "ld.local", "st.local"):
        if opcode.startswith(prefix + ".") or opcode == prefix:
            return prefix.replace(".", "_")
    parts = opcode.split(".")
    if parts[0] in _FLOAT_OPS and parts[-1] in _FLOAT_TYPES:
        return f"{parts[0]}_{parts[-1]}"
    if parts[0] == "cvt" and any(p.startswith(("e4m3", "e5m2")) for p in parts):
        return "cvt_fp8"
    return None


def _numbers(text: str) -> tuple[int, ...]:
    return tuple(int(n) for n in re.findall(r"\d+", text))


class _PtxReader:
    """Walks PTX lines, tracking the ``.loc`` in force."""

    def __init__(self) -> None:
        self.listing = PtxListing()
        self.loc: tuple[int, int, int] | None = None
        self.inlined: tuple[tuple, ...] = ()

    def directive(self, text: str, comment: str) -> None:
        head = text.split(None, 1)
        name, rest = head[0], head[1] if len(head) > 1 else ""
        listing = self.listing
        if name == ".loc" and (match := _LOC.match(text)):
            self.loc = (int(match.group(1)), int(match.group(2)), int(match.group(3)))
            found = _INLINED_DIRECTIVE.findall(match.group(4)) or _INLINED_COMMENT.findall(comment)
            self.inlined = tuple((f, int(ln), int(c)) for f, ln, c in found)
        elif name == ".file" and (match := _FILE.match(text)):
            path = match.group(2) + ("/" + match.group(3) if match.group(3) else "")
            listing.files[int(match.group(1))] = path
        elif name == ".version":
            listing.version = rest.strip()
        elif name == ".target":
            listing.target = rest.split(",")[0].strip()
        elif name == ".address_size":
            listing.address_size = int(rest.strip())
        elif name in (".maxnreg", ".minnctapersm"):
            setattr(listing, name[1:], int(rest.strip().rstrip(";")))
        elif name in (".reqntid", ".maxntid"):
            setattr(listing, name[1:], _numbers(rest))
        if ".entry" in text.split("(")[0].split():
            entry = re.search(r"\.entry\s+([\w$]+)", text)
            if entry:
                listing.entries.append(entry.group(1))

    def statement(self, text: str, line: int) -> None:
        text = text.strip().lstrip("{}").strip()
        text = re.sub(r"^[$\w]+:\s*", "", text)  # a label in front
        if not text:
            return
        if text.startswith("."):
            self.directive(text, "")
            return
        guard = _GUARD.match(text)
        body = text[guard.end():] if guard else text
        match = _OPCODE.match(body)
        if match:
            self.listing.instructions.append(
                PtxInstruction(match.group(1), (match.group(2) or "").strip(), line, self.location(),
                               self.inlined, bool(guard)))

    def location(self) -> tuple[str, int, int] | None:
        if self.loc is None:
            return None
        file, line, col = self.loc
        return self.listing.files.get(file, str(file)), line, col


def _resolve_files(listing: PtxListing) -> None:
    """``.file`` comes after the code: re-key locations (and base-name call sites) to paths."""
    by_base = {}
    for path in listing.files.values():
        by_base.setdefault(path.rsplit("/", 1)[-1], []).append(path)

    def full(frame: tuple) -> tuple:
        name = frame[0]
        if name.isdigit():
            return listing.files.get(int(name), name), frame[1], frame[2]
        paths = by_base.get(name, [])
        return (paths[0] if len(paths) == 1 else name), frame[1], frame[2]

    listing.instructions = [
        PtxInstruction(i.opcode, i.operands, i.line, full(i.loc) if i.loc else None,
                       tuple(full(f) for f in i.inlined_at), i.predicated)
        for i in listing.instructions
    ]


def parse(text: str) -> PtxListing:
    """Parse PTX text into directives and instructions (never raises on odd lines: skips them)."""
    reader = _PtxReader()
    for number, raw in enumerate(text.splitlines(), 1):
        code, _, comment = raw.partition("//")
        code = code.strip()
        if not code:
            continue
        if code.startswith(".") and not code.rstrip().endswith(";") or code.startswith((".loc", ".file")):
            reader.directive(code, comment)
            continue
        for piece in code.split(";"):
            reader.statement(piece, number)
    _resolve_files(reader.listing)
    return reader.listing
