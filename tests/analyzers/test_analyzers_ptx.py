"""The PTX reader on real (checked-in) Triton 3.6 PTX and on hand-written snippets."""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "ir"))
import ir_build  # noqa: E402

from kernelrules.analyzers import ptx  # noqa: E402

MARKERS = ir_build.manifest()["markers"]


@lru_cache(maxsize=None)
def listing(name: str) -> ptx.PtxListing:
    return ptx.parse(ir_build.checked_in(f"{name}.ptx"))


def test_directives_of_the_sm90_matmul():
    p = listing("matmul_sm90")
    assert (p.version, p.target, p.address_size) == ("8.7", "sm_90a", 64)
    assert p.entries == ["matmul_kernel"] and p.reqntid == (256,) and p.maxnreg is None
    assert p.files[1].endswith("ir_kernels.py") and p.files[2].endswith("triton/language/standard.py")


def test_wgmma_on_sm90_mma_sync_at_m16():
    assert listing("matmul_sm90").mma() == [{"kind": "wgmma", "shape": "m64n128k16", "types": "f32.f16.f16",
                                             "count": 4}]
    (m16,) = listing("matmul_m16_sm90").mma()
    assert (m16["kind"], m16["shape"], m16["types"]) == ("mma_sync", "m16n8k16", "f32.f16.f16.f32")


def test_memory_traffic_classes_and_widths():
    p = listing("matmul_sm90")
    classes = p.class_counts()
    assert classes["cp_async"] == sum(p.cp_async_sizes().values()) > 0
    assert set(p.cp_async_sizes()) == {16}  # 16-byte cp.async: the loads were vectorised
    assert set(p.access_widths("st.shared")) == {128}  # st.shared.v4.b32
    assert "mma_sync" not in classes and classes["wgmma"] == 4


def test_tma_and_fp8_conversion_classes():
    tma = listing("tma_sm90").class_counts()
    assert tma["tma_load"] > 0 and tma["tma_store"] > 0 and "cp_async" not in tma
    assert listing("fp8_m16_sm90").class_counts()["cvt_fp8"] > 0  # fp8 upcast to fp16 before mma.sync


def test_fp32_ieee_dot_is_scalar_fma():
    p = listing("fp32_ieee_sm89")
    assert p.mma() == []
    # a 32x32x32 product over 128 threads: 32*32*32 / 128 = 256 FMAs per thread
    assert p.float_ops()["fma.f32"] == 256 and p.class_counts()["fma_f32"] == 256


def test_counts_map_to_source_lines():
    by_line = {key.rsplit("/", 1)[-1]: value for key, value in listing("matmul_sm90").counts_by_line().items()}
    assert by_line[f"ir_kernels.py:{MARKERS['matmul_dot']}"]["wgmma"] == 4
    assert by_line[f"ir_kernels.py:{MARKERS['matmul_load_a']}"]["cp_async"] > 0
    assert not any(key.startswith("standard.py") for key in by_line)  # tl.cdiv maps to its call site


def test_inlined_call_sites_resolve_to_paths():
    inlined = [i for i in listing("matmul_sm90").instructions if i.inlined_at]
    assert inlined and inlined[0].loc[0].endswith("standard.py")
    assert inlined[0].inlined_at[0][0].endswith("ir_kernels.py") and inlined[0].source() == inlined[0].inlined_at[0]


HANDWRITTEN = """
.version 8.4
.target sm_80, debug
.address_size 64
.visible .entry k(
    .param .u64 k_param_0
)
.maxnreg 128
.maxntid 128, 1, 1
{
	.reg .pred 	%p<3>;
	.loc	1 5 3
$L__BB0_1:	@%p1 ld.global.v4.b32 { %r1, %r2, %r3, %r4 }, [ %rd1 + 0 ];
	{ .reg .pred %q; setp.ne.b32 %q, %r1, 0; @!%q bra $L__BB0_1; }
	cp.async.ca.shared.global [ %r5 + 0 ], [ %rd2 + 0 ], 0x4, %r6;
	mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, {%r5,%r6}, {%f1,%f2,%f3,%f4};
	fma.rn.ftz.f32 %f5, %f1, %f2, %f3;
	st.shared.b16 [%r7], %rs1;
	bar.sync 0;
	ret;
}
	.file	1 "/src" "k.py"
"""


def test_handwritten_ptx():
    p = ptx.parse(HANDWRITTEN)
    assert (p.target, p.maxnreg, p.maxntid, p.entries) == ("sm_80", 128, (128, 1, 1), ["k"])
    ops = [i.opcode for i in p.instructions]
    assert ops[:3] == ["ld.global.v4.b32", "setp.ne.b32", "bra"]
    assert p.instructions[0].predicated and p.instructions[0].loc == ("/src/k.py", 5, 3)
    assert p.access_widths("ld.global") == {128: 1} and p.access_widths("st.shared") == {16: 1}
    assert p.cp_async_sizes() == {4: 1}
    assert p.mma() == [{"kind": "mma_sync", "shape": "m16n8k8", "types": "f32.tf32.tf32.f32", "count": 1}]
    assert p.float_ops() == {"fma.f32": 1} and p.class_counts()["bar_sync"] == 1


@pytest.mark.parametrize("opcode, expected", [
    ("ld.global.L1::evict_last.v4.b32", 128), ("ld.shared.v2.f32", 64), ("st.shared.b16", 16), ("ld.param.u64", 64)])
def test_access_bits(opcode, expected):
    assert ptx.access_bits(opcode) == expected


@pytest.mark.parametrize("opcode, expected", [
    ("wgmma.mma_async.sync.aligned.m64n256k32.f32.e4m3.e5m2", ("m64n256k32", "f32.e4m3.e5m2")),
    ("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32", ("m16n8k32", "s32.s8.s8.s32")),
    ("tcgen05.mma.cta_group::1.kind::f16", (None, "f16")),
])
def test_mma_shape_and_types(opcode, expected):
    assert ptx.mma_shape_types(opcode) == expected


def test_text_that_is_not_ptx_gives_an_empty_listing():
    p = ptx.parse("module {\n  tt.func @f() {\n  }\n}\n")
    assert p.target is None and p.mma() == []
