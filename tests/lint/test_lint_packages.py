"""Kernels calling jit helpers from other modules of their package (issue 14), linted at the compiled stage.

The fixture package ``tests/fixtures/pkg_helpers/krpkg`` is never imported by lint (its
kernel module raises when imported): helpers are found by reading source.
"""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from kernelrules.specify.constexpr_guess import alternatives, condition_names, guess
from kernelrules.discover.kerneldeps import kernel_dependencies
from kernelrules.discover.kernelreduce import reduce_module
from kernelrules.discover.kernelsource import hash_reduced, kernel_source_hash
from kernelrules.discover.pkgfiles import package_root
from kernelrules.discover.pkgsource import module_statements
from kernelrules.lint.settings import parse_table

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "pkg_helpers"
ADD = ROOT / "krpkg" / "kernels" / "add.py"
SCRIPT = ROOT / "outside" / "script.py"


def lint_json(run_cli, tmp_path, *args):
    done = run_cli("lint", *args, "--arch", "hopper", "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def test_package_kernels_compile_with_helpers_from_other_modules(run_cli, tmp_path):
    report = lint_json(run_cli, tmp_path, str(ROOT / "krpkg"), str(SCRIPT))
    kernels = {k["name"]: k for k in report["kernels"]}
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    add = kernels["add_kernel"]
    assert add["status"] == "analyzed" and add["results"]
    assert all(r["facts"]["compile_status"] == "ok" for r in add["results"])
    # FLAG is used as `if FLAG:`: guessed as a bool, not 16; MODE == 16 fails its static_assert: retried
    # with a value the kernel compares it with (`if MODE == 1:`), which the assert's branch allows.
    assert all(r["config"]["FLAG"] is False for r in add["results"])
    assert "FLAG=False" in add["message"] and "MODE=1 (16 did not compile)" in add["message"]
    assert "KRPKG_FAST_MATH" in add["message"] and "else branch" in add["message"]
    # A helper imported from a module kernelrules cannot find: needs-spec naming it, never CMP001.
    broken = kernels["uses_missing_helper"]
    assert broken["status"] == "needs-spec" and "`fancy_helper`" in broken["message"]
    assert "--src" in broken["message"] and "\n" not in broken["message"]
    # A script outside the package finds the package only with --src.
    assert kernels["script_kernel"]["status"] == "needs-spec" and "`clamp01`" in kernels["script_kernel"]["message"]
    assert {f["code"] for f in report["findings"]} <= {"LNT001"}


def test_src_option_finds_the_package(run_cli, tmp_path):
    report = lint_json(run_cli, tmp_path, str(SCRIPT), "--src", str(ROOT))
    (kernel,) = report["kernels"]
    assert kernel["status"] == "analyzed" and not report["findings"]


def test_cache_key_matches_a_real_import(monkeypatch):
    """The helpers are bound as the JIT sees them at launch: Triton's cache key of the kernel is the same."""
    from kernelrules.discover.kernelsource import load_kernel

    ours = load_kernel(ADD, "add_kernel").fn.cache_key
    monkeypatch.setenv("KRPKG_ALLOW_IMPORT", "1")
    monkeypatch.syspath_prepend(str(ROOT))
    try:
        import krpkg.kernels.add as imported

        assert ours == imported.add_kernel.fn.cache_key
    finally:
        for name in [n for n in sys.modules if n == "krpkg" or n.startswith("krpkg.")]:
            del sys.modules[name]


def test_source_hash_of_a_kernel_without_imported_helpers_is_unchanged():
    reduced = reduce_module(ADD.read_text(), ADD)
    assert kernel_source_hash(ADD, "plain_kernel") == hash_reduced(reduced, "plain_kernel")[0]
    assert kernel_source_hash(ADD, "add_kernel") != hash_reduced(reduced, "add_kernel")[0]


def test_dependencies_cross_modules_transitively():
    deps = kernel_dependencies(ADD, "add_kernel")
    names = {(p.name, n) for p, n in deps.functions}
    assert {("utils.py", "scale_add"), ("mathx.py", "square"), ("utils.py", "clamp01"), ("utils.py", "env_helper")} <= names
    assert {(p.name, n) for p, n in deps.constants} == {("mathx.py", "OFFSET")}
    assert not deps.misses and package_root(ADD) == ROOT


def test_environment_branches_take_the_default():
    tree = ast.parse("import os\nif os.getenv('X'):\n    A = 1\nelse:\n    A = 2\nif other():\n    B = 1\n")
    notes: list[str] = []
    kept = [ast.unparse(s) for s in module_statements(tree.body, notes)]
    assert kept[:2] == ["import os", "A = 2"] and kept[2].startswith("if other()") and "else branch" in notes[0]


@pytest.mark.parametrize("source, expected", [
    ("def k(A, B, C, D):\n    if A:\n        pass\n    x = tl.where(B, 1, 2)\n    y = 1 if not C else 2\n    z = D == 1\n",
     {"A", "B", "C"}),
])
def test_condition_names(source, expected):
    assert condition_names(ast.parse(source).body[0]) == expected


def test_guesses_by_type():
    assert guess("FLAG", flag=True) is False and guess("HAS_BIAS") is False
    assert guess("BLOCK_M") == 128 and guess("GROUP") == 16
    assert alternatives(16)[0] is False and alternatives(False)[0] is True


def test_src_setting_is_resolved_against_the_pyproject(tmp_path):
    settings = parse_table({"src": ["src", "lib"]}, tmp_path / "pyproject.toml")
    assert settings.src == [str((tmp_path / "src").resolve()), str((tmp_path / "lib").resolve())]


TYPE_GUESSES = '''\
import triton
import triton.language as tl


@triton.jit
def halve_bits(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) >> 1, mask=offs < n)


@triton.jit
def word_bits(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n).to(tl.int32, bitcast=True), mask=offs < n)


@triton.jit
def needs_doubles(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.static_assert(x.dtype == tl.float64, "doubles only")
    tl.store(out_ptr + offs, x, mask=offs < n)


@triton.jit
def calls_nothing(x_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.not_a_function(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
'''


def test_guessed_argument_types_that_do_not_type_check_are_ours_not_cmp001(run_cli, tmp_path):
    """An integer buffer read from its use (``>> 1``) is typed by dataflow; a pointer only guessed fp16
    compiles with the next types tried (bf16, fp32, i8): a 32-bit bitcast is analyzed as fp32; a type error no tried type fixes is needs-spec naming the guessed arguments; the
    same error with the types given in a spec stays CMP001, and so does an error no argument type can
    cause (an unknown tl function)."""
    (tmp_path / "ints.py").write_text(TYPE_GUESSES)
    report = lint_json(run_cli, tmp_path, str(tmp_path / "ints.py"))
    kernels = {k["name"]: k for k in report["kernels"]}
    halve = kernels["halve_bits"]
    assert halve["status"] == "analyzed", halve
    assert halve["signature_provenance"]["x_ptr"] == "dataflow"
    word = kernels["word_bits"]
    assert word["status"] == "analyzed", word
    assert word["signature_provenance"]["x_ptr"] == "naming (fp32: fp16 did not compile)"
    doubles = kernels["needs_doubles"]
    assert doubles["status"] == "needs-spec", doubles
    assert "guessed arguments x_ptr=*" in doubles["message"] and "\n" not in doubles["message"]
    assert "kernelrules spec" in doubles["message"]
    cmp001 = {f["kernel"] for f in report["findings"] if f["code"] == "CMP001"}
    assert cmp001 == {"calls_nothing"}
    (tmp_path / "spec.yaml").write_text(
        "kernels:\n  halve_bits:\n    signature: {x_ptr: '*fp16', out_ptr: '*fp16', n: i32}\n")
    given = lint_json(run_cli, tmp_path, str(tmp_path / "ints.py"), "--spec", str(tmp_path / "spec.yaml"))
    assert any(f["code"] == "CMP001" and f["kernel"] == "halve_bits" for f in given["findings"])


def test_a_jit_function_that_returns_a_value_is_a_helper(tmp_path):
    """Called nowhere that discovery sees (e.g. from a kernel made with ``f = triton.jit(f)``), a jit
    function returning a value is still a helper: Triton cannot compile it as a kernel."""
    from kernelrules.discover.kernels import discover

    (tmp_path / "m.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n@triton.jit\ndef softplus(x):\n"
        "    def inner():\n        return 1\n    return tl.maximum(x, 0.0)\n\n\n"
        "@triton.jit\ndef kernel(x_ptr, n, BLOCK: tl.constexpr):\n    if n == 0:\n        return\n"
        "    tl.store(x_ptr, tl.load(x_ptr))\n")
    kernels = {k.name: k for k in discover([tmp_path / "m.py"]).kernels}
    assert kernels["softplus"].is_helper and kernels["softplus"].returns_value
    assert not kernels["kernel"].is_helper and not kernels["kernel"].returns_value


DTYPE_KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def cast_rows(x_ptr, out_ptr, n, out_dtype: tl.constexpr, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(out_ptr + offs, (x * out_dtype.primitive_bitwidth).to(out_dtype), mask=offs < n)
'''


def test_a_dtype_constexpr_is_guessed_as_a_dtype(run_cli, tmp_path):
    from kernelrules.specify.constexpr_guess import alternatives, guess
    from kernelrules.compile.specialize import dtype_constexpr
    import triton.language as tl

    assert guess("input_dtype") == "tl.float32" and guess("OUT_DTYPE") == "tl.float32"
    assert alternatives("tl.float32") == ["tl.bfloat16", "tl.float16", 16]
    assert dtype_constexpr("tl.bfloat16") is tl.bfloat16 and dtype_constexpr("tl.nope") == "tl.nope"
    (tmp_path / "cast.py").write_text(DTYPE_KERNEL)
    report = lint_json(run_cli, tmp_path, str(tmp_path / "cast.py"))
    (kernel,) = report["kernels"]
    assert kernel["status"] == "analyzed", kernel["message"]
    assert "out_dtype=tl.float32" in kernel["message"]
    assert all(r["facts"]["compile_status"] == "ok" for r in kernel["results"])
