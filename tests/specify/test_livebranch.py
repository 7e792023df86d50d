"""Arguments that are pointers only in a constexpr branch the launch does not take (specify.livebranch)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from kernelrules.discover.kernels import discover
from kernelrules.specify.kernelspec import resolve
from kernelrules.specify.livebranch import static_test, taken_branches

KERNEL = """
import triton
import triton.language as tl


@triton.jit
def shift(x_ptr, out_ptr, offsets, counts, bias, n, IS_TENSOR: tl.constexpr, ON_DEVICE: tl.constexpr = False,
          HAS_BIAS: tl.constexpr = False, BLOCK: tl.constexpr = 128):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if IS_TENSOR:
        o2 = o + tl.load(offsets + tl.program_id(0))
    else:
        o2 = o + offsets
    if ON_DEVICE:
        c = tl.load(counts)
    else:
        c = counts.to(tl.int32)
    x = tl.load(x_ptr + o2, mask=o2 < n + c)
    if HAS_BIAS:
        x += tl.load(bias + o2)
    tl.store(out_ptr + o, x, mask=o < n)
"""


def test_static_tests_and_taken_branches():
    values = {"A": True, "B": False, "MODE": 2}
    test = lambda text: static_test(ast.parse(text, mode="eval").body, values)  # noqa: E731
    assert test("A") is True and test("not A") is False and test("A and B") is False and test("A or X") is True
    assert test("MODE == 2") is True and test("MODE != 2") is False and test("X") is None and test("A and X") is None
    func = ast.parse(textwrap.dedent("""
        def f(p):
            if B:
                y = tl.load(p)
            else:
                y = p
            z = p if A else 0
        """)).body[0]
    text = ast.unparse(taken_branches(func, values))
    assert "tl.load" not in text and "y = p" in text and "z = p" in text
    assert "tl.load" in ast.unparse(func)  # the original is untouched


def test_a_pointer_only_in_an_untaken_branch_is_a_scalar_where_it_is_read(tmp_path: Path):
    path = tmp_path / "mod.py"
    path.write_text(KERNEL)
    resolved = resolve(discover([path]).by_name("shift")[0])
    spec, provenance = resolved.signature.spec, resolved.provenance
    # IS_TENSOR guessed False, ON_DEVICE False by default: both read as integers there.
    assert resolved.guessed["IS_TENSOR"] is False
    assert spec["offsets"] == 4096 and provenance["offsets"] == "dataflow"
    assert spec["counts"] == 4096
    # bias: a pointer in a branch not taken, and not read elsewhere: left as it was (no value changes a compile).
    assert spec["bias"] == "*fp16" and spec["x_ptr"] == "*fp16"


def test_a_given_type_is_never_retyped(tmp_path: Path):
    path = tmp_path / "mod.py"
    path.write_text(KERNEL)
    kernel = discover([path]).by_name("shift")[0]
    resolved = resolve(kernel, spec={"shift": {"offsets": "*i32"}})
    assert resolved.signature.spec["offsets"] == "*i32" and resolved.provenance["offsets"] == "spec"


def test_the_kernel_compiles_at_lint_for_the_branch_taken(run_cli, tmp_path: Path):
    import json

    path = tmp_path / "mod.py"
    path.write_text(KERNEL)
    done = run_cli("lint", str(path), "--arch", "hopper", "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    kernel = report["kernels"][0]
    assert kernel["status"] == "analyzed", kernel["message"]
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
