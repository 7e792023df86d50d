"""A reader for the MLIR text Triton dumps (``asm["ttir"]``, ``asm["ttgir"]``).

``parse(text)`` returns a ``Module``: every operation (op name, result and operand
SSA values, result types parsed into shape/dtype/encoding, attributes, regions and
the op that encloses it), the layout encodings defined at the top
(``#blocked = #ttg.blocked<{...}>``) as dicts, the module attributes
(``ttg.num-warps``, ``ttg.target``, ...) and each op's source location resolved
from the ``#loc`` aliases at the bottom.

The reader is line-oriented because the MLIR printer is: one operation per line,
a region opens with ``{`` at the end of a line and closes with a line starting
with ``}``. Ops it does not know are kept generically. Text that is not MLIR
raises one ``MlirParseError`` naming the line.

Why over 400 lines: one reader of TTIR/TTGIR text: the tokenizer, the layouts and the op table share
their small grammar.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Iterator

from .mlir_loc import SourceLocation, resolve
from .mlir_text import (
    MlirType, depth0_positions, depth_map, mask_strings, matching_close, parse_attribute, parse_attribute_dict,
    parse_type, split_top,
)

_RESULTS = re.compile(r"^\s*((?:%[\w$.-]+(?::\d+)?\s*,\s*)*%[\w$.-]+(?::\d+)?)\s*=\s*")
_OP_NAME = re.compile(r'^\s*(?:"([^"]+)"|([A-Za-z_][\w$]*(?:\.[\w$]+)*))')
_USE = re.compile(r"%[\w$.-]+(?:#\d+)?")
_DEF_EQ = re.compile(r"(%[\w$.-]+)\s*=(?!=)")
_DEF_COLON = re.compile(r"(%[\w$.-]+):(?=\s*[^\s\d])")
_INLINE_ATTR = re.compile(r"(?<![%\w.$-])([A-Za-z_]\w*)\s*=\s*([\w.\-]+)")
_LOC_START = re.compile(r"(?<![\w.])loc\(")
_ALIAS = re.compile(r"^([#!][\w.$-]+)\s*=\s*(.+)$", re.S)
_PRECISIONS = ("tf32", "tf32x3", "ieee", "bf16x3", "bf16x6")  # tt::InputPrecision, in enum order
#: Ops whose single result is a token whatever their printed types say.
_TOKEN_RESULTS = ("ttg.async_copy_global_to_local", "ttg.async_commit_group", "ttg.async_wait")
_BUILTIN_BARE = {"module": "builtin.module", "func": "func.func"}


class MlirParseError(ValueError):
    """The text is not MLIR as Triton prints it; ``line`` is 1-based."""

    def __init__(self, message: str, line: int):
        super().__init__(f"line {line}: {message}")
        self.line = line


@dataclass(eq=False)
class Value:
    """An SSA value: an op result, or an argument of a block inside ``owner``'s regions."""

    name: str
    type: MlirType | None
    owner: "Operation"
    index: int
    is_block_arg: bool = False
    region: int = 0
    attributes: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return f"Value({self.name}, {self.type.raw if self.type else None})"


@dataclass(eq=False)
class Block:
    """A block: its arguments and its operations, in order."""

    arguments: list[Value] = field(default_factory=list)
    operations: list["Operation"] = field(default_factory=list)
    label: str | None = None


@dataclass(eq=False)
class Region:
    """A region of ``owner`` (``index`` among its regions)."""

    owner: "Operation"
    index: int
    blocks: list[Block] = field(default_factory=lambda: [Block()])

    def operations(self) -> Iterator["Operation"]:
        """The ops directly in this region (not nested ones)."""
        for block in self.blocks:
            yield from block.operations


@dataclass(eq=False)
class Operation:
    """One MLIR operation as printed; ``text`` is its full text without ``loc(...)``."""

    name: str
    line: int
    text: str = ""
    result_names: list[str] = field(default_factory=list)
    operand_names: list[str] = field(default_factory=list)
    results: list[Value] = field(default_factory=list)
    operands: list[Value | None] = field(default_factory=list)
    result_types: list[MlirType | None] = field(default_factory=list)
    types_text: str = ""
    attributes: dict = field(default_factory=dict)
    attributes_text: str = ""
    regions: list[Region] = field(default_factory=list)
    parent: "Operation | None" = None
    loc: str | None = None
    location: SourceLocation | None = None
    symbol: str | None = None
    index: int = -1

    def __repr__(self) -> str:
        return f"Operation({self.index}: {self.name} line {self.line})"

    def ancestors(self) -> Iterator["Operation"]:
        """Enclosing ops, innermost first (``scf.if``, ``scf.for``, ``tt.func``, module)."""
        op = self.parent
        while op is not None:
            yield op
            op = op.parent

    def walk(self) -> Iterator["Operation"]:
        """Every op nested in this one's regions, in textual order."""
        for region in self.regions:
            for op in region.operations():
                yield op
                yield from op.walk()

    @property
    def input_precision(self) -> str | None:
        """``inputPrecision`` of a dot as a name (``tf32``, ``ieee``, ...), if printed."""
        value = self.attributes.get("inputPrecision")
        if isinstance(value, int) and 0 <= value < len(_PRECISIONS):
            return _PRECISIONS[value]
        return value if isinstance(value, str) else None

    @property
    def max_num_imprecise_acc(self) -> int | None:
        """``maxNumImpreciseAcc`` of a dot, if printed."""
        value = self.attributes.get("maxNumImpreciseAcc")
        return value if isinstance(value, int) else None


@dataclass
class Module:
    """A parsed dump: ``operations`` lists every op in textual (pre-)order."""

    operations: list[Operation]
    encodings: dict[str, dict]
    aliases: dict[str, str]
    attributes: dict

    def ops_named(self, *names: str) -> list[Operation]:
        """The ops whose name is one of ``names``, in textual order."""
        return [op for op in self.operations if op.name in names]

    @property
    def num_warps(self) -> int | None:
        return self.attributes.get("ttg.num-warps")

    @property
    def threads_per_warp(self) -> int | None:
        return self.attributes.get("ttg.threads-per-warp")

    @property
    def target(self) -> str | None:
        return self.attributes.get("ttg.target")

    @property
    def shared(self) -> int | None:
        return self.attributes.get("ttg.shared")


# ----------------------------------------------------------------------------- op text


def _cut_locs(text: str) -> tuple[str, str | None]:
    """``text`` without its ``loc(...)`` groups, and the last depth-0 one (the op's own)."""
    masked = mask_strings(text)
    depths = depth_map(masked)
    pieces, last, own = [], 0, None
    for match in _LOC_START.finditer(masked):
        start = match.start()
        end = matching_close(masked, match.end() - 1) if start >= last else -1
        if end < 0:
            continue
        if depths[start] == 0:
            own = text[start:end + 1]
        pieces.append(text[last:start])
        last = end + 1
    pieces.append(text[last:])
    return "".join(pieces), own


def _result_names(spec: str) -> list[str]:
    """``%a, %b`` → both; ``%x:3`` → ``%x#0 .. %x#2`` (how the uses spell them)."""
    names = []
    for part in spec.split(","):
        name, _, count = part.strip().partition(":")
        names.extend([f"{name}#{i}" for i in range(int(count))] if count else [name])
    return names


def _arrow_types(text: str) -> list[str] | None:
    """The types after the last depth-0 ``->`` of ``text`` (a parenthesised list unwrapped)."""
    masked = mask_strings(text)
    arrows = [i for i in depth0_positions(masked, "-") if masked[i:i + 2] == "->"]
    if not arrows:
        return None
    tail = text[arrows[-1] + 2:].strip()
    masked_tail = mask_strings(tail)
    if tail.startswith("(") and matching_close(masked_tail, 0) == len(tail) - 1:
        tail = tail[1:-1]
    return split_top(tail)


def _signature_split(body: str) -> tuple[str, str]:
    """Split the op body at its depth-0 `` : `` into (operands and attributes, types)."""
    masked = mask_strings(body)
    for i in depth0_positions(masked, ":"):
        if masked[i - 1:i].isspace() and masked[i + 1:i + 2].isspace():
            return body[:i], body[i + 1:].strip()
    return body, ""


def _result_types(name: str, pre: str, sig: str, count: int) -> list[MlirType | None]:
    """Result types from the printed signature (plus the few ops that print others)."""
    if count == 0:
        return []
    if name in _TOKEN_RESULTS:
        return [parse_type("!ttg.async.token")] * count
    texts = _arrow_types(pre) if name == "scf.for" else (_arrow_types(sig) or split_top(sig) if sig else None)
    if texts is None and name.startswith("scf."):
        texts = _arrow_types(pre)
    if not texts:
        return [None] * count
    if count == 1 and len(texts) == 1 and " to " in texts[0]:  # a cast prints "A to B": the result is B
        texts = [texts[0].rsplit(" to ", 1)[1]]
    types = [parse_type(t) for t in texts[-count:]]
    if name in ("arith.cmpi", "arith.cmpf"):
        types = [MlirType(t.raw, t.kind, t.shape, "i1", t.encoding) for t in types]
    elif name == "tt.load":
        types = [t.pointee() for t in types]
    if len(types) == 1 and count > 1:
        types = types * count
    return types + [None] * (count - len(types))


def _attributes(pre: str) -> tuple[dict, str]:
    """Parsed attributes of an op body: its depth-0 ``{...}``/``<{...}>`` groups and
    the ``key = value`` pairs some custom printers inline (``inputPrecision = tf32``)."""
    masked = mask_strings(pre)
    found: dict[str, Any] = {}
    raw = []
    for start in depth0_positions(masked, "{<"):
        brace = start if masked[start] == "{" else start + 1
        if masked[brace:brace + 1] != "{":
            continue
        end = matching_close(masked, brace)
        if end > 0:
            raw.append(pre[brace:end + 1])
            found.update(parse_attribute_dict(pre[brace:end + 1]))
    depths = depth_map(masked)
    for match in _INLINE_ATTR.finditer(masked):
        if depths[match.start()] == 0 and match.group(1) not in found:
            value = pre[match.start(2):match.end(2)]
            raw.append(f"{match.group(1)} = {value}")
            try:
                found[match.group(1)] = parse_attribute(value)
            except ValueError:
                found[match.group(1)] = value
    return found, ", ".join(raw)


def _typed_defs(text: str, owner: Operation, region: int) -> list[Value]:
    """``%x: type {attrs}`` definitions in an argument list (func or block label)."""
    masked = mask_strings(text)
    values = []
    for match in _DEF_COLON.finditer(masked):
        stop = match.end()
        while stop < len(masked):
            if masked[stop] in "([{<":
                close = matching_close(masked, stop)
                stop = close + 1 if close > 0 else len(masked)
            elif masked[stop] in ",)":
                break
            else:
                stop += 1
        spec = text[match.end():stop].strip()
        attrs = {}
        brace = depth0_positions(mask_strings(spec), "{")
        if brace:
            attrs = parse_attribute_dict(spec[brace[0]:])
            spec = spec[:brace[0]].strip()
        values.append(Value(match.group(1), parse_type(spec), owner, len(values), True, region, attrs))
    return values


def _header_defs(segment: str, op: Operation, region: int) -> list[Value]:
    """Block arguments a region header defines: ``scf.for %iv = ... iter_args(%a = %x)``
    and ``scf.while (%a = %x)`` (``%a = ``), or typed lists such as a func signature."""
    segment = _cut_locs(segment)[0]
    results = _RESULTS.match(segment)
    segment = segment[results.end():] if results else segment
    masked = mask_strings(segment)
    eq_defs = [m.group(1) for m in _DEF_EQ.finditer(masked)]
    if not eq_defs:
        return _typed_defs(segment, op, region)
    types: list[MlirType | None] = []
    if op.name == "scf.for":
        _, sig = _signature_split(segment)
        types = [parse_type(sig) if sig else parse_type("index")] + list(op.result_types)
    elif op.name == "scf.while":
        _, sig = _signature_split(segment)
        head = sig.split("->")[0].strip().strip("()") if sig else ""
        types = [parse_type(t) for t in split_top(head)]
    types += [None] * (len(eq_defs) - len(types))
    return [Value(name, types[i], op, i, True, region) for i, name in enumerate(eq_defs)]


def _new_op(text: str, line: int) -> Operation:
    """Build an operation from its full text (all segments joined)."""
    text, own_loc = _cut_locs(text)
    results = _RESULTS.match(text)
    rest = text[results.end():] if results else text
    match = _OP_NAME.match(rest)
    if not match:
        raise MlirParseError(f"expected an operation, found {text.strip()[:60]!r}", line)
    name = match.group(1) or match.group(2)
    if not match.group(1) and "." not in name:
        if name not in _BUILTIN_BARE:
            raise MlirParseError(f"expected an operation, found {text.strip()[:60]!r}", line)
        name = _BUILTIN_BARE[name]
    body = rest[match.end():]
    op = Operation(name, line, text.strip(), _result_names(results.group(1)) if results else [])
    op.loc = own_loc[4:-1].strip() if own_loc else None
    pre, op.types_text = _signature_split(body)
    masked = mask_strings(body)
    defined = {m.start() for m in _DEF_EQ.finditer(masked)} | {m.start() for m in _DEF_COLON.finditer(masked)}
    op.operand_names = [m.group(0) for m in _USE.finditer(masked) if m.start() not in defined]
    op.result_types = _result_types(name, pre, op.types_text, len(op.result_names))
    op.results = [Value(n, t, op, i) for i, (n, t) in enumerate(zip(op.result_names, op.result_types))]
    op.attributes, op.attributes_text = _attributes(pre)
    symbol = re.search(r"@([\w$.-]+)", mask_strings(pre))
    op.symbol = symbol.group(1) if symbol else None
    return op


# ----------------------------------------------------------------------------- structure


def _scan(masked: str, stack: list[str], line: int) -> list[str]:
    """Push/pop ``()[]{}`` of one line onto ``stack``; a stray closer is an error."""
    pairs = {")": "(", "]": "[", "}": "{"}
    for ch in masked:
        if ch in "([{":
            stack.append(ch)
        elif ch in pairs:
            if not stack or stack[-1] != pairs[ch]:
                raise MlirParseError(f"unbalanced {ch!r}", line)
            stack.pop()
    return stack


@dataclass
class _Open:
    """An operation whose regions are being read."""

    op: Operation
    segments: list[str]
    outer: list[str]  # brackets open around the region braces, e.g. ["("] in generic form
    region: Region | None = None


class _Reader:
    """Feeds lines, keeps the stack of open regions, collects aliases."""

    def __init__(self) -> None:
        self.top = Region(Operation("<top>", 0), 0)
        self.stack: list[_Open] = []
        self.aliases: dict[str, str] = {}
        self.in_resources = False

    def block(self) -> Block:
        return (self.stack[-1].region if self.stack else self.top).blocks[-1]

    def feed(self, raw: str, line: int) -> None:
        text = raw.strip()
        if self.in_resources:
            self.in_resources = "#-}" not in text
            return
        if not text or text.startswith("//"):
            return
        if text.startswith("{-#"):
            self.in_resources = "#-}" not in text
            return
        alias = _ALIAS.match(text) if text[0] in "#!" else None
        if alias and not self.stack:
            self.aliases[alias.group(1)] = alias.group(2).strip()
        elif text.startswith("}"):
            self.close(text, line)
        elif text.startswith("^"):
            self.label(text, line)
        else:
            self.operation(text, line)

    def operation(self, text: str, line: int) -> None:
        masked = mask_strings(text)
        stack = _scan(masked, [], line)
        if not stack:
            self.attach(_new_op(text, line))
            return
        if stack[-1] != "{" or not masked.rstrip().endswith("{"):
            raise MlirParseError("unbalanced brackets in an operation", line)
        header = text[: masked.rstrip().rfind("{")]
        op = _new_op(header, line)
        self.attach(op)
        frame = _Open(op, [header], stack[:-1])
        self.stack.append(frame)
        self.open_region(frame, header)

    def attach(self, op: Operation) -> None:
        op.parent = self.stack[-1].op if self.stack else None
        self.block().operations.append(op)

    def open_region(self, frame: _Open, segment: str) -> None:
        """Start the op's next region; the header segment may define its block arguments."""
        frame.region = Region(frame.op, len(frame.op.regions))
        frame.op.regions.append(frame.region)
        frame.region.blocks[0].arguments = _header_defs(segment, frame.op, frame.region.index)

    def label(self, text: str, line: int) -> None:
        if not self.stack:
            raise MlirParseError("block label outside a region", line)
        region = self.stack[-1].region
        body = _cut_locs(text)[0]
        args = _typed_defs(body, region.owner, region.index)
        if region.blocks[-1].operations or region.blocks[-1].label:
            region.blocks.append(Block())
        region.blocks[-1].label = body.split("(")[0].rstrip(":").strip()
        region.blocks[-1].arguments = args

    def close(self, text: str, line: int) -> None:
        if not self.stack:
            raise MlirParseError("'}' closes nothing", line)
        frame = self.stack[-1]
        rest = text[1:]
        masked = mask_strings(rest)
        stack = _scan(masked, list(frame.outer), line)
        if stack and stack[-1] == "{" and masked.rstrip().endswith("{"):
            segment = rest[: masked.rstrip().rfind("{")]
            frame.segments.append(segment)
            frame.outer = stack[:-1]
            self.open_region(frame, segment)
            return
        if stack:
            raise MlirParseError("unbalanced brackets after '}'", line)
        frame.segments.append(rest)
        self.stack.pop()
        self.finish_op(frame)

    def finish_op(self, frame: _Open) -> None:
        """Re-read the op from all of its segments (types and loc follow the last '}')."""
        full = _new_op(" ".join(frame.segments), frame.op.line)
        op = frame.op
        op.text, op.loc, op.types_text = full.text, full.loc, full.types_text
        op.attributes, op.attributes_text = full.attributes, full.attributes_text
        op.operand_names = full.operand_names
        if None in op.result_types:  # scf ops print result types in the header, generic ops at the end
            op.result_types = full.result_types
            for value, mlir_type in zip(op.results, op.result_types):
                value.type = mlir_type


def _bind(region: Region, chain: list[dict[str, Value]]) -> None:
    """Resolve operand names to values, innermost region scope first."""
    scope: dict[str, Value] = {}
    for block in region.blocks:
        scope.update({arg.name: arg for arg in block.arguments})
        for op in block.operations:
            scope.update({value.name: value for value in op.results})
    chain = [scope, *chain]
    for op in region.operations():
        op.operands = [next((s[name] for s in chain if name in s), None) for name in op.operand_names]
        for inner in op.regions:
            _bind(inner, chain)


def _number(top: Region) -> list[Operation]:
    """Every op in textual pre-order, with ``index`` set."""
    ordered: list[Operation] = []
    for op in top.operations():
        ordered.extend([op, *op.walk()])
    for i, op in enumerate(ordered):
        op.index = i
    return ordered


def _encoding(text: str) -> dict:
    """An encoding alias's value as ``{"kind": ..., fields}`` (``raw`` when unreadable)."""
    try:
        value = parse_attribute(text)
    except ValueError:
        value = None
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.startswith("#"):
        return {"kind": value.lstrip("#").split(".", 1)[-1]}
    return {"kind": "unknown", "raw": text}


def parse(text: str) -> Module:
    """Parse a TTIR or TTGIR dump. Raises ``MlirParseError`` on text that is not MLIR."""
    reader = _Reader()
    lines = text.splitlines()
    for number, line in enumerate(lines, 1):
        reader.feed(line, number)
    if reader.stack:
        raise MlirParseError(f"region opened here is never closed ({reader.stack[-1].op.name})",
                             reader.stack[-1].op.line)
    operations = _number(reader.top)
    if not operations:
        raise MlirParseError("no operations found", max(1, len(lines)))
    _bind(reader.top, [])
    locs = {k: v for k, v in reader.aliases.items() if v.startswith("loc(")}
    for op in operations:
        op.location = resolve(op.loc, locs)
    encodings = {k: _encoding(v) for k, v in reader.aliases.items() if not v.startswith("loc(")}
    module_op = next((op for op in operations if op.name == "builtin.module"), None)
    return Module(operations, encodings, dict(reader.aliases), dict(module_op.attributes) if module_op else {})
