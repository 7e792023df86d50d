"""The MLIR reader on real Triton 3.6 dumps (checked in) and on text that is not MLIR."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "ir"))
import ir_build  # noqa: E402

from kernelrules.analyzers import mlir  # noqa: E402
from kernelrules.analyzers.irgraph import IrGraph  # noqa: E402
from kernelrules.analyzers.mlir_loc import resolve  # noqa: E402
from kernelrules.analyzers.mlir_text import parse_attribute, parse_type  # noqa: E402

MARKERS = ir_build.manifest()["markers"]
DUMPS = sorted(p.name for p in ir_build.HERE.iterdir() if p.suffix in (".ttir", ".ttgir"))


@pytest.fixture(scope="module")
def sm90() -> mlir.Module:
    return mlir.parse(ir_build.checked_in("matmul_sm90.ttgir"))


def one(module: mlir.Module, name: str) -> mlir.Operation:
    ops = module.ops_named(name)
    assert len(ops) == 1, [op.name for op in ops]
    return ops[0]


@pytest.mark.parametrize("file_name", DUMPS)
def test_every_checked_in_dump_parses_with_all_operands_resolved(file_name):
    module = mlir.parse(ir_build.checked_in(file_name))
    assert module.operations[0].name == "builtin.module"
    assert module.ops_named("tt.func")
    unresolved = [(op.line, name) for op in module.operations
                  for name, value in zip(op.operand_names, op.operands) if value is None]
    assert unresolved == []


def test_warp_group_dot_operands_types_and_attributes(sm90):
    dot = one(sm90, "ttng.warp_group_dot")
    a, b, c = dot.operands
    assert (a.type.kind, a.type.shape, a.type.dtype) == ("memdesc", (128, 64), "f16")
    assert b.type.shape == (64, 128)
    assert c.is_block_arg and c.owner.name == "scf.for"
    result = dot.result_types[0]
    assert (result.kind, result.shape, result.dtype, result.encoding) == ("tensor", (128, 128), "f32", "#mma")
    assert dot.input_precision == "tf32" and dot.attributes["isAsync"] is True
    assert dot.parent.name == "scf.for"


def test_scf_for_results_and_block_arguments(sm90):
    loop = one(sm90, "scf.for")
    assert len(loop.results) == 11 and loop.results[0].name.endswith("#0")
    arguments = loop.regions[0].blocks[0].arguments
    assert len(arguments) == 12
    assert arguments[0].type.raw == "i32"  # the induction variable
    assert arguments[1].type.shape == (128, 128)  # the accumulator
    assert loop.operand_names[:3] == ["%c0_i32", "%1", "%c1_i32"]


def test_multi_buffered_local_alloc_type(sm90):
    alloc = sm90.ops_named("ttg.local_alloc")[0]
    mem = alloc.result_types[0]
    assert (mem.kind, mem.shape, mem.dtype) == ("memdesc", (4, 128, 64), "f16")
    assert (mem.encoding, mem.memory_space, mem.mutable) == ("#shared", "#smem", True)
    assert mem.element_bits == 16


def test_encodings_and_module_attributes(sm90):
    assert sm90.encodings["#shared"] == {"kind": "nvmma_shared", "swizzlingByteWidth": 128, "transposed": False,
                                         "elementBitWidth": 16}
    assert sm90.encodings["#mma"]["kind"] == "nvidia_mma" and sm90.encodings["#mma"]["versionMajor"] == 3
    assert sm90.encodings["#smem"] == {"kind": "shared_memory"}
    assert (sm90.num_warps, sm90.threads_per_warp, sm90.target) == (8, 32, "cuda:90")
    sm89 = mlir.parse(ir_build.checked_in("matmul_sm89.ttgir"))
    assert sm89.encodings["#shared"] == {"kind": "swizzled_shared", "vec": 8, "perPhase": 1, "maxPhase": 8,
                                         "order": [1, 0]}
    assert sm89.encodings["#blocked"]["kind"] == "blocked" and "sizePerThread" in sm89.encodings["#blocked"]


def test_function_arguments_keep_their_attributes(sm90):
    func = one(sm90, "tt.func")
    args = {a.name: a for a in func.regions[0].blocks[0].arguments}
    assert args["%a_ptr"].type.kind == "ptr" and args["%a_ptr"].attributes == {"tt.divisibility": 16}
    assert func.symbol == "matmul_kernel"


def test_locations_resolve_to_the_kernel_line(sm90):
    dot = one(sm90, "ttng.warp_group_dot")
    assert dot.location.file.endswith("ir_kernels.py")
    assert dot.location.line == MARKERS["matmul_dot"]
    assert dot.location.name == "acc"
    loads = sm90.ops_named("ttg.async_copy_global_to_local")
    assert {op.location.line for op in loads} == {MARKERS["matmul_load_a"], MARKERS["matmul_load_b"]}


def test_inlined_helper_locations_keep_the_call_stack(sm90):
    # tl.cdiv is a jit helper in triton/language/standard.py inlined into the kernel.
    inlined = [op for op in sm90.operations if op.location and len(op.location.frames) > 1]
    assert inlined
    location = inlined[0].location
    assert location.file.endswith("triton/language/standard.py")  # the innermost frame
    assert location.user_frame().file.endswith("ir_kernels.py")


def test_generic_form_reduce_with_its_combiner_region():
    module = mlir.parse(ir_build.checked_in("softmax_sm90.ttgir"))
    reduce_op = module.ops_named("tt.reduce")[0]
    assert reduce_op.attributes == {"axis": 0}
    assert reduce_op.result_types[0].raw == "f32"
    block = reduce_op.regions[0].blocks[0]
    assert [a.type.raw for a in block.arguments] == ["f32", "f32"]
    assert [op.name for op in block.operations][-1] == "tt.reduce.return"
    assert reduce_op.location.user_frame().line == MARKERS["softmax_max"]  # tl.max is a jit helper


def test_cast_results_have_the_type_after_to():
    """``arith.truncf %x : tensor<..xf32, #mma> to tensor<..xf16, #mma>``: the result is the f16 tensor."""
    text = """#mma = #ttg.nvidia_mma<{versionMajor = 2, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 8]}>
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k(%x: tensor<64x32xf32, #mma>) {
    %h = arith.truncf %x : tensor<64x32xf32, #mma> to tensor<64x32xf16, #mma>
    %w = arith.extf %h : tensor<64x32xf16, #mma> to tensor<64x32xf32, #mma>
    tt.return
  }
}
"""
    module = mlir.parse(text)
    truncf, extf = one(module, "arith.truncf"), one(module, "arith.extf")
    assert (truncf.result_types[0].dtype, truncf.result_types[0].encoding) == ("f16", "#mma")
    assert extf.result_types[0].dtype == "f32" and extf.results[0].type.shape == (64, 32)


def test_scf_if_has_both_regions_and_nests_the_dot():
    module = mlir.parse(ir_build.checked_in("gated_load_sm89.ttgir"))
    branch = one(module, "scf.if")
    assert len(branch.regions) == 2 and branch.result_types[0].shape == (64, 64)
    dot = one(module, "tt.dot")
    assert [op.name for op in dot.ancestors()][:3] == ["scf.if", "scf.for", "tt.func"]


def test_dot_attributes_inline_and_in_braces():
    fp8 = one(mlir.parse(ir_build.checked_in("fp8_m16_sm90.ttgir")), "tt.dot")
    assert fp8.input_precision == "tf32" and fp8.max_num_imprecise_acc == 1073741824
    ieee = one(mlir.parse(ir_build.checked_in("fp32_ieee_sm89.ttgir")), "tt.dot")
    assert ieee.input_precision is None  # IEEE is the default, which the printer leaves out


def test_location_forms():
    aliases = {"#loc": 'loc("/k.py":10:0)', "#loc2": 'loc("/k.py":12:4)', "#loc3": 'loc("/lib/triton/language/s.py":3:1)',
               "#loc4": "loc(callsite(#loc3 at #loc2))", "#loc5": 'loc("acc"(#loc4))', "#loc6": "loc(#loc7)",
               "#loc7": "loc(#loc6)"}
    named = resolve("#loc5", aliases)
    assert [f.line for f in named.frames] == [3, 12] and named.name == "acc"
    assert str(named) == "/k.py:12:4"
    assert resolve("fused[#loc1, #loc2]", aliases).line == 12
    assert resolve('fused<"x">[unknown, "/k.py":7:2]', aliases).line == 7
    assert resolve("unknown", aliases) is None
    assert resolve("#loc6", aliases) is None  # a cycle, cut


def test_type_forms():
    ptrs = parse_type("tensor<128x64x!tt.ptr<f16>, #blocked>")
    assert ptrs.shape == (128, 64) and ptrs.dtype == "!tt.ptr<f16>" and ptrs.pointee().dtype == "f16"
    assert parse_type("!tt.ptr<bf16>").pointee().raw == "bf16"
    tmem = parse_type("!ttg.memdesc<128x128xf32, #tmem, #ttng.tensor_memory, mutable, 1x128x128>")
    assert tmem.memory_space == "#ttng.tensor_memory" and tmem.extra == ("1x128x128",)
    assert parse_type("f8E4M3FN").element_bits == 8
    assert parse_type("tensor<1024xf32, #ttg.slice<{dim = 1, parent = #blocked}>>").encoding.startswith("#ttg.slice")
    assert parse_type("!tt.tensordesc<tensor<64x64xf16, #shared>>").kind == "tensordesc"
    assert parse_type("(i32) -> i32").kind == "other"


def test_attribute_forms():
    assert parse_attribute('{a = 1 : i32, b = "x", c, d = [1, -2], e = 1.5e+00, f = #blocked}') == {
        "a": 1, "b": "x", "c": True, "d": [1, -2], "e": 1.5, "f": "#blocked"}
    assert parse_attribute("#ttng.tensor_memory_encoding<blockM = 128, blockN = 64, colStride = 1>") == {
        "kind": "tensor_memory_encoding", "blockM": 128, "blockN": 64, "colStride": 1}
    padded = parse_attribute("#ttg.padded_shared<[32:+4, 64:+8] {order = [1, 0], shape = [64, 64]}>")
    assert padded["interval_padding_pairs"] == [[32, 4], [64, 8]] and padded["order"] == [1, 0]
    assert parse_attribute("dense<0.000000e+00> : tensor<4xf32>") == "dense<0.000000e+00> : tensor<4xf32>"
    with pytest.raises(ValueError):
        parse_attribute("#ttg.blocked<{order = [1,> 0]}>")  # a stray '>' (once looped forever)


def test_unreadable_encoding_is_kept_raw():
    text = ir_build.checked_in("fp32_ieee_sm89.ttgir").replace("order = [1, 0]}>", "order = [1,> 0]}>", 1)
    encoding = next(v for v in mlir.parse(text).encodings.values() if v["kind"] == "unknown")
    assert "[1,> 0]" in encoding["raw"]


@pytest.mark.parametrize("text, line", [
    ("", 1),
    ("hello world", 1),
    ("// Generated by LLVM NVPTX Back-End\n\n.version 8.7\n.target sm_90a", 3),
    ("module {\n  %0 = arith.constant 1 : i32\n", 1),
    ('module {\n}\n}', 3),
    ("module {\n  %0 = arith.addi %a, (%b : i32\n}", 2),
])
def test_text_that_is_not_mlir_raises_one_error_with_its_line(text, line):
    with pytest.raises(mlir.MlirParseError) as caught:
        mlir.parse(text)
    assert caught.value.line == line and f"line {line}" in str(caught.value)


_BREAKERS = ["{", "}", "(", ")", "<", ">", '"', "%x", ":", "loc(", "#loc", "^bb0(", "=", ","]


@settings(max_examples=120, suppress_health_check=[HealthCheck.too_slow])
@given(file_name=st.sampled_from(DUMPS), data=st.data())
def test_damaged_dumps_parse_or_raise_mlir_parse_error(file_name, data):
    lines = ir_build.checked_in(file_name).splitlines()
    index = data.draw(st.integers(0, len(lines) - 1))
    action = data.draw(st.sampled_from(["drop", "cut", "insert"]))
    if action == "drop":
        del lines[index]
    elif action == "cut":
        lines[index] = lines[index][: data.draw(st.integers(0, len(lines[index])))]
    else:
        at = data.draw(st.integers(0, len(lines[index])))
        lines[index] = lines[index][:at] + data.draw(st.sampled_from(_BREAKERS)) + lines[index][at:]
    try:
        graph = IrGraph(mlir.parse("\n".join(lines)))
    except mlir.MlirParseError:
        return
    for dot in graph.dots():  # the queries must survive whatever the parser accepted
        graph.loads_feeding(dot)
        graph.dot_under_data_dependent_branch(dot)
        graph.pipelined(dot)
    assert all(b.to_dict() for b in graph.shared_layouts())


def test_checked_in_dumps_are_current():
    """The dumps name lines of ir_kernels.py: after editing it, run regenerate.py."""
    import hashlib

    import triton

    manifest = ir_build.manifest()
    assert manifest["kernels_sha256"] == hashlib.sha256(ir_build.KERNELS_FILE.read_bytes()).hexdigest(), \
        "tests/fixtures/ir/ir_kernels.py changed: run tests/fixtures/ir/regenerate.py"
    assert manifest["markers"] == ir_build.markers()
    assert manifest["triton_version"] == triton.__version__ or pytest.skip("dumps come from another Triton")
