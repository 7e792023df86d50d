"""Launch signature inference: spec files, call sites, dataflow, naming, defaults."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelrules.discover.kernels import discover
from kernelrules.errors import SignatureSpecError
from kernelrules.specify.signatures import (
    infer_signature, load_spec_file, pointer_dtype_from_name, sidecar_path, write_spec_skeleton,
)

REPO = Path(__file__).resolve().parents[2]


def kernel_in(tmp_path: Path, body: str, name: str = "kern", file: str = "mod.py"):
    path = tmp_path / file
    path.write_text("import triton\nimport triton.language as tl\n" + textwrap.dedent(body), encoding="utf-8")
    return discover([path]).by_name(name)[0]


def test_matmul_example_signature():
    kernel = discover([REPO / "examples" / "matmul.py"]).kernels[0]
    sig = infer_signature(kernel, use_sidecar=False)
    assert sig.complete and sig.missing == []
    assert sig.spec["a_ptr"] == "*fp16" and sig.provenance["a_ptr"] == "naming"
    assert sig.spec["M"] == 4096 and sig.provenance["stride_am"] == "default"
    assert list(sig.spec) == [p.name for p in kernel.runtime_params]


def test_dataflow_finds_pointers_without_ptr_names(tmp_path):
    kernel = kernel_in(tmp_path, """
        @triton.jit
        def helper(dst, val):
            tl.store(dst, val)

        @triton.jit
        def kern(q, k, o, idx_ptr, lut, n, stride, scale, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            rows = q + offs * stride
            a = tl.load(rows, mask=offs < n)
            b = tl.load(tl.make_block_ptr(base=k, shape=(n,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,)))
            i = tl.load(idx_ptr + offs)
            helper(o + offs, a * b * scale + i.to(tl.float32) * 0.5)
            tl.atomic_add(lut + offs, 1)
        """)
    sig = infer_signature(kernel, use_sidecar=False)
    assert {k: sig.spec[k] for k in ("q", "k", "o", "lut")} == {"q": "*fp16", "k": "*fp16", "o": "*fp16", "lut": "*fp16"}
    assert sig.spec["idx_ptr"] == "*i32"
    assert sig.spec["n"] == 4096 and sig.spec["stride"] == 4096 and sig.provenance["n"] == "default"
    assert sig.spec["scale"] == "fp32"
    assert sig.complete


def test_float_by_dataflow_and_unused_arguments_get_a_default(tmp_path):
    kernel = kernel_in(tmp_path, """
        @triton.jit
        def kern(x_ptr, thresh, unused):
            v = tl.load(x_ptr)
            tl.store(x_ptr, tl.where(v > thresh, v, 0.0))
            if thresh < 0.5:
                pass
        """)
    sig = infer_signature(kernel, use_sidecar=False)
    assert sig.spec["thresh"] == "fp32" and sig.provenance["thresh"] == "dataflow"
    # Never read: no value changes how it compiles, so the default integer, labelled a default.
    assert sig.spec["unused"] == 4096 and sig.provenance["unused"] == "default" and sig.complete


def test_call_site_literals(tmp_path):
    kernel = kernel_in(tmp_path, """
        @triton.jit
        def kern(x_ptr, n, stride_xn, eps, BLOCK: tl.constexpr):
            tl.store(x_ptr + n * stride_xn, eps)

        def launch(x):
            kern[(1,)](x, x.numel(), 1, 1e-5, BLOCK=128)
            kern[(1,)](x, n=7, stride_xn=16, eps=0.1, BLOCK=64)
        """)
    sig = infer_signature(kernel, use_sidecar=False)
    assert sig.spec["stride_xn"] == 1 and sig.provenance["stride_xn"] == "call-site"
    assert sig.spec["n"] == 7 and sig.provenance["n"] == "call-site"
    assert sig.spec["eps"] == "fp32" and sig.provenance["eps"] == "call-site"
    assert sig.spec["x_ptr"] == "*fp16" and "BLOCK" not in sig.spec


def test_spec_sidecar_wins(tmp_path):
    kernel = kernel_in(tmp_path, """
        @triton.jit
        def kern(x_ptr, n):
            tl.store(x_ptr + n, 1)
        """)
    sidecar_path(kernel.path).write_text('kernels:\n  kern:\n    signature:\n      x_ptr: "*bf16"\n      n: 1024\n')
    assert sidecar_path(kernel.path).name == "mod.kernelrules.yaml"
    sig = infer_signature(kernel)
    assert sig.spec == {"x_ptr": "*bf16", "n": 1024}
    assert sig.provenance == {"x_ptr": "spec", "n": "spec"}
    explicit = infer_signature(kernel, spec={"x_ptr": "*fp32"})
    assert explicit.spec["x_ptr"] == "*fp32" and explicit.provenance["n"] == "default"


@pytest.mark.parametrize("text, line, fragment", [
    ('kernels:\n  kern:\n    signature:\n      x_ptr: "*float16"\n', 4, "x_ptr"),
    ("kernels:\n  kern:\n    signature:\n      x_ptr: TODO\n", 4, "TODO"),
    ("kernels:\n  kern:\n    sig: {}\n", 2, "signature"),
    ("kernels: [\n", 2, "invalid YAML"),
    ("other: 1\n", 1, "kernels"),
])
def test_broken_spec_names_file_and_line(tmp_path, text, line, fragment):
    path = tmp_path / "bad.kernelrules.yaml"
    path.write_text(text)
    with pytest.raises(SignatureSpecError) as info:
        load_spec_file(path)
    assert f"bad.kernelrules.yaml:{line}" in str(info.value) and fragment in str(info.value)


def test_spec_naming_unknown_parameter(tmp_path):
    kernel = kernel_in(tmp_path, "@triton.jit\ndef kern(x_ptr):\n    pass\n")
    with pytest.raises(SignatureSpecError, match="'y'"):
        infer_signature(kernel, spec={"y": 1})


def test_pointer_dtypes_from_names():
    assert pointer_dtype_from_name("x_ptr") == "*fp16"
    assert pointer_dtype_from_name("out_fp32_ptr") == "*fp32"
    assert pointer_dtype_from_name("wBf16Ptr") == "*bf16"
    assert pointer_dtype_from_name("a_fp8_ptr") == "*fp8e4nv"
    assert pointer_dtype_from_name("idx_ptr") == "*i32"
    assert pointer_dtype_from_name("labels_ptr") == "*i64"
    assert pointer_dtype_from_name("pointer") == "*fp16"  # "int" inside a word is not a token


def test_skeleton_round_trips(tmp_path):
    kernel = kernel_in(tmp_path, """
        @triton.jit
        def kern(x_ptr, n, unused):
            tl.store(x_ptr + n, 1)
        """)
    out = tmp_path / "mod.kernelrules.yaml"
    text = write_spec_skeleton([kernel], out)
    assert 'x_ptr: "*fp16"' in text and "# naming" in text and "unused: 4096" in text and "# default" in text
    # An argument nothing types (the kernel's source could not be read) is a TODO the loader refuses.
    sig = infer_signature(kernel, use_sidecar=False)
    del sig.spec["unused"], sig.provenance["unused"]
    sig.missing = ["unused"]
    text = write_spec_skeleton([kernel], out, {"kern": sig})
    assert "unused: TODO" in text
    with pytest.raises(SignatureSpecError, match="TODO"):
        load_spec_file(out)
    out.write_text(text.replace("TODO", "i32"))
    assert load_spec_file(out) == {"kern": {"x_ptr": "*fp16", "n": 4096, "unused": "i32"}}
