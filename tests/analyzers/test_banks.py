"""Shared-memory bank model: hand-checked layouts and accesses, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelrules.analyzers.banks import (
    BankEstimate,
    WarpAccess,
    bank_conflicts,
    column_access,
    layout_offsets,
    ldmatrix_x4_access,
    lanes_per_phase,
    row_access,
)

SWIZZLED_MMA = {"kind": "swizzled_shared", "vec": 8, "perPhase": 1, "maxPhase": 8, "order": [1, 0]}


def nvmma(swizzle: int, transposed: bool = False, bits: int = 16) -> dict:
    return {"kind": "nvmma_shared", "swizzlingByteWidth": swizzle, "transposed": transposed, "elementBitWidth": bits}


# ----------------------------------------------------------------- layouts


def test_swizzled_formula_matches_the_td_examples():
    """TritonGPUAttrDefs.td, SwizzledSharedEncodingAttr example 5 (vec=2, perPhase=1, maxPhase=4)."""
    offset, _ = layout_offsets({"kind": "swizzled_shared", "vec": 2, "perPhase": 1, "maxPhase": 4}, (4, 8), 1)
    stored = [[0] * 8 for _ in range(4)]
    for r in range(4):
        for c in range(8):
            stored[r][offset(r, c) % 8] = r * 8 + c
    assert stored == [
        [0, 1, 2, 3, 4, 5, 6, 7],
        [10, 11, 8, 9, 14, 15, 12, 13],
        [20, 21, 22, 23, 16, 17, 18, 19],
        [30, 31, 28, 29, 26, 27, 24, 25],
    ]


def test_swizzled_per_phase_and_max_phase():
    """Example 4 of the .td: vec=1, perPhase=2, maxPhase=2 -> rows XOR (r/2)%2."""
    offset, _ = layout_offsets({"kind": "swizzled_shared", "vec": 1, "perPhase": 2, "maxPhase": 2}, (8, 4), 1)
    row6 = sorted(range(4), key=lambda c: offset(6, c))
    assert row6 == [1, 0, 3, 2]
    assert [offset(4, c) for c in range(4)] == [16, 17, 18, 19]


def test_nvmma_128b_swizzle_xors_16_byte_chunks_with_the_row():
    offset, _ = layout_offsets(nvmma(128), (16, 64), 2)
    for r in range(16):
        for chunk in range(8):
            assert offset(r, chunk * 8) == r * 128 + (chunk ^ (r % 8)) * 16


def test_nvmma_stores_swizzle_width_spans_one_after_another():
    offset, _ = layout_offsets(nvmma(64), (8, 64), 2)  # 128-byte rows, 64-byte spans
    assert offset(0, 32) == 8 * 64  # the second span starts after all 8 rows of the first
    assert offset(2, 0) == 2 * 64 + (0 ^ 1) * 16  # 64B swizzle: chunk ^= (row // 2) % 4


def test_padded_layout_inserts_padding_after_each_interval():
    # Gluon PaddedSharedLayout docstring: [[2, 1], [4, 2]] -> e0 e1 p e2 e3 p p p e4 ...
    offset, _ = layout_offsets({"kind": "padded_shared", "interval_padding_pairs": [[2, 1], [4, 2]]}, (4, 2), 1)
    assert [offset(r, c) for r in range(3) for c in range(2)] == [0, 1, 3, 4, 8, 9]


def test_padded_layout_with_linear_remapping():
    # Gluon docstring: shape [8, 4], [[8, 1]], offset_bases [[0,1],[0,2],[2,0],[4,0],[1,0]]
    layout = {
        "kind": "padded_shared",
        "intervals": [8],
        "paddings": [1],
        "offset_bases": [[0, 1], [0, 2], [2, 0], [4, 0], [1, 0]],
    }
    offset, _ = layout_offsets(layout, (8, 4), 1)
    assert offset(2, 0) == 4 and offset(4, 0) == 9 and offset(1, 0) == 18 and offset(7, 3) == 34


def test_unknown_layout_is_treated_as_unswizzled_with_a_note():
    estimate = bank_conflicts({"kind": "amd_rotating_shared"}, (64, 64), 2, column_access((64, 64), 2))
    assert estimate.ways == 32
    assert any("not modelled" in note for note in estimate.notes)


# ----------------------------------------------------------------- conflicts


@pytest.mark.parametrize(
    ("shape", "elem_bytes", "ways"),
    [
        ((32, 32), 4, 32),  # 128-byte rows: every lane in bank 0, a different word
        ((64, 64), 2, 32),  # 128-byte rows of fp16
        ((64, 32), 2, 16),  # 64-byte rows: banks 0 and 16 alternate
        ((64, 16), 4, 16),
        ((64, 33), 4, 1),  # the classic +1 padding
    ],
)
def test_unswizzled_column_read_conflicts(shape, elem_bytes, ways):
    estimate = bank_conflicts(None, shape, elem_bytes, column_access(shape, elem_bytes))
    assert estimate.ways == ways
    assert estimate.wavefronts == ways and estimate.ideal_wavefronts == 1


def test_swizzled_mma_layout_ldmatrix_is_conflict_free_everywhere():
    """swizzled_shared{vec=8, perPhase=1, maxPhase=8}, fp16 128x64: every 16x16 ldmatrix.x4."""
    for row in range(0, 128, 16):
        for col in range(0, 64, 16):
            estimate = bank_conflicts(SWIZZLED_MMA, (128, 64), 2, ldmatrix_x4_access((128, 64), 2, row=row, col=col))
            assert estimate == BankEstimate(1, 4, 4, "ldmatrix.x4", ())


def test_unswizzled_ldmatrix_is_8_way():
    estimate = bank_conflicts(None, (128, 64), 2, ldmatrix_x4_access((128, 64), 2))
    assert (estimate.ways, estimate.wavefronts, estimate.ideal_wavefronts) == (8, 32, 4)


@pytest.mark.parametrize(("swizzle", "shape"), [(128, (64, 64)), (64, (64, 32)), (32, (64, 16))])
def test_nvmma_swizzle_is_conflict_free_for_its_accesses(swizzle, shape):
    """16-byte rows of 8 consecutive rows (ldmatrix / core matrices) and 16-byte row-wise stores."""
    for access in (ldmatrix_x4_access(shape, 2), row_access(shape, 2, width_bits=128)):
        assert bank_conflicts(nvmma(swizzle), shape, 2, access).ways == 1
    # without the swizzle the same ldmatrix conflicts: 128 B rows 8-way, 64 B 4-way, 32 B 2-way
    assert bank_conflicts(None, shape, 2, ldmatrix_x4_access(shape, 2)).ways == swizzle // 16


def test_nvmma_transposed_swizzles_along_rows():
    layout = nvmma(128, transposed=True)
    access = ldmatrix_x4_access((64, 64), 2, vector_axis=0)
    assert bank_conflicts(layout, (64, 64), 2, access).ways == 1
    assert bank_conflicts({"kind": "swizzled_shared", "order": [0, 1]}, (64, 64), 2, access).ways == 8


def test_swizzle_cuts_column_reads_to_the_unswizzled_remainder():
    # 32 rows, col 0: chunk r % 8 -> 8 bank groups, 4 rows each
    assert bank_conflicts(SWIZZLED_MMA, (64, 64), 2, column_access((64, 64), 2)).ways == 4


def test_padding_removes_ldmatrix_conflicts():
    layout = {"kind": "padded_shared", "interval_padding_pairs": [[64, 8]]}  # 64 fp16 + 8 -> 144 B pitch
    assert bank_conflicts(layout, (64, 64), 2, ldmatrix_x4_access((64, 64), 2)).ways == 1


def test_broadcast_is_not_a_conflict():
    access = WarpAccess(tuple(((0, 0),) for _ in range(32)), "broadcast")
    assert bank_conflicts(None, (8, 8), 4, access).ways == 1


def test_split_vectors_get_a_note():
    # 128-bit fp16 vectors (8 elements) under vec=4 swizzling are not contiguous in odd rows
    layout = {"kind": "swizzled_shared", "vec": 4, "perPhase": 1, "maxPhase": 8}
    estimate = bank_conflicts(layout, (64, 64), 2, row_access((64, 64), 2, width_bits=128, row=1))
    assert any("split" in note for note in estimate.notes)


def test_phase_split_rule():
    assert [lanes_per_phase(b) for b in (1, 2, 4, 8, 16)] == [32, 32, 32, 16, 8]
    with pytest.raises(ValueError):
        lanes_per_phase(32)


def test_accesses_outside_the_tile_are_rejected():
    with pytest.raises(ValueError):
        ldmatrix_x4_access((8, 64), 2)
    with pytest.raises(ValueError):
        row_access((2, 8), 4, width_bits=128)


# ----------------------------------------------------------------- properties

pow2 = st.sampled_from([1, 2, 4, 8, 16])


@st.composite
def layouts(draw):
    kind = draw(st.sampled_from(["swizzled_shared", "nvmma_shared", "padded_shared", None, "other"]))
    if kind == "swizzled_shared":
        return {
            "kind": kind,
            "vec": draw(pow2),
            "perPhase": draw(st.sampled_from([1, 2, 4, 8])),
            "maxPhase": draw(pow2),
            "order": draw(st.sampled_from([[1, 0], [0, 1]])),
        }
    if kind == "nvmma_shared":
        swizzle = draw(st.sampled_from([0, 32, 64, 128]))
        return {"kind": kind, "swizzlingByteWidth": swizzle, "transposed": draw(st.booleans())}
    if kind == "padded_shared":
        return {"kind": kind, "interval_padding_pairs": [[draw(st.sampled_from([8, 16, 32, 64, 128])), draw(pow2)]]}
    return None if kind is None else {"kind": kind}


@st.composite
def cases(draw):
    elem_bytes = draw(st.sampled_from([1, 2, 4]))
    # both extents >= 128 bytes, so every nvmma swizzle width fits, transposed or not
    rows = draw(st.sampled_from([128 // elem_bytes, 256 // elem_bytes]))
    cols = draw(st.sampled_from([128 // elem_bytes, 256 // elem_bytes]))
    shape = (rows, cols)
    pattern = draw(st.sampled_from(["row", "column", "ldmatrix"]))
    if pattern == "row":
        width = draw(st.sampled_from([w for w in (32, 64, 128) if w >= 8 * elem_bytes]))
        row = draw(st.integers(0, rows - 1 - (32 * width // 8) // (cols * elem_bytes)))
        access = row_access(shape, elem_bytes, width_bits=width, row=row)
    elif pattern == "column":
        col, row = draw(st.integers(0, cols - 2)), draw(st.integers(0, rows - 1))
        access = column_access(shape, elem_bytes, col=col, row=row)
    else:
        access = ldmatrix_x4_access(shape, elem_bytes, row=16 * draw(st.integers(0, rows // 16 - 1)))
    return shape, elem_bytes, access


@given(layouts(), cases())
def test_ways_is_between_1_and_32(layout, case):
    shape, elem_bytes, access = case
    estimate = bank_conflicts(layout, shape, elem_bytes, access)
    assert 1 <= estimate.ways <= 32
    assert estimate.ideal_wavefronts <= estimate.wavefronts <= estimate.ways * estimate.ideal_wavefronts


@given(
    st.sampled_from([1, 2, 4]),
    st.sampled_from([32, 64, 128, 256]),
    st.sampled_from([8, 16, 32, 64, 128, 256]),
    st.integers(0, 7),
    st.sampled_from([[1, 0], None]),
)
def test_unswizzled_row_wise_access_is_conflict_free(elem_bytes, rows, cols, row, order):
    """Consecutive lanes reading consecutive 32-bit (or narrower) words never share a bank."""
    shape = (rows, cols)
    unswizzled = {"kind": "swizzled_shared", "vec": 1, "perPhase": 1, "maxPhase": 1, "order": order}
    layout = None if order is None else unswizzled
    for width in (32, 64, 128):
        start = row * cols * elem_bytes
        if start % (width // 8) or start + 32 * width // 8 > rows * cols * elem_bytes:
            continue  # a misaligned or out-of-tile vector is not the access this property is about
        estimate = bank_conflicts(layout, shape, elem_bytes, row_access(shape, elem_bytes, width_bits=width, row=row))
        assert estimate.ways == 1
        assert estimate.wavefronts == estimate.ideal_wavefronts == 32 * width // 8 // 128
