"""Launch specialization: kernelrules builds the ASTSource that ``JITFunction.run`` would.

The reference is Triton's own JIT: a stub driver stands in for the GPU and
``knobs.runtime.jit_cache_hook`` captures what ``run`` would compile, then skips it.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelrules.errors import KernelrulesError, SignatureSpecError
from kernelrules.discover.kernelsource import load_kernel
from kernelrules.compile.specialize import StandInPointer, specialize

triton = pytest.importorskip("triton")
from triton.backends.compiler import GPUTarget  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.py"
SM90 = GPUTarget("cuda", 90, 32)

MATMUL_SPEC = {
    "a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
    "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1,
}
MATMUL_CONFIG = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8}

SCALARS_FILE = '''\
import triton
import triton.language as tl


@triton.jit(do_not_specialize=["n_nospec"], do_not_specialize_on_alignment=["p_noalign", "m_noalign"])
def scalars(p, p_noalign, a, b, c, n_nospec, m_noalign, f, flag, q: tl.int64, opt, BLOCK: tl.constexpr):
    tl.store(p + tl.arange(0, BLOCK), a + b + c + n_nospec + m_noalign + q)
'''


class _StubDriver:
    """Just enough of a driver for ``JITFunction.run`` to reach compilation without a GPU."""

    def __init__(self, target):
        self.target = target

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0

    def get_current_target(self):
        return self.target


def jit_specialization(fn, kwargs, target=SM90):
    """``(signature, constexprs, attrs)`` that Triton's JIT builds for a launch with ``kwargs``."""
    from triton import knobs
    from triton.runtime.driver import driver

    captured = {}

    def hook(*, compile, **_):
        captured.update(signature=compile["signature"], constants=compile["constants"], attrs=compile["configs"][0])
        return True  # skip the compile

    saved_driver, saved_hook = dict(vars(driver)), knobs.runtime.jit_cache_hook
    driver.set_active(_StubDriver(target))
    knobs.runtime.jit_cache_hook = hook
    try:
        fn.device_caches.clear()
        fn.run(grid=(1,), warmup=True, **kwargs)
    finally:
        knobs.runtime.jit_cache_hook = saved_hook
        vars(driver).clear()
        vars(driver).update(saved_driver)
        fn.device_caches.clear()
    return captured["signature"], captured["constants"], captured["attrs"]


def assert_same_as_jit(fn, spec, constexprs, jit_args):
    """Our specialization of ``spec`` equals the JIT's for the real arguments ``jit_args``."""
    ours = specialize(fn, spec, constexprs, target=SM90)
    signature, constants, attrs = jit_specialization(fn, {**jit_args, **constexprs})
    assert ours.signature == signature
    assert ours.constexprs == constants
    assert ours.attrs == attrs
    return ours


@pytest.fixture(scope="module")
def matmul():
    return load_kernel(MATMUL, "matmul_kernel").fn


@pytest.fixture(scope="module")
def scalars(tmp_path_factory):
    path = tmp_path_factory.mktemp("spec") / "scalars.py"
    path.write_text(SCALARS_FILE)
    return load_kernel(path, "scalars").fn


def test_matmul_matches_jit_with_stand_in_tensors(matmul):
    tensors = {name: StandInPointer("fp16") for name in ("a_ptr", "b_ptr", "c_ptr")}
    ours = assert_same_as_jit(matmul, MATMUL_SPEC, MATMUL_CONFIG, {**MATMUL_SPEC, **tensors})
    assert ours.attrs_by_name() == {
        name: [["tt.divisibility", 16]]
        for name in ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    }
    # unit strides become constexprs, as at launch
    assert {k: v for k, v in ours.constexprs_by_name().items() if k.startswith("stride")} == {
        "stride_ak": 1, "stride_bn": 1, "stride_cn": 1,
    }


def test_matmul_matches_jit_with_torch_cpu_tensors(matmul):
    torch = pytest.importorskip("torch")
    a, b, c = (torch.empty((64, 64), dtype=torch.float16) for _ in range(3))
    assert a.data_ptr() % 16 == 0
    assert_same_as_jit(matmul, MATMUL_SPEC, MATMUL_CONFIG, {**MATMUL_SPEC, "a_ptr": a, "b_ptr": b, "c_ptr": c})


def test_torch_dtypes_match_pointer_type_strings(scalars):
    torch = pytest.importorskip("torch")
    for dtype, text in [(torch.bfloat16, "*bf16"), (torch.float32, "*fp32"), (torch.float8_e4m3fn, "*fp8e4nv"),
                        (torch.int64, "*i64"), (torch.bool, "*u1")]:
        tensor = torch.empty(16, dtype=dtype)
        spec = {"p": text, "p_noalign": text, "a": 3, "b": 5, "c": 7, "n_nospec": 9, "m_noalign": 11,
                "f": 1.0, "flag": True, "q": 13, "opt": None}
        assert_same_as_jit(scalars, spec, {"BLOCK": 16}, {**spec, "p": tensor, "p_noalign": tensor})


def test_do_not_specialize_and_annotations(scalars):
    spec = {"p": "*fp32", "p_noalign": "*fp32", "a": 1, "b": 32, "c": 2**40, "n_nospec": 64, "m_noalign": 64,
            "f": 2.5, "flag": False, "q": 16, "opt": None}
    stand_ins = {"p": StandInPointer("fp32"), "p_noalign": StandInPointer("fp32")}
    ours = assert_same_as_jit(scalars, spec, {"BLOCK": 16}, {**spec, **stand_ins})
    assert ours.signature["a"] == "constexpr"          # == 1
    assert ours.signature["c"] == "i64"                # does not fit in i32
    assert ours.signature["n_nospec"] == "i32"         # do_not_specialize: kept a plain i32 ...
    assert "n_nospec" not in ours.attrs_by_name()      # ... with no divisibility
    assert "m_noalign" not in ours.attrs_by_name()     # do_not_specialize_on_alignment
    assert "p_noalign" not in ours.attrs_by_name()
    assert ours.signature["q"] == "i64"                # the annotation wins
    assert ours.signature["opt"] == "constexpr"        # None, as in the JIT
    assert ours.attrs_by_name()["b"] == [["tt.divisibility", 16]]


@given(st.lists(st.one_of(st.integers(-(2**63), 2**64 - 1), st.sampled_from([0, 1, 16, -16, 2**31, 2**31 - 16])),
                min_size=5, max_size=5))
def test_any_int_values_match_jit(scalars, values):
    names = ["a", "b", "c", "n_nospec", "m_noalign"]
    spec = {"p": "*fp16", "p_noalign": "*fp16", **dict(zip(names, values)), "f": 0.5, "flag": True, "q": 3, "opt": None}
    assert_same_as_jit(scalars, spec, {"BLOCK": 32},
                       {**spec, "p": StandInPointer("fp16"), "p_noalign": StandInPointer("fp16")})


def test_unknown_values_are_not_specialized(scalars):
    spec = {"p": "*fp16", "p_noalign": "*fp16", "a": "i32", "b": "i64", "c": "u64", "n_nospec": "i32",
            "m_noalign": "i32", "f": "fp16", "flag": "i1", "q": "i32", "opt": None}
    ours = specialize(scalars, spec, {"BLOCK": 16}, target=SM90)
    assert {k: ours.signature[k] for k in ("a", "b", "c", "f", "flag", "q")} == {
        "a": "i32", "b": "i64", "c": "u64", "f": "fp16", "flag": "u1", "q": "i64",
    }
    assert set(ours.attrs_by_name()) == {"p"}


def test_shared_memory_needs_the_launch_attributes(matmul, tmp_path, monkeypatch):
    """The example matmul on sm_90: 196608 bytes with the launch's specialization, 49152 without."""
    from triton.compiler import ASTSource

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))

    options = {"num_warps": 8, "num_stages": 4}
    src = specialize(matmul, MATMUL_SPEC, MATMUL_CONFIG, target=SM90).ast_source(matmul)
    assert triton.compile(src, target=SM90, options=options).metadata.shared == 196608

    plain_signature = {name: ("*fp16" if name.endswith("_ptr") else "i32") for name in MATMUL_SPEC}
    plain_signature.update({name: "constexpr" for name in MATMUL_CONFIG})
    bare = ASTSource(matmul, plain_signature, MATMUL_CONFIG)
    assert triton.compile(bare, target=SM90, options=options).metadata.shared == 49152


@pytest.mark.parametrize(
    ("spec_change", "constexprs", "message"),
    [
        ({"bogus": 1}, MATMUL_CONFIG, "signature names unknown argument 'bogus'"),
        ({"M": None, "drop": "M"}, MATMUL_CONFIG, "missing value for argument 'M' in the signature spec"),
        ({}, {k: v for k, v in MATMUL_CONFIG.items() if k != "BLOCK_K"}, "missing value for argument 'BLOCK_K'"),
        ({}, {**MATMUL_CONFIG, "BLOCK_Q": 1}, "constexpr 'BLOCK_Q' is not an argument"),
        ({"BLOCK_M": 64}, MATMUL_CONFIG, "argument 'BLOCK_M' is a tl.constexpr"),
        ({"a_ptr": "*fp99"}, MATMUL_CONFIG, "argument 'a_ptr': unknown type '*fp99'"),
        ({"a_ptr": [1, 2]}, MATMUL_CONFIG, "argument 'a_ptr': cannot use list value"),
    ],
)
def test_bad_specs_name_the_argument(matmul, spec_change, constexprs, message):
    spec = dict(MATMUL_SPEC)
    drop = spec_change.pop("drop", None) if "drop" in spec_change else None
    spec.update({k: v for k, v in spec_change.items() if k != drop})
    if drop:
        spec.pop(drop)
    with pytest.raises(SignatureSpecError) as info:
        specialize(matmul, spec, constexprs, target=SM90)
    assert isinstance(info.value, KernelrulesError)
    assert message in str(info.value)


def test_fixed_constexprs_and_type_aliases(matmul):
    fixed = {"GROUP_SIZE_M": 8}
    config = {k: v for k, v in MATMUL_CONFIG.items() if k != "GROUP_SIZE_M"}
    spec = {**MATMUL_SPEC, "a_ptr": "*float16", "b_ptr": "*tl.float16", "M": "int32"}
    ours = specialize(matmul, spec, config, target=SM90, fixed=fixed)
    assert ours.signature["a_ptr"] == ours.signature["b_ptr"] == "*fp16"
    assert ours.signature["M"] == "i32" and "M" not in ours.attrs_by_name()
    assert ours.constexprs_by_name()["GROUP_SIZE_M"] == 8
    assert textwrap.dedent(str(ours.key_data()))  # JSON-friendly summary exists


_SPECIALIZE_IN_A_FRESH_PROCESS = """
import json, sys
{first}
from kernelrules.compile.compilejob import CompileJob, prepare
spec = {{"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096, "stride_am": 4096,
        "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}}
job = CompileJob(sys.argv[1], "matmul_kernel", spec, {{"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8}},
                 {{"num_warps": 4, "num_stages": 3}}, ("cuda", 90, 32))
key = prepare(job)[1].key_data()
loaded = "torch" in sys.modules
import torch  # the import works again afterwards
print(json.dumps({{"key": repr(key), "torch_loaded_by_specializing": loaded}}))
"""


def test_the_cli_and_tune_specialize_without_importing_torch_and_get_the_same_key():
    """Triton's native specializer imports torch at its first call only for a fast path; the CLI and
    tune's driver (``hide_torch_from_specializer``) set it up with torch hidden (seconds saved at the
    start of a lint or tune), and the key is the one a process with torch imported first gets. A
    library user's process is left alone."""
    import json
    import subprocess

    pytest.importorskip("torch")
    matmul = str(Path(__file__).resolve().parents[2] / "examples" / "matmul.py")
    hide = "from kernelrules.compile.specialize import hide_torch_from_specializer; hide_torch_from_specializer()"
    runs = {}
    for label, first in (("cli", hide), ("library", ""), ("torch first", "import torch; " + hide)):
        code = _SPECIALIZE_IN_A_FRESH_PROCESS.format(first=first)
        done = subprocess.run([sys.executable, "-c", code, matmul], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
    assert runs["cli"]["torch_loaded_by_specializing"] is False
    assert runs["library"]["torch_loaded_by_specializing"] is True
    assert runs["cli"]["key"] == runs["library"]["key"] == runs["torch first"]["key"]
