"""Kernels launched with host ``TensorDescriptor`` arguments (issue 14): typed without a spec as
``tensordesc<dtype[block shape]>``, the block shape read from the launcher in the package, from the
autotune ``pre_hook``, or guessed from the kernel's offsets; judged at the compiled stage.

Each test writes a small package into ``tmp_path``; nothing of it is imported.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from kernelrules.compile import descriptor
from kernelrules.discover.kernels import discover
from kernelrules.errors import SignatureSpecError
from kernelrules.specify.guess_search import guessed_fp16_pointers, pointer_variants
from kernelrules.specify.kernelspec import resolve
from kernelrules.specify.signatures import load_spec_file

triton = pytest.importorskip("triton")

KERNELS = """
import triton
import triton.language as tl


@triton.jit
def matmul_tma(a_desc, b_desc, c_desc, M, N, K,
               BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = a_desc.load([pid_m * BLOCK_M, k])
        b = b_desc.load([k, pid_n * BLOCK_N])
        acc = tl.dot(a, b, acc)
    c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N], acc.to(c_desc.dtype))
"""

#: The launcher, in another module: literal block sizes under its own names, passed as the constexprs.
LAUNCHER = """
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from .kernels import matmul_tma


def matmul(a, b):
    M, K = a.shape
    _, N = b.shape
    c = torch.empty((M, N), dtype=a.dtype, device=a.device)
    bm, bn, bk = 64, 64, 32
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    b_desc = TensorDescriptor.from_tensor(b, block_shape=[bk, bn])
    c_desc = TensorDescriptor(c, c.shape, c.stride(), [bm, bn // 2 * 2])
    matmul_tma[(M // bm, N // bn)](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk)
    return c
"""

#: The block shape set per config by the autotune pre_hook, as liger-kernel and flag_gems do.
HOOKED = """
import triton
import triton.language as tl


def set_blocks(nargs):
    BM = nargs["BLOCK_M"]
    nargs["x_desc"].block_shape = [1, BM, nargs["BLOCK_N"]]
    nargs["y_desc"].block_shape = [1, BM, nargs["BLOCK_N"]]


@triton.autotune(configs=[triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, pre_hook=set_blocks)], key=["M"])
@triton.jit
def copy3d(x_desc, y_desc, M, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    b = tl.program_id(1)
    row = tl.program_id(0) * BLOCK_M
    y_desc.store([b, row, 0], x_desc.load([b, row, 0]))
"""

#: A block shape nothing in the source gives: built by a function, loaded at computed offsets.
HOSTILE = """
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def opaque(x_desc, y_desc, off, BLOCK: tl.constexpr):
    y_desc.store([off, off], x_desc.load([off, off]))


def launch(x, y, shape_of):
    x_desc = TensorDescriptor.from_tensor(x, shape_of(x))
    y_desc = TensorDescriptor.from_tensor(y, shape_of(y))
    opaque[(1,)](x_desc, y_desc, 0, BLOCK=64)
"""


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    return root


def kernel(path: Path, name: str):
    return next(k for k in discover([path]).kernels if k.name == name)


# --------------------------------------------------------------------------- the type string


def test_the_type_string_resolves_per_config():
    assert descriptor.is_descriptor("tensordesc<fp16[BLOCK_M, 64]>") and not descriptor.is_descriptor("*fp16")
    assert descriptor.resolve("tensordesc<bf16[BLOCK_M, BLOCK_K // 2]>", {"BLOCK_M": 128, "BLOCK_K": 64},
                              arg="a") == ("bf16", [128, 32])
    with pytest.raises(SignatureSpecError, match="'BLOCK_K'"):
        descriptor.resolve("tensordesc<fp16[BLOCK_M, BLOCK_K]>", {"BLOCK_M": 128}, arg="a")
    with pytest.raises(SignatureSpecError, match="element type"):
        descriptor.resolve("tensordesc<half7[64]>", {}, arg="a")
    with pytest.raises(SignatureSpecError, match="powers of two"):
        descriptor.resolve("tensordesc<fp16[48, 64]>", {}, arg="a")


def test_the_stand_in_is_specialized_as_a_host_descriptor():
    """Triton's own binder turns the stand-in into the type string a real TensorDescriptor gets."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    from kernelrules.compile.specialize import StandInPointer

    stand_in = descriptor.stand_in("tensordesc<fp16[BM, 32]>", {"BM": 64}, arg="a_desc", tensor=StandInPointer)
    assert native_specialize_impl(BaseBackend, stand_in, False, True, True) == ("tensordesc<fp16[64, 32]>", None)


def test_a_spec_file_may_give_a_descriptor(tmp_path):
    path = tmp_path / "k.kernelrules.yaml"
    path.write_text('kernels:\n  k:\n    signature:\n      a_desc: "tensordesc<fp8e4nv[BLOCK_M, 128]>"\n')
    assert load_spec_file(path) == {"k": {"a_desc": "tensordesc<fp8e4nv[BLOCK_M, 128]>"}}


def test_guessed_fp16_descriptors_are_retried_with_the_pointer_types():
    spec = {"a_desc": "tensordesc<fp16[BM, BK]>", "x_ptr": "*fp16", "n": 4096}
    provenance = {"a_desc": "naming (block shape from ...)", "x_ptr": "naming", "n": "default"}
    assert guessed_fp16_pointers(spec, provenance) == ["a_desc", "x_ptr"]
    dtype, variant = pointer_variants(spec, provenance)[0]
    assert dtype == "bf16" and variant == {"a_desc": "tensordesc<bf16[BM, BK]>", "x_ptr": "*bf16", "n": 4096}
    assert guessed_fp16_pointers({"a_desc": "tensordesc<fp16[8]>"}, {"a_desc": "spec"}) == []


# --------------------------------------------------------------------------- reading the source


def test_block_shapes_come_from_the_launcher_in_another_module(tmp_path):
    root = write(tmp_path, {"tdpkg/__init__.py": "", "tdpkg/kernels.py": KERNELS, "tdpkg/launch.py": LAUNCHER})
    resolved = resolve(kernel(root / "tdpkg" / "kernels.py", "matmul_tma"))
    spec = resolved.signature.spec
    assert resolved.signature.complete
    assert spec["a_desc"] == "tensordesc<fp16[BLOCK_M, BLOCK_K]>"
    assert spec["b_desc"] == "tensordesc<fp16[BLOCK_K, BLOCK_N]>"
    assert spec["c_desc"] == "tensordesc<fp16[BLOCK_M, BLOCK_N // 2 * 2]>"
    assert "the launcher `matmul` (launch.py:13)" in resolved.provenance["a_desc"]
    assert resolved.provenance["a_desc"].startswith("naming")  # the element type is a guess
    assert any("guessed tensor descriptors" in note for note in resolved.notes)


def test_a_kernel_alone_gets_block_shapes_from_its_offsets(tmp_path):
    path = write(tmp_path, {"kernels.py": KERNELS}) / "kernels.py"
    resolved = resolve(kernel(path, "matmul_tma"))
    assert resolved.signature.spec["a_desc"] == "tensordesc<fp16[BLOCK_M, BLOCK_K]>"  # k steps by BLOCK_K
    assert resolved.signature.spec["c_desc"] == "tensordesc<fp16[BLOCK_M, BLOCK_N]>"
    assert "the offsets at kernels.py:13, guessed" in resolved.provenance["a_desc"]


def test_the_autotune_pre_hook_gives_the_block_shape(tmp_path):
    path = write(tmp_path, {"hooked.py": HOOKED}) / "hooked.py"
    resolved = resolve(kernel(path, "copy3d"))
    assert resolved.signature.spec["x_desc"] == "tensordesc<fp16[1, BLOCK_M, BLOCK_N]>"
    assert "pre_hook `set_blocks` (hooked.py:8)" in resolved.provenance["x_desc"]


def test_an_unreadable_block_shape_leaves_the_descriptor_missing(tmp_path):
    path = write(tmp_path, {"opaque.py": HOSTILE}) / "opaque.py"
    signature = resolve(kernel(path, "opaque")).signature
    assert not signature.complete and signature.descriptors == ["x_desc", "y_desc"]


# --------------------------------------------------------------------------- lint at the compiled stage


def lint_json(run_cli, tmp_path, *args):
    done = run_cli("lint", *args, "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_lint_analyzes_the_package_kernel_with_no_spec(run_cli, tmp_path):
    root = write(tmp_path, {"tdpkg/__init__.py": "", "tdpkg/kernels.py": KERNELS, "tdpkg/launch.py": LAUNCHER,
                            "opaque.py": HOSTILE})
    report = lint_json(run_cli, tmp_path, str(root / "tdpkg" / "kernels.py"), str(root / "opaque.py"),
                       "--arch", "ada,hopper")
    kernels = {k["name"]: k for k in report["kernels"]}
    matmul = kernels["matmul_tma"]
    assert matmul["status"] == "analyzed", matmul["message"]
    assert "guessed tensor descriptors a_desc=tensordesc<fp16[BLOCK_M, BLOCK_K]>" in matmul["message"]
    assert {r["arch"] for r in matmul["results"]} == {"sm_89", "sm_90"}
    assert all(r["facts"]["compile_status"] == "ok" for r in matmul["results"])
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    opaque = kernels["opaque"]
    assert opaque["status"] == "needs-spec" and "\n" not in opaque["message"]
    assert "x_desc, y_desc are tensor descriptors" in opaque["message"]
    assert 'tensordesc<fp16[BLOCK_M, BLOCK_K]>' in opaque["message"] and "kernelrules spec" in opaque["message"]


def test_a_guessed_block_shape_that_does_not_compile_is_ours_not_cmp001(run_cli, tmp_path):
    """A store whose value is not the guessed block shape fails Triton's bare assert: needs-spec."""
    source = KERNELS.replace("c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_N]",
                             "c_desc.store([pid_m * BLOCK_M, pid_n * BLOCK_K]").replace(
        "@triton.jit", '@triton.autotune([triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32})], key=["M"])\n'
                       "@triton.jit")
    path = write(tmp_path, {"kernels.py": source}) / "kernels.py"
    report = lint_json(run_cli, tmp_path, str(path), "--arch", "hopper")
    (matmul,) = report["kernels"]
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    assert matmul["status"] == "needs-spec" and "c_desc=tensordesc<" in matmul["message"]


def test_the_spec_skeleton_writes_the_descriptor_types(tmp_path):
    from kernelrules.specify.signatures import spec_skeleton

    root = write(tmp_path, {"tdpkg/__init__.py": "", "tdpkg/kernels.py": KERNELS, "tdpkg/launch.py": LAUNCHER,
                            "opaque.py": HOSTILE})
    text = spec_skeleton([kernel(root / "tdpkg" / "kernels.py", "matmul_tma"), kernel(root / "opaque.py", "opaque")])
    assert 'a_desc: "tensordesc<fp16[BLOCK_M, BLOCK_K]>"' in text and "x_desc: TODO" in text
    assert "launcher `matmul`" in text
