"""Reading launch signatures from torch.compile (Inductor) output, statically."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.specify.inductor import (
    CallValue,
    InductorOutputError,
    attribute_indices,
    inductor_kernel_info,
    inductor_kernels,
    inductor_signature,
    numel_value,
)

# Modeled on the shape of Inductor's generated kernels; written for these tests.
POINTWISE = '''
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.hints import DeviceProperties, TileHint

raise RuntimeError("this file must never be executed by kernelrules")

@triton_heuristics.pointwise(
    size_hints={'x': 2048}, filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp16', 'in_ptr1': '*fp32', 'out_ptr0': '*bf16', 'xnumel': 'i32',
                               'XBLOCK': 'constexpr'},
                 'device': DeviceProperties(type='cuda', index=0, multi_processor_count=132, cc=90, major=9,
                                            regs_per_multiprocessor=65536, warp_size=32),
                 'constants': {},
                 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]],
                              (2,): [['tt.divisibility', 16]], (3,): [['tt.divisibility', 16]]}]},
    inductor_meta={'grid_type': 'Grid1D', 'kernel_name': 'triton_poi_fused_add_mul_0', 'mutated_arg_names': []},
    min_elem_per_thread=0
)
@triton.jit
def triton_poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask).to(tl.float32)
    tmp1 = tl.load(in_ptr1 + (xindex), xmask)
    tl.store(out_ptr0 + (xindex), (tmp0 * tmp1).to(tl.bfloat16), xmask)


def helper_not_a_kernel(x):
    return x
'''

REDUCTION = '''
@triton_heuristics.reduction(
    size_hints={'x': 64, 'r0_': 1024},
    reduction_hint=ReductionHint.INNER,
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp32', 'in_ptr0': '*fp32', 'ks0': 'i64', 'xnumel': 'i32',
                               'r0_numel': 'i32', 'XBLOCK': 'constexpr', 'R0_BLOCK': 'constexpr'},
                 'device': DeviceProperties(type='cuda', index=0, cc=80),
                 'constants': {},
                 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]],
                              (4,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_red_fused_sum_1', 'num_load': 1, 'num_reduction': 1}
)
@triton.jit
def triton_red_fused_sum_1(in_out_ptr0, in_ptr0, ks0, xnumel, r0_numel, XBLOCK : tl.constexpr,
                           R0_BLOCK : tl.constexpr):
    pass
'''

OLD_STYLE = '''
@triton_heuristics.persistent_reduction(
    size_hints=[8, 512],
    reduction_hint=ReductionHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {0: '*fp32', 1: '*fp16', 2: 'i32', 3: 'i32'}, 'device': 0, 'device_type': 'cuda',
                 'constants': {}, 'configs': [AttrsDescriptor(divisible_by_16=(0, 1, 3), equal_to_1=())]},
    inductor_meta={}
)
@triton.jit
def triton_per_fused_softmax_2(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK : tl.constexpr):
    pass
'''

NAMED_OLD_STYLE = '''
@triton_heuristics.persistent_reduction(
    size_hints=[8, 512],
    reduction_hint=ReductionHint.DEFAULT,
    filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp16', 'xnumel': 'i32', 'rnumel': 'i32'},
                 'device': DeviceProperties(type='cuda', index=0, cc=86), 'constants': {'xnumel': 1},
                 'configs': [AttrsDescriptor.from_dict({'arg_properties': {'tt.divisibility': (0, 1, 3),
                                                        'tt.equal_to': (2,)}, 'cls': 'AttrsDescriptor'})]},
    inductor_meta={}
)
@triton.jit
def triton_per_fused_softmax_3(in_ptr0, out_ptr0, xnumel, rnumel, XBLOCK : tl.constexpr):
    pass
'''

TEMPLATE = '''
@triton_heuristics.template(
    num_stages=3, num_warps=8,
    triton_meta={'signature': {'arg_A': '*fp16', 'arg_B': '*fp16', 'out_ptr0': '*fp16'},
                 'device': DeviceProperties(type='cuda', index=0, cc=90), 'constants': {},
                 'configs': [{(0,): [['tt.divisibility', 16]], (1,): [['tt.divisibility', 16]],
                              (2,): [['tt.divisibility', 16]]}]},
    inductor_meta={'kernel_name': 'triton_tem_fused_mm_4'},
)
@triton.jit
def triton_tem_fused_mm_4(arg_A, arg_B, out_ptr0):
    pass
'''


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def test_pointwise_signature_and_hints(tmp_path: Path) -> None:
    path = write(tmp_path, "cpoi.py", POINTWISE)
    assert inductor_signature(path, "triton_poi_fused_add_mul_0") == {
        "in_ptr0": "*fp16", "in_ptr1": "*fp32", "out_ptr0": "*bf16", "xnumel": 2048}
    info = inductor_kernel_info(path, "triton_poi_fused_add_mul_0")
    assert info is not None
    assert info.kernel_type == "pointwise"
    assert info.size_hints == {"x": 2048}
    assert info.constants == {}
    assert info.device["cc"] == 90 and info.device["type"] == "cuda"
    assert info.divisible_by_16 == ("in_ptr0", "in_ptr1", "out_ptr0", "xnumel")
    assert info.hints == {"min_elem_per_thread": 0}
    assert info.inductor_meta["kernel_name"] == "triton_poi_fused_add_mul_0"
    assert info.line == textwrap.dedent(POINTWISE).splitlines().index(
        "def triton_poi_fused_add_mul_0(in_ptr0, in_ptr1, out_ptr0, xnumel, XBLOCK : tl.constexpr):") + 1


def test_reduction_keeps_divisibility_of_numels(tmp_path: Path) -> None:
    path = write(tmp_path, "cred.py", REDUCTION)
    info = inductor_kernel_info(path, "triton_red_fused_sum_1")
    assert info is not None and info.kernel_type == "reduction"
    assert info.size_hints == {"x": 64, "r0_": 1024}
    # xnumel is not divisible by 16: its hint moves off the multiple; r0_numel is divisible.
    # ks0 (a dynamic size) has no hint and no divisibility: it keeps its type.
    assert info.signature == {"in_out_ptr0": "*fp32", "in_ptr0": "*fp32", "ks0": "i64", "xnumel": 63,
                              "r0_numel": 1024}
    assert info.hints["reduction_hint"] == "ReductionHint.INNER"


def test_old_list_size_hints_and_attrs_descriptor(tmp_path: Path) -> None:
    path = write(tmp_path, "cper.py", OLD_STYLE)
    info = inductor_kernel_info(path, "triton_per_fused_softmax_2")
    assert info is not None and info.kernel_type == "persistent_reduction"
    # an integer-keyed signature is named from the def; the hint list follows the numel arguments
    assert info.size_hints == {"x": 8, "r": 512}
    assert info.signature == {"in_ptr0": "*fp32", "out_ptr0": "*fp16", "xnumel": 8, "rnumel": 512}
    assert info.divisible_by_16 == ("in_ptr0", "out_ptr0", "rnumel")
    path = write(tmp_path, "cper3.py", NAMED_OLD_STYLE)
    info = inductor_kernel_info(path, "triton_per_fused_softmax_3")
    assert info is not None
    assert info.size_hints == {"x": 8, "r": 512}
    assert info.constants == {"xnumel": 1}
    assert info.signature == {"in_ptr0": "*fp32", "out_ptr0": "*fp16", "xnumel": 1, "rnumel": 512}
    assert info.equal_to_1 == ("xnumel",)


def test_template_options(tmp_path: Path) -> None:
    path = write(tmp_path, "ctem.py", TEMPLATE)
    info = inductor_kernel_info(path, "triton_tem_fused_mm_4")
    assert info is not None and info.kernel_type == "template"
    assert info.signature == {"arg_A": "*fp16", "arg_B": "*fp16", "out_ptr0": "*fp16"}
    assert info.hints == {"num_stages": 3, "num_warps": 8}
    assert info.size_hints == {}


def test_output_code_with_embedded_kernels(tmp_path: Path) -> None:
    never_run = 'raise RuntimeError("this file must never be executed by kernelrules")'
    kernel = textwrap.dedent(POINTWISE).replace(never_run, "")
    reduction = textwrap.dedent(REDUCTION)
    text = (
        "from torch._inductor.async_compile import AsyncCompile\n"
        "async_compile = AsyncCompile()\n\n"
        f"triton_poi_fused_add_mul_0 = async_compile.triton('triton_poi_fused_add_mul_0', '''{kernel}''', "
        "device_str='cuda')\n\n"
        f"triton_red_fused_sum_1 = async_compile.triton('triton_red_fused_sum_1', '''{reduction}''', "
        "device_str='cuda')\n\n"
        "def call(args):\n    pass\n"
    )
    path = tmp_path / "output_code.py"
    path.write_text(text, encoding="utf-8")
    kernels = inductor_kernels(path)
    assert sorted(kernels) == ["triton_poi_fused_add_mul_0", "triton_red_fused_sum_1"]
    assert kernels["triton_red_fused_sum_1"].signature["r0_numel"] == 1024
    line = kernels["triton_poi_fused_add_mul_0"].line
    assert text.splitlines()[line - 1].startswith("def triton_poi_fused_add_mul_0(")


def test_not_an_inductor_kernel(tmp_path: Path) -> None:
    path = write(tmp_path, "cpoi.py", POINTWISE)
    assert inductor_signature(path, "helper_not_a_kernel") is None
    assert inductor_signature(path, "missing") is None


@pytest.mark.parametrize("hint, divisible, expected", [
    (1024, True, 1024), (8, True, 16), (100, True, 112), (1024, False, 1023), (100, False, 100), (1, False, 1),
])
def test_numel_value(hint: int, divisible: bool, expected: int) -> None:
    assert numel_value(hint, divisible) == expected


def test_attribute_forms() -> None:
    assert attribute_indices([{(0,): [["tt.divisibility", 16]], (2,): [["tt.equal_to", 1]]}]) == ({0}, {2})
    assert attribute_indices([CallValue("instance_descriptor", (), {"divisible_by_16": (1, 2),
                                                                    "equal_to_1": (3,)})]) == ({1, 2}, {3})
    assert attribute_indices([]) == (set(), set())


def test_errors_name_the_file(tmp_path: Path) -> None:
    broken = write(tmp_path, "broken.py", "def f(:\n")
    with pytest.raises(InductorOutputError, match="broken.py:1"):
        inductor_kernels(broken)
    dynamic = write(tmp_path, "dynamic.py", POINTWISE.replace("size_hints={'x': 2048}", "size_hints=hints()[0]"))
    with pytest.raises(KernelrulesError, match=r"dynamic\.py:\d+: 'size_hints'"):
        inductor_kernels(dynamic)
    no_signature = write(tmp_path, "nosig.py", TEMPLATE.replace("'signature'", "'sig'"))
    with pytest.raises(InductorOutputError, match="no triton_meta"):
        inductor_kernels(no_signature)
    with pytest.raises(InductorOutputError, match="cannot read"):
        inductor_kernels(tmp_path / "absent.py")
