"""Names bound under module-level ``if`` statements kernelrules does not evaluate, flags computed at
import time, and modules written for another Triton build (issue 14, real packages).

Each test writes a small package into ``tmp_path`` and lints it with the installed ``kernelrules``
command, as the corpus runs do (liger-kernel's ``if compare_version(...)`` around ``tanh``,
fla's ``IS_GATHER_SUPPORTED`` / ``IS_TF32_SUPPORTED``, liger's Ascend backend).
"""

from __future__ import annotations

import ast
import json
import sys
import textwrap
from pathlib import Path

import pytest

from kernelrules.discover.kernelreduce import reduce_module
from kernelrules.discover.kernelsource import hash_reduced, kernel_source_hash, load_kernel
from kernelrules.discover.pkgbranches import walk
from kernelrules.discover.pkgsource import READER
from kernelrules.discover.pkgvalues import is_flag_name

triton = pytest.importorskip("triton")

def write_package(root: Path, files: dict[str, str]) -> Path:
    """``root/<name>/...`` from ``{relative path: source}``; every directory gets an ``__init__.py``."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
        for parent in path.relative_to(root).parents:
            if str(parent) != ".":
                (root / parent / "__init__.py").touch()
    return root


def lint(run_cli, tmp_path, *paths: Path) -> tuple[dict, dict]:
    done = run_cli("lint", *map(str, paths), "--arch", "hopper", "--format", "json",
                   "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    return {k["name"]: k for k in report["kernels"]}, report


# --------------------------------------------------------------------------- 1. undecided branches

BRANCHES = {
    "brpkg/env.py": """
        def compare_version(package, version):
            return version < "4"


        def is_npu_available():
            return False


        def compute_offset():
            return 1.0


        def other_offset():
            return 2.0
        """,
    "brpkg/ops.py": """
        import triton
        import triton.language as tl

        from .env import compare_version, compute_offset, is_npu_available, other_offset

        if compare_version("triton", "3.0.0") and not is_npu_available():
            try:
                from triton.language.extra.libdevice import tanh
            except ModuleNotFoundError:
                from triton.language.extra.cuda.libdevice import tanh
        else:
            from triton.language.math import tanh

        if compare_version("triton", "9.0.0"):
            from triton.language.math import no_such_function as fast_exp
        else:
            from triton.language.extra.libdevice import exp as fast_exp

        if compare_version("triton", "2.0.0"):
            SCALE = tl.constexpr(2.0)
            OFFSET = compute_offset()
        else:
            SCALE = tl.constexpr(3.0)
            OFFSET = other_offset()

        if hasattr(tl, "gather"):
            @triton.jit
            def pick(x):
                return x + 1.0
        else:
            @triton.jit
            def pick(x):
                return x


        @triton.jit
        def tanh_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, tanh(x) * SCALE, mask=offs < n)


        @triton.jit
        def exp_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, pick(fast_exp(x)), mask=offs < n)


        @triton.jit
        def offset_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, x + OFFSET, mask=offs < n)


        @triton.jit
        def plain_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2.0, mask=offs < n)
        """,
}


def line_of(path: Path, text: str) -> int:
    """The line of ``path`` that starts with ``text`` (after indentation)."""
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.strip().startswith(text))


def test_a_name_under_an_undecided_if_comes_from_the_first_branch_that_resolves(run_cli, tmp_path):
    write_package(tmp_path / "src", BRANCHES)
    ops = tmp_path / "src" / "brpkg" / "ops.py"
    tanh_if, exp_if, scale_if, pick_if = (line_of(ops, t) for t in (
        'if compare_version("triton", "3.0.0")', 'if compare_version("triton", "9.0.0")',
        'if compare_version("triton", "2.0.0")', 'if hasattr(tl, "gather")'))
    kernels, report = lint(run_cli, tmp_path, ops)
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    tanh_kernel = kernels["tanh_kernel"]
    assert tanh_kernel["status"] == "analyzed", tanh_kernel["message"]
    assert all(r["facts"]["compile_status"] == "ok" for r in tanh_kernel["results"])
    assert (f"`tanh`: took the branch at ops.py:{tanh_if} (`if compare_version('triton', '3.0.0') and (not "
            "is_npu_available())`), not evaluated") in tanh_kernel["message"]
    assert (f"`SCALE`: took the branch at ops.py:{scale_if} (`if compare_version('triton', '2.0.0')`), "
            "not evaluated") in tanh_kernel["message"]
    # The first branch imports a name the installed Triton lacks: the else branch's definition is used.
    exp_kernel = kernels["exp_kernel"]
    assert exp_kernel["status"] == "analyzed", exp_kernel["message"]
    assert (f"`fast_exp`: took the else branch of ops.py:{exp_if} (`if compare_version('triton', '9.0.0')`), "
            "not evaluated") in exp_kernel["message"]
    # A test the installed Triton decides is decided, not guessed.
    assert (f"`pick`: took the branch at ops.py:{pick_if} (`if hasattr(tl, 'gather')`): its test is true with the "
            f"installed Triton {triton.__version__} and the variables unset") in exp_kernel["message"]
    # No branch gives OFFSET a value kernelrules can use: needs-spec, one line, as before.
    offset = kernels["offset_kernel"]
    assert offset["status"] == "needs-spec"
    assert (f"`OFFSET` is defined in ops.py under line {scale_if}: `if compare_version('triton', '2.0.0')`, "
            "which kernelrules does not evaluate, and no branch defines it") in offset["message"]
    assert "\n" not in offset["message"]
    assert kernels["plain_kernel"]["status"] == "analyzed"
    assert "took" not in (kernels["plain_kernel"]["message"] or "")


def test_the_chosen_branch_is_what_an_import_gives_the_jit(monkeypatch, tmp_path):
    """Where the taken branch is the one that runs at import, Triton's cache key is the same; a kernel
    that reads no chosen name hashes as before."""
    write_package(tmp_path, BRANCHES)
    ops = tmp_path / "brpkg" / "ops.py"
    ours = load_kernel(ops, "tanh_kernel").fn.cache_key
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import brpkg.ops as imported

        assert ours == imported.tanh_kernel.cache_key
        assert load_kernel(ops, "exp_kernel").fn.cache_key == imported.exp_kernel.cache_key
    finally:
        for name in [n for n in sys.modules if n == "brpkg" or n.startswith("brpkg.")]:
            del sys.modules[name]
    reduced = reduce_module(ops.read_text(), ops)
    assert kernel_source_hash(ops, "plain_kernel") == hash_reduced(reduced, "plain_kernel")[0]
    assert kernel_source_hash(ops, "tanh_kernel") != hash_reduced(reduced, "tanh_kernel")[0]


def test_walk_without_a_path_leaves_undecided_ifs_whole():
    tree = ast.parse("if other():\n    A = 1\nelse:\n    A = 2\n")
    assert [type(s).__name__ for s, _ in walk(tree.body)] == ["If"]


def test_walk_takes_each_name_from_its_first_resolving_branch(tmp_path):
    source = ("import triton.language as tl\n"
              "if unknown():\n    A = compute()\n    B = 1\nelif other():\n    A = 2\n    B = 3\nelse:\n    A = 4\n")
    (tmp_path / "m.py").write_text(source)
    walked = [(ast.unparse(s), notes) for s, notes in walk(ast.parse(source).body, tmp_path / "m.py", READER)]
    assert [s for s, _ in walked] == ["import triton.language as tl", "B = 1", "A = 2"]
    assert walked[2][1] == ("`A`: took the branch at m.py:5 (`elif other()`), not evaluated",)


# --------------------------------------------------------------------------- 2. flags computed at import time

FLAGS = {
    "flpkg/hw.py": """
        import platform

        import triton
        import triton.language as tl

        IS_GATHER_SUPPORTED = hasattr(triton.language, 'gather')
        HAS_TF32 = platform.machine() == 'x86_64' and capability() >= 8
        USE_FAST = tl.constexpr(platform.system() == 'Linux')
        BLOCK_COUNT = len(platform.machine())
        """,
    "flpkg/kernels.py": """
        import triton
        import triton.language as tl

        from .hw import BLOCK_COUNT, HAS_TF32, IS_GATHER_SUPPORTED, USE_FAST


        @triton.jit
        def gather_kernel(x_ptr, n, GATHER: tl.constexpr = IS_GATHER_SUPPORTED, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            if GATHER:
                x = x + 1.0
            tl.store(x_ptr + offs, x, mask=offs < n)


        @triton.jit
        def tf32_kernel(x_ptr, n, TF32: tl.constexpr = HAS_TF32, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.static_assert(not TF32)
            tl.store(x_ptr + offs, x, mask=offs < n)


        @triton.jit
        def fast_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            if USE_FAST:
                x = x * 2.0
            tl.store(x_ptr + offs, x, mask=offs < n)


        @triton.jit
        def needs_true_kernel(x_ptr, n, TF32: tl.constexpr = HAS_TF32, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.static_assert(TF32, "needs tf32")
            tl.store(x_ptr + offs, x, mask=offs < n)


        @triton.jit
        def count_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, x + BLOCK_COUNT, mask=offs < n)
        """,
}


def test_flags_computed_at_import_time_are_decided_or_guessed(run_cli, tmp_path):
    write_package(tmp_path / "src", FLAGS)
    path = tmp_path / "src" / "flpkg" / "kernels.py"
    kernels, report = lint(run_cli, tmp_path, path)
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    gather = kernels["gather_kernel"]
    assert gather["status"] == "analyzed", gather["message"]
    assert (f"`IS_GATHER_SUPPORTED` (hw.py) = True: `hasattr(triton.language, 'gather')` on the installed Triton "
            f"{triton.__version__}") in gather["message"]
    tf32 = kernels["tf32_kernel"]
    assert tf32["status"] == "analyzed", tf32["message"]
    assert all(r["facts"]["compile_status"] == "ok" for r in tf32["results"])
    assert "guessed `HAS_TF32` (hw.py) = False: it is computed at import time" in tf32["message"]
    fast = kernels["fast_kernel"]  # read in the body: bound as the tl.constexpr the module makes
    assert fast["status"] == "analyzed", fast["message"]
    assert "guessed `USE_FAST` (hw.py) = False" in fast["message"]
    # Nothing compiles with the guess: kernelrules' limit, not a CMP001.
    needs_true = kernels["needs_true_kernel"]
    assert needs_true["status"] == "needs-spec"
    assert needs_true["message"].startswith("cannot judge needs_true_kernel: no config compiles with the guessed "
                                            "module flags HAS_TF32=False (")
    # Not a flag by name: still needs a spec.
    count = kernels["count_kernel"]
    assert count["status"] == "needs-spec"
    assert "`BLOCK_COUNT` (hw.py) is computed at import time" in count["message"]


def test_guessed_flags_are_bound_as_the_module_would(tmp_path):
    write_package(tmp_path, FLAGS)
    path = tmp_path / "flpkg" / "kernels.py"
    scope = load_kernel(path, "fast_kernel").fn.fn.__globals__
    assert scope["IS_GATHER_SUPPORTED"] is hasattr(triton.language, "gather")
    assert scope["HAS_TF32"] is False
    assert isinstance(scope["USE_FAST"], triton.language.constexpr) and scope["USE_FAST"].value is False
    assert "BLOCK_COUNT" not in scope


@pytest.mark.parametrize("name, flag", [
    ("IS_TF32_SUPPORTED", True), ("_HAS_MUL_RN", True), ("use_fast", True), ("ENABLE_X", True),
    ("_mxfp8_cuda_kernels_available", True), ("TMA_SUPPORTED", True),
    ("BLOCK_SIZE", False), ("ISOLATE", False), ("USER_MODE", False), ("DEVICE_COUNT", False),
])
def test_flag_names(name, flag):
    assert is_flag_name(name) is flag


# --------------------------------------------------------------------------- 3. another Triton build

OTHER_TRITON = {
    "ascpkg/ops/act.py": """
        import triton
        import triton.language as tl
        from triton.language.math import npu_tanh


        @triton.jit
        def act_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, npu_tanh(x), mask=offs < n)
        """,
    "ascpkg/ops/rope.py": """
        import triton
        import triton.language as tl
        from triton.language.extra.cann.extension import extract_slice


        @triton.jit
        def rope_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, x, mask=offs < n)
        """,
    "ascpkg/ops/ext.py": """
        import triton
        import triton.language as tl
        import triton.language.extra.cann.extension as ext


        @triton.jit
        def ext_kernel(x_ptr, n, BLOCK: tl.constexpr = 128):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs, mask=offs < n)
            tl.store(x_ptr + offs, x, mask=offs < n)
        """,
}


def test_a_module_for_another_triton_build_says_so(run_cli, tmp_path):
    write_package(tmp_path / "src", OTHER_TRITON)
    ops = tmp_path / "src" / "ascpkg" / "ops"
    kernels, report = lint(run_cli, tmp_path, ops / "act.py", ops / "rope.py", ops / "ext.py")
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    tail = (f", which the installed Triton ({triton.__version__}) does not provide, so its kernels cannot be "
            "launched with this Triton (it is probably for another Triton build)")
    expected = {
        "act_kernel": "needs another Triton: act.py imports `npu_tanh` from `triton.language.math`" + tail,
        "rope_kernel": ("needs another Triton: rope.py imports `extract_slice` from "
                        "`triton.language.extra.cann.extension`" + tail),
        "ext_kernel": "needs another Triton: ext.py imports `cann` from `triton.language.extra`" + tail,
    }
    for name, message in expected.items():
        assert kernels[name]["status"] == "needs-spec"
        assert kernels[name]["message"] == message
