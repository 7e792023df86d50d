"""Shared-memory bank-conflict estimate for one warp-wide access to a 2-D tile.

Model (NVIDIA, cc 5.x and later): shared memory has 32 banks, each 4 bytes wide;
4-byte word ``w`` lives in bank ``w % 32``. One warp instruction is served in
*phases*; in each phase every bank delivers one word, lanes reading the same word
share it (broadcast), and ``k`` distinct words in one bank cost ``k`` passes
("k-way conflict"). A phase carries at most 128 bytes, so:

* accesses of up to 32 bits per lane: the whole warp (32 lanes) is one phase;
* 64-bit accesses: two phases of a half-warp (16 lanes) each;
* 128-bit accesses and ``ldmatrix``: four phases of a quarter-warp (8 lanes) each
  (for ``ldmatrix.x4`` each phase is one 8x8 matrix: 8 lane addresses of 16 bytes).

``wavefronts`` is the sum over phases of each phase's worst bank; the conflict-free
cost ``ideal_wavefronts`` is one per phase. ``ways`` is the worst bank of the worst
phase (1 = conflict-free, 32 at most). A lane vector that the layout does not keep
as one aligned, in-order run is split into narrower instructions, whose costs add up.

Element addresses follow Triton's shared encodings as they appear in TTGIR,
given as plain dicts (``kind`` plus the attribute's fields):

* ``swizzled_shared`` {vec, perPhase, maxPhase, order}: in the row ``r`` of the
  non-contiguous dimension, the column ``c`` of the contiguous dimension is
  stored at ``c ^ ((vec * ((r // perPhase) % maxPhase)) % cols)``, i.e. groups of
  ``vec`` elements are XOR-permuted by the phase (``SwizzledSharedEncodingAttr``
  in ``TritonGPUAttrDefs.td`` and ``swizzledSharedToLinearLayout``);
* ``nvmma_shared`` {swizzlingByteWidth, transposed, elementBitWidth}: the CUDA
  32/64/128-byte swizzle modes used by TMA and wgmma. The contiguous dimension is
  cut into spans of ``max(16, swizzle)`` bytes stored one after another (all rows
  of a span, then the next span); inside a span, 16-byte chunk ``j`` of row ``r``
  is stored at chunk ``j ^ ((r // (128 // swizzle)) % (swizzle // 16))``
  (``getCoreMatrixLinearLayout`` / ``nvmmaSharedToLinearLayout``);
* ``padded_shared`` {interval_padding_pairs | intervals + paddings, offset_bases?,
  order?}: element offsets (identity row-major order, or the linear remapping
  ``offset_bases`` when given) get ``padding`` elements added after every
  ``interval`` elements, summed over the pairs (Gluon ``PaddedSharedLayout``);
* anything else, or ``None``: unswizzled, row-major in ``order`` (a note says so
  when the kind is unknown).

Limits: bank-level only (no L1/TMA/async-copy modelling), a single warp
instruction at a time, power-of-two tile dimensions for the swizzled kinds.

Why over 400 lines: one shared-memory bank model: layouts, access patterns and the conflict count,
which only make sense together.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

BANKS = 32
BANK_WIDTH_BYTES = 4
PHASE_BYTES = BANKS * BANK_WIDTH_BYTES  # 128
WARP_SIZE = 32

Coord = tuple[int, int]
OffsetFn = Callable[[int, int], int]


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class WarpAccess:
    """What one warp instruction touches: for each lane, the tile elements it reads or writes.

    ``lanes[i]`` lists lane ``i``'s elements as logical ``(row, col)`` pairs in
    vector order; an empty tuple is an inactive lane. The access width (vector
    length times element size) decides the phase split.
    """

    lanes: tuple[tuple[Coord, ...], ...]
    pattern: str

    @property
    def vector_length(self) -> int:
        """Elements per lane (the longest lane vector)."""
        return max((len(elements) for elements in self.lanes), default=0)


@dataclass(frozen=True)
class BankEstimate:
    """The n-way bank conflict of one warp access and what it costs in wavefronts."""

    ways: int
    wavefronts: int
    ideal_wavefronts: int
    pattern: str
    notes: tuple[str, ...] = ()

    @property
    def conflict_free(self) -> bool:
        """True when every phase needs a single pass."""
        return self.ways == 1


def lanes_per_phase(bytes_per_lane: int) -> int:
    """Lanes per 128-byte phase for an access of ``bytes_per_lane`` bytes (1, 2, 4, 8 or 16)."""
    if bytes_per_lane not in (1, 2, 4, 8, 16):
        raise ValueError(f"a shared-memory access is 1, 2, 4, 8 or 16 bytes per lane, got {bytes_per_lane}")
    return PHASE_BYTES // max(BANK_WIDTH_BYTES, bytes_per_lane)


# --------------------------------------------------------------------------- layouts


def _kind(layout: Mapping[str, Any] | None) -> str:
    """The layout's kind without a ``#ttg.`` / ``ttg.`` prefix; 'identity' for None."""
    if layout is None:
        return "identity"
    kind = str(layout.get("kind", "unknown"))
    for prefix in ("#ttg.", "ttg.", "#triton_gpu.", "triton_gpu."):
        if kind.startswith(prefix):
            kind = kind[len(prefix) :]
    return kind


def _is_pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _contiguous_axis(order: Sequence[int] | None) -> int:
    """Which tile axis is contiguous in memory: ``order[0]`` (default 1, row-major)."""
    if not order:
        return 1
    axis = int(order[0])
    if axis not in (0, 1):
        raise ValueError(f"only 2-D tiles are modelled; order {list(order)} names axis {axis}")
    return axis


def _outer_inner(shape: Coord, axis: int) -> tuple[int, int]:
    """(outer, inner) extents for contiguous axis ``axis``."""
    return (shape[0], shape[1]) if axis == 1 else (shape[1], shape[0])


def _to_outer_inner(row: int, col: int, axis: int) -> Coord:
    return (row, col) if axis == 1 else (col, row)


def identity_offsets(shape: Coord, elem_bytes: int, order: Sequence[int] | None = None) -> OffsetFn:
    """Byte offsets of an unswizzled tile, row-major along the contiguous axis."""
    axis = _contiguous_axis(order)
    _, inner = _outer_inner(shape, axis)

    def offset(row: int, col: int) -> int:
        o, i = _to_outer_inner(row, col, axis)
        return (o * inner + i) * elem_bytes

    return offset


def swizzled_offsets(layout: Mapping[str, Any], shape: Coord, elem_bytes: int) -> OffsetFn:
    """Byte offsets under ``swizzled_shared``: column groups of ``vec`` XOR-ed with the row's phase."""
    vec, per_phase, max_phase = (int(layout.get(k, 1)) for k in ("vec", "perPhase", "maxPhase"))
    axis = _contiguous_axis(layout.get("order"))
    _, inner = _outer_inner(shape, axis)
    if not all(_is_pow2(n) for n in (vec, per_phase, max_phase, inner)):
        raise ValueError(f"swizzled_shared needs powers of two, got vec={vec} perPhase={per_phase} "
                         f"maxPhase={max_phase} contiguous extent={inner}")

    def offset(row: int, col: int) -> int:
        o, i = _to_outer_inner(row, col, axis)
        phase = (o // per_phase) % max_phase
        return (o * inner + (i ^ ((vec * phase) % inner))) * elem_bytes

    return offset


def nvmma_offsets(layout: Mapping[str, Any], shape: Coord, elem_bytes: int) -> OffsetFn:
    """Byte offsets under ``nvmma_shared``: CUDA 32/64/128-byte swizzle of 16-byte chunks."""
    swizzle = int(layout.get("swizzlingByteWidth", 128))
    if swizzle not in (0, 32, 64, 128):
        raise ValueError(f"nvmma_shared swizzlingByteWidth is 0, 32, 64 or 128, got {swizzle}")
    axis = 0 if layout.get("transposed") else 1
    outer, inner = _outer_inner(shape, axis)
    span = max(16, swizzle)
    span_elems = span // elem_bytes
    if span % elem_bytes or inner % span_elems:
        raise ValueError(f"nvmma_shared with {swizzle}-byte swizzle needs the contiguous extent "
                         f"({inner} x {elem_bytes} B) to be a multiple of {span} B")
    rows_per_phase = 128 // span if swizzle else 1
    chunks = span // 16 if swizzle else 1

    def offset(row: int, col: int) -> int:
        o, i = _to_outer_inner(row, col, axis)
        span_index, within = divmod(i * elem_bytes, span)
        chunk, byte = divmod(within, 16)
        chunk ^= (o // rows_per_phase) % chunks
        return span_index * outer * span + o * span + chunk * 16 + byte

    return offset


def _padding_pairs(layout: Mapping[str, Any]) -> list[tuple[int, int]]:
    """``[(interval, padding), ...]`` from either spelling of a padded_shared layout."""
    if "interval_padding_pairs" in layout:
        pairs = [(int(a), int(b)) for a, b in layout["interval_padding_pairs"]]
    else:
        pairs = list(zip((int(a) for a in layout.get("intervals", ())), (int(b) for b in layout.get("paddings", ()))))
    if not all(_is_pow2(a) and b >= 0 for a, b in pairs):
        raise ValueError(f"padded_shared intervals must be powers of two, got {pairs}")
    return pairs


def _linear_inverse(bases: Sequence[Sequence[int]]) -> dict[Coord, int]:
    """Invert a linear remapping offset -> (dim0, dim1): bit ``k`` of the offset XORs in ``bases[k]``."""
    inverse: dict[Coord, int] = {}
    for offset in range(1 << len(bases)):
        r = c = 0
        for bit, (br, bc) in enumerate(bases):
            if offset >> bit & 1:
                r ^= int(br)
                c ^= int(bc)
        inverse.setdefault((r, c), offset)
    return inverse


def padded_offsets(layout: Mapping[str, Any], shape: Coord, elem_bytes: int) -> OffsetFn:
    """Byte offsets under ``padded_shared``: ``padding`` elements after every ``interval`` elements."""
    pairs = _padding_pairs(layout)
    bases = layout.get("offset_bases")
    if bases:
        inverse = _linear_inverse(bases)

        def linear(row: int, col: int) -> int:
            return inverse[(row, col)]
    else:
        plain = identity_offsets(shape, 1, layout.get("order"))

        def linear(row: int, col: int) -> int:
            return plain(row, col)

    def offset(row: int, col: int) -> int:
        base = linear(row, col)
        return (base + sum((base // interval) * pad for interval, pad in pairs)) * elem_bytes

    return offset


def layout_offsets(layout: Mapping[str, Any] | None, shape: Coord, elem_bytes: int) -> tuple[OffsetFn, list[str]]:
    """The byte-offset function of ``layout`` for a ``shape`` tile, and notes on how it was modelled."""
    kind = _kind(layout)
    if kind in ("swizzled_shared", "shared"):
        return swizzled_offsets(layout or {}, shape, elem_bytes), []
    if kind == "nvmma_shared":
        notes = []
        bits = (layout or {}).get("elementBitWidth")
        if bits is not None and int(bits) != elem_bytes * 8:
            notes.append(f"layout elementBitWidth {bits} differs from the {elem_bytes * 8}-bit elements given")
        return nvmma_offsets(layout or {}, shape, elem_bytes), notes
    if kind == "padded_shared":
        return padded_offsets(layout or {}, shape, elem_bytes), []
    order = (layout or {}).get("order")
    notes = [] if kind == "identity" else [f"layout kind {kind!r} is not modelled: addresses assume an unswizzled tile"]
    return identity_offsets(shape, elem_bytes, order), notes


# --------------------------------------------------------------------------- accesses


def _vector_length(width_bits: int, elem_bytes: int) -> int:
    """Elements per lane for a ``width_bits`` access of ``elem_bytes`` elements."""
    if width_bits % 8 or (width_bits // 8) % elem_bytes or width_bits // 8 < elem_bytes:
        raise ValueError(f"a {width_bits}-bit access cannot hold whole {elem_bytes}-byte elements")
    return width_bits // 8 // elem_bytes


def _vector(start: Coord, length: int, axis: int) -> tuple[Coord, ...]:
    """``length`` consecutive elements from ``start`` along tile axis ``axis``."""
    r, c = start
    return tuple((r + k, c) if axis == 0 else (r, c + k) for k in range(length))


def _check_inside(shape: Coord, lanes: Iterable[tuple[Coord, ...]]) -> None:
    for elements in lanes:
        for r, c in elements:
            if not (0 <= r < shape[0] and 0 <= c < shape[1]):
                raise ValueError(f"access element ({r}, {c}) is outside the {shape[0]}x{shape[1]} tile")


def row_access(
    shape: Coord, elem_bytes: int, *, width_bits: int = 32, row: int = 0, col: int = 0, vector_axis: int = 1
) -> WarpAccess:
    """Lanes read consecutive ``width_bits`` vectors along ``vector_axis`` (a coalesced row-wise access).

    The warp walks the tile in row-major order (column-major for
    ``vector_axis=0``) from ``(row, col)``; lane ``l`` takes the
    ``l``-th run of ``width_bits / 8 / elem_bytes`` elements.
    """
    n = _vector_length(width_bits, elem_bytes)
    extent = shape[vector_axis]
    start = (row * extent + col) if vector_axis == 1 else (col * extent + row)

    def coord(index: int) -> Coord:
        across, along = divmod(index, extent)
        return (across, along) if vector_axis == 1 else (along, across)

    lanes = [tuple(coord(start + lane * n + k) for k in range(n)) for lane in range(WARP_SIZE)]
    _check_inside(shape, lanes)
    return WarpAccess(tuple(lanes), f"row-wise {width_bits}-bit")


def column_access(shape: Coord, elem_bytes: int, *, col: int = 0, row: int = 0) -> WarpAccess:
    """Lane ``l`` reads the single element ``(row + l, col)``: a walk down one column.

    Past the last row the walk continues at the top of the next column.
    ``elem_bytes`` is only checked (1, 2, 4, 8 or 16): each lane reads one element.
    """
    lanes_per_phase(elem_bytes)
    lanes = []
    for lane in range(WARP_SIZE):
        r = row + lane
        lanes.append(((r % shape[0], col + r // shape[0]),))
    _check_inside(shape, lanes)
    return WarpAccess(tuple(lanes), "column-wise")


def ldmatrix_x4_access(
    shape: Coord, elem_bytes: int, *, row: int = 0, col: int = 0, vector_axis: int = 1
) -> WarpAccess:
    """``ldmatrix.x4`` of the 16x(16 bytes x 2) block at ``(row, col)``.

    Each lane gives the address of one 16-byte row of an 8x8 (b16) matrix: lanes
    0-7 the rows of matrix 0 (rows 0-7, first 16 bytes), 8-15 matrix 1 (rows
    8-15), 16-23 matrix 2 (rows 0-7, next 16 bytes), 24-31 matrix 3 — the order
    used for an m16n8k16 A fragment. With ``vector_axis=0`` the roles of rows and
    columns swap (the 16-byte vectors run down a column). ``.trans`` does not
    change the addresses, only how the words land in registers.
    """
    n = _vector_length(128, elem_bytes)
    lanes = []
    for lane in range(WARP_SIZE):
        across, along = lane % 16, (lane // 16) * n
        start = (row + across, col + along) if vector_axis == 1 else (row + along, col + across)
        lanes.append(_vector(start, n, vector_axis))
    _check_inside(shape, lanes)
    return WarpAccess(tuple(lanes), "ldmatrix.x4")


# --------------------------------------------------------------------------- estimate


def _lane_words(offset: OffsetFn, elements: Sequence[Coord], elem_bytes: int) -> set[int]:
    """The 4-byte words a lane's elements occupy."""
    words: set[int] = set()
    for r, c in elements:
        a = offset(r, c)
        words.update(range(a // BANK_WIDTH_BYTES, (a + elem_bytes - 1) // BANK_WIDTH_BYTES + 1))
    return words


def _is_one_vector(offset: OffsetFn, elements: Sequence[Coord], elem_bytes: int) -> bool:
    """True when the elements sit at consecutive, naturally aligned addresses in vector order."""
    if not elements:
        return True
    addresses = [offset(r, c) for r, c in elements]
    in_order = all(b - a == elem_bytes for a, b in zip(addresses, addresses[1:]))
    return in_order and addresses[0] % (len(elements) * elem_bytes) == 0


def _pieces(elements: tuple[Coord, ...], size: int) -> list[tuple[Coord, ...]]:
    return [elements[k : k + size] for k in range(0, len(elements), size)]


def split_vectors(offset: OffsetFn, access: WarpAccess, elem_bytes: int) -> list[WarpAccess]:
    """The instructions a vector access becomes under this layout.

    A lane vector must be one aligned, in-order run of addresses to be a single
    ``ld.shared``/``st.shared``; otherwise, like Triton's lowering, the access is
    cut into the widest power-of-two pieces that are, one instruction per piece.
    """
    length = access.vector_length
    size = length
    while size > 1 and not all(
        _is_one_vector(offset, piece, elem_bytes) for lane in access.lanes for piece in _pieces(lane, size)
    ):
        size //= 2
    if size == length:
        return [access]
    count = -(-length // size)
    return [
        WarpAccess(tuple(lane[k * size : (k + 1) * size] for lane in access.lanes), access.pattern)
        for k in range(count)
    ]


def _phase_ways(words: Iterable[int]) -> int:
    """The worst bank of one phase: the most distinct words that map to one bank."""
    per_bank: dict[int, set[int]] = {}
    for w in words:
        per_bank.setdefault(w % BANKS, set()).add(w)
    return max((len(s) for s in per_bank.values()), default=0)


def _instruction_cost(offset: OffsetFn, access: WarpAccess, elem_bytes: int) -> tuple[int, int, int]:
    """(worst ways, wavefronts, ideal wavefronts) of one instruction, phase by phase."""
    if access.vector_length == 0:
        return 0, 0, 0
    step = lanes_per_phase(access.vector_length * elem_bytes)
    ways = wavefronts = ideal = 0
    for first in range(0, len(access.lanes), step):
        words: set[int] = set()
        for elements in access.lanes[first : first + step]:
            words |= _lane_words(offset, elements, elem_bytes)
        phase = _phase_ways(words)
        if phase:
            ways, wavefronts, ideal = max(ways, phase), wavefronts + phase, ideal + 1
    return ways, wavefronts, ideal


def bank_conflicts(
    layout: Mapping[str, Any] | None, shape: Coord, elem_bytes: int, access: WarpAccess
) -> BankEstimate:
    """Estimate the n-way bank conflict of ``access`` to a ``shape`` tile stored in ``layout``.

    ``layout`` is a TTGIR shared encoding as a dict (see the module docstring),
    ``shape`` the tile's (rows, cols) and ``elem_bytes`` the element size. When
    the layout breaks the lanes' vectors, the split instructions are summed.
    """
    offset, notes = layout_offsets(layout, shape, elem_bytes)
    instructions = split_vectors(offset, access, elem_bytes)
    if len(instructions) > 1:
        width = instructions[0].vector_length * elem_bytes * 8
        notes.append(
            f"lane vectors are not contiguous under this layout: the access splits into "
            f"{len(instructions)} {width}-bit accesses"
        )
    costs = [_instruction_cost(offset, instruction, elem_bytes) for instruction in instructions]
    ways = max((c[0] for c in costs), default=0)
    return BankEstimate(
        ways=max(ways, 1),
        wavefronts=sum(c[1] for c in costs),
        ideal_wavefronts=sum(c[2] for c in costs),
        pattern=access.pattern,
        notes=tuple(notes),
    )
