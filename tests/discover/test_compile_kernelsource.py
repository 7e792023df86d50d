"""Loading jit kernels from a file without running the file (kernelrules.discover.kernelsource)."""

from __future__ import annotations

import inspect
import textwrap
from pathlib import Path

import pytest

from kernelrules.errors import KernelrulesError, KernelSourceError
from kernelrules.discover.kernelsource import kernel_source_hash, list_kernels, load_kernel

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.py"

KERNEL_FILE = '''\
from __future__ import annotations
import os
import sys
import triton
import triton.language as tl
from triton.language import constexpr
import numpy_not_installed_anywhere as np

SCALE = tl.constexpr(2)
BLOCK: NotKept = tl.constexpr(SCALE * 64)
DTYPE = tl.float16
RUNTIME = os.environ["HOME"]
sys.exit("the module must never run")


def plain(x):
    return x


@triton.jit
def helper(x):
    return x * SCALE


@triton.jit
def unrelated(x):
    return x


@triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
@triton.heuristics({"EVEN": lambda args: args["n"] % 2 == 0})
@triton.jit(do_not_specialize=["n"])
def kernel(x_ptr, n, BLOCK_SIZE: tl.constexpr):
    offs = tl.arange(0, BLOCK_SIZE)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, helper(x).to(DTYPE), mask=offs < n)
'''



@pytest.fixture(autouse=True)
def _private_triton_cache(tmp_path, monkeypatch):
    """In-process compiles write Triton's cache under the test's temporary directory."""
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


def write(tmp_path: Path, text: str, name: str = "kern.py") -> Path:
    """Write a kernel file under ``tmp_path``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_loads_without_running_the_module(tmp_path):
    path = write(tmp_path, KERNEL_FILE)
    handle = load_kernel(path, "kernel")
    assert type(handle.fn).__name__ == "JITFunction"
    assert handle.name == "kernel" and handle.path == path.resolve()
    assert handle.line == KERNEL_FILE.splitlines().index("def kernel(x_ptr, n, BLOCK_SIZE: tl.constexpr):") + 1
    assert handle.fn.do_not_specialize == ["n"]  # literal jit options are kept
    assert handle.unresolved_globals == ()
    # inspect.getsource works (Triton relies on it) and reads the real file
    assert "tl.load(x_ptr + offs" in inspect.getsource(handle.fn.fn)
    assert handle.fn.fn.__code__.co_filename == str(path.resolve())


def test_example_matmul_strips_autotune():
    handle = load_kernel(MATMUL, "matmul_kernel")
    assert type(handle.fn).__name__ == "JITFunction"  # not the Autotuner
    assert [p.name for p in handle.fn.params][:3] == ["a_ptr", "b_ptr", "c_ptr"]
    assert list_kernels(MATMUL) == ["matmul_kernel"]


def test_load_is_memoized_per_file_content(tmp_path):
    path = write(tmp_path, KERNEL_FILE)
    first = load_kernel(path, "kernel")
    assert load_kernel(path, "kernel") is first
    path.write_text(KERNEL_FILE.replace("SCALE = tl.constexpr(2)", "SCALE = tl.constexpr(3)"))
    second = load_kernel(path, "kernel")
    assert second.fn is not first.fn and second.module_name != first.module_name


def test_source_hash_covers_helpers_and_constants_only(tmp_path):
    base = load_kernel(write(tmp_path, KERNEL_FILE, "a.py"), "kernel").source_hash
    assert kernel_source_hash(tmp_path / "a.py", "kernel") == base
    variants = {
        "helper body": KERNEL_FILE.replace("return x * SCALE", "return x * SCALE + 0"),
        "constant": KERNEL_FILE.replace("SCALE = tl.constexpr(2)", "SCALE = tl.constexpr(4)"),
        "jit options": KERNEL_FILE.replace('do_not_specialize=["n"]', 'do_not_specialize=["x_ptr"]'),
        "kernel body": KERNEL_FILE.replace("mask=offs < n)\n", "mask=offs < n, other=0)\n", 1),
    }
    for i, (what, text) in enumerate(variants.items()):
        changed = load_kernel(write(tmp_path, text, f"v{i}.py"), "kernel").source_hash
        assert changed != base, what
    unrelated = KERNEL_FILE.replace("def unrelated(x):\n    return x", "def unrelated(x):\n    return x + 1")
    assert load_kernel(write(tmp_path, unrelated, "u.py"), "kernel").source_hash == base
    comment = KERNEL_FILE.replace("def plain(x):", "# a comment\ndef plain(x):")
    # moving the kernel moves the source locations in its compiled artifacts
    assert load_kernel(write(tmp_path, comment, "c.py"), "kernel").source_hash != base


def test_unresolved_globals_are_reported(tmp_path):
    path = write(tmp_path, '''
        import triton
        import triton.language as tl
        from mylib import other_helper
        OFFSET = compute()

        @triton.jit
        def kernel(x_ptr):
            tl.store(x_ptr, other_helper(OFFSET))
    ''')
    assert load_kernel(path, "kernel").unresolved_globals == ("OFFSET", "other_helper")


@pytest.mark.parametrize(
    ("text", "name", "message", "line"),
    [
        ("import triton\n\ndef f(:\n    pass\n", "f", "syntax error", 3),
        (KERNEL_FILE, "missing", "no @triton.jit function named 'missing' (jit functions: helper, kernel, unrelated)", None),
        (KERNEL_FILE, "plain", "function 'plain' is not decorated with @triton.jit", 16),
    ],
)
def test_errors_name_file_and_line(tmp_path, text, name, message, line):
    path = write(tmp_path, text)
    with pytest.raises(KernelSourceError) as info:
        load_kernel(path, name)
    assert isinstance(info.value, KernelrulesError)
    assert message in str(info.value)
    assert info.value.path == str(path.resolve())
    assert info.value.line == line


def test_missing_file(tmp_path):
    with pytest.raises(KernelSourceError, match="file not found"):
        load_kernel(tmp_path / "nope.py", "kernel")


def test_reduced_module_compiles(tmp_path):
    """Constants, attribute constants (tl.float16) and helpers survive the reduction."""
    pytest.importorskip("triton")
    from kernelrules.compile.compilejob import CompileJob, compile_job

    path = write(tmp_path, KERNEL_FILE)
    result = compile_job(CompileJob(str(path), "kernel", {"x_ptr": "*fp16", "n": 1000}, {"BLOCK_SIZE": 128},
                                    target=("cuda", 80, 32)))
    assert result.ok, result.details
    assert result.specialization["signature"]["n"] == "i32"  # do_not_specialize: not a constexpr
    assert "n" not in result.specialization["attrs"]


CALLED_FILE = '''\
import triton
import triton.language as tl
from triton import jit
import numpy_not_installed_anywhere as np


def _twice(x):
    return x * 2
_twice = triton.jit(_twice)


def _impl(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, _twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
kernel = jit(_impl, do_not_specialize=["n"], launch_metadata=np.hook)
kernel = triton.heuristics({"X": lambda args: 1})(kernel)
tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(kernel)


@triton.jit
def decorated(x_ptr):
    pass
decorated = triton.autotune(configs=[], key=[])(decorated)
'''


def test_jit_functions_made_by_calls_load_under_their_bound_names(tmp_path):
    path = write(tmp_path, CALLED_FILE)
    assert list_kernels(path) == ["decorated", "_twice", "kernel", "tuned"]
    handle = load_kernel(path, "kernel")
    assert type(handle.fn).__name__ == "JITFunction" and handle.fn.__name__ == "_impl"  # the def's own name
    assert handle.line == 12 and handle.fn.starting_line_number == 12  # the def: no decorator above it
    assert handle.fn.do_not_specialize == ["n"]  # literal options kept, the rest (launch_metadata) dropped
    assert handle.unresolved_globals == ()  # `_twice` is the jit function the file makes
    assert load_kernel(path, "tuned").fn is handle.fn  # wrapped under another name: the same JITFunction
    assert load_kernel(path, "decorated").fn.__name__ == "decorated"  # a re-wrapped decorated def still loads
    # the source hash covers the call's options as it covers a decorator's
    changed = write(tmp_path, CALLED_FILE.replace('do_not_specialize=["n"]', 'do_not_specialize=["x_ptr"]'), "v.py")
    assert kernel_source_hash(changed, "kernel") != handle.source_hash
    with pytest.raises(KernelSourceError, match="not decorated with @triton.jit") as info:
        load_kernel(path, "_impl")
    assert "triton.jit(func)" in info.value.hint
