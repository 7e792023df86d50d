"""Structural queries of the IR graph on real (checked-in) Triton 3.6 dumps."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "ir"))
import ir_build  # noqa: E402

from kernelrules.analyzers.irgraph import IrGraph  # noqa: E402

MANIFEST = ir_build.manifest()
MARKERS = MANIFEST["markers"]
LOAD_LINES = {MARKERS["matmul_load_a"], MARKERS["matmul_load_b"]}


@lru_cache(maxsize=None)
def graph(file_name: str) -> IrGraph:
    return IrGraph.from_text(ir_build.checked_in(file_name))


def only_dot(g: IrGraph):
    dots = g.dots()
    assert len(dots) == 1
    return dots[0]


def test_graph_has_data_nesting_and_memory_edges():
    g = graph("matmul_sm90.ttgir")
    assert all(0 <= u < len(g.module.operations) and 0 <= v < len(g.module.operations) for u, v in g.edges)
    dot = only_dot(g).op
    kinds = {k for edge_kinds in g.edges.values() for k in edge_kinds}
    assert kinds == {"data", "nested", "memory"}
    assert "nested" in g.edges[dot.index, dot.parent.index]
    assert all("data" in g.edges[value.owner.index, dot.index] for value in dot.operands if value is not None)
    copies = g.module.ops_named("ttg.async_copy_global_to_local")
    allocs = {op.index for op in g.module.ops_named("ttg.local_alloc")}
    for copy in copies:
        assert any("memory" in g.edges.get((copy.index, a), ()) for a in allocs)


@pytest.mark.parametrize("file_name, op_name", [("matmul_sm90.ttgir", "ttng.warp_group_dot"),
                                                ("matmul_sm89.ttgir", "tt.dot"), ("matmul_sm90.ttir", "tt.dot")])
def test_matmul_dot_shapes_and_precision(file_name, op_name):
    dot = only_dot(graph(file_name))
    assert dot.op.name == op_name
    assert dot.mnk == (128, 128, 64)
    assert (dot.a.dtype, dot.b.dtype, dot.c.dtype) == ("f16", "f16", "f32")
    assert dot.input_precision == "tf32" and dot.in_loop
    assert dot.location.line == MARKERS["matmul_dot"]
    assert dot.to_dict()["a"]["shape"] == [128, 64]


def test_dot_lowering_from_the_accumulator_layout():
    assert only_dot(graph("matmul_sm89.ttgir")).lowering == "mma"
    fma = only_dot(graph("fp32_ieee_sm89.ttgir"))
    assert (fma.lowering, fma.input_precision, fma.a.dtype) == ("fma", "ieee", "f32")
    assert only_dot(graph("matmul_sm90.ttir")).lowering == "unknown"  # no layouts before TTGIR


@pytest.mark.parametrize("file_name", ["matmul_sm90.ttgir", "matmul_sm89.ttgir", "matmul_m16_sm90.ttgir"])
def test_loads_feeding_a_pipelined_dot_are_the_two_tile_loads(file_name):
    g = graph(file_name)
    dot = only_dot(g)
    loads = g.loads_feeding(dot)
    assert {op.name for op in loads} == {"ttg.async_copy_global_to_local"}
    assert {op.location.line for op in loads} == LOAD_LINES
    assert {op.location.line for op in g.loads_feeding(dot, operands=(0,))} == {MARKERS["matmul_load_a"]}
    assert {op.location.line for op in g.loads_feeding(dot, operands=(1,))} == {MARKERS["matmul_load_b"]}
    assert g.loads_feeding(dot, operands=(2,)) == []  # the accumulator starts at zero


def test_loads_feeding_in_ttir_are_the_tl_loads():
    g = graph("matmul_sm90.ttir")
    loads = g.loads_feeding(only_dot(g))
    assert [op.name for op in loads] == ["tt.load", "tt.load"]
    assert {op.location.line for op in loads} == LOAD_LINES


def test_tma_loads_feed_the_dot_through_barriered_buffers():
    g = graph("tma_sm90.ttgir")
    dot = only_dot(g)
    assert {op.name for op in g.loads_feeding(dot)} == {"ttng.async_tma_copy_global_to_local"}
    assert g.pipelined(dot)


@pytest.mark.parametrize("file_name, expected", [("gated_load_sm89.ttgir", True), ("gated_load_sm89.ttir", True),
                                                 ("gated_pid_sm89.ttgir", False), ("gated_iv_sm89.ttgir", False),
                                                 ("matmul_sm90.ttgir", False)])
def test_dot_under_a_branch_on_loaded_data(file_name, expected):
    g = graph(file_name)
    dot = only_dot(g)
    assert g.dot_under_data_dependent_branch(dot) is expected
    if expected:
        (branch,) = g.data_dependent_branches(dot)
        assert branch.name == "scf.if"
        flag_loads = g._slice_loads(branch.operands[:1], control=True)
        assert [op.location.line for op in flag_loads] == [MARKERS["gate_flag_load"]]


@pytest.mark.parametrize("file_name, expected", [("matmul_sm90.ttgir", True), ("matmul_sm89.ttgir", True),
                                                 ("fp8_m16_sm90.ttgir", True), ("gated_load_sm89.ttgir", False),
                                                 ("fp32_ieee_sm89.ttgir", False), ("matmul_sm90.ttir", False)])
def test_pipelined(file_name, expected):
    g = graph(file_name)
    dot = only_dot(g)
    assert g.pipelined(dot) is expected
    loop = g.enclosing_loop(dot.op)
    if loop is not None:
        assert g.pipelined(loop) is expected


@pytest.mark.parametrize("file_name, kind, buffers", [("matmul_sm90.ttgir", "nvmma_shared", 4),
                                                      ("matmul_sm89.ttgir", "swizzled_shared", 3)])
def test_shared_layouts_of_the_pipeline_buffers(file_name, kind, buffers):
    layouts = graph(file_name).shared_layouts()
    assert [b.buffer_shape for b in layouts] == [(128, 64), (64, 128)]
    assert {b.layout["kind"] for b in layouts} == {kind}
    assert {b.num_buffers for b in layouts} == {buffers}
    shared = MANIFEST["fixtures"][file_name.split(".")[0]]["metadata"]["shared"]
    assert sum(b.bytes for b in layouts) == shared  # 131072 on sm_90 (4 buffers), 98304 on sm_89 (3)
    if kind == "nvmma_shared":
        assert layouts[0].layout["swizzlingByteWidth"] == 128
    else:
        assert {k: layouts[0].layout[k] for k in ("vec", "perPhase", "maxPhase", "order")} == {
            "vec": 8, "perPhase": 1, "maxPhase": 8, "order": [1, 0]}


def test_barriers_and_single_buffers_are_told_apart():
    layouts = graph("tma_sm90.ttgir").shared_layouts()
    barriers = [b for b in layouts if b.is_barrier]
    assert len(barriers) == 1 and barriers[0].dtype == "i64"
    epilogue = [b for b in layouts if not b.mutable]
    assert epilogue and epilogue[0].num_buffers == 1
    assert graph("gated_load_sm89.ttgir").shared_layouts()[0].num_buffers == 1  # not pipelined
