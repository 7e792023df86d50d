"""The view of a large kernel file a compile worker reads: what it keeps, and that it changes no compile."""

from __future__ import annotations

import os
import textwrap
from dataclasses import replace
from pathlib import Path

import pytest

from kernelrules.discover import kernelview
from kernelrules.discover.kernelsource import load_kernel
from kernelrules.discover.kernelview import FileView, kernel_view
from kernelrules.discover.pysource import read_python, use_views

triton = pytest.importorskip("triton")

HEAD = '''\
"""A module docstring: not needed by any kernel."""
import triton
import triton.language as tl

'''

BODY = '''\
BASE = 16
DEFAULT_BLOCK = BASE * 8
SCALE = tl.constexpr(3)
UNRELATED = 1; OFFSET = tl.constexpr(5)
try:
    import math
except ImportError:
    math = None


@triton.jit
def scale(x):
    return x * SCALE + OFFSET


def _impl(x_ptr, n, BLOCK: tl.constexpr = DEFAULT_BLOCK):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, scale(tl.load(x_ptr + offs, mask=mask)), mask=mask)


kernel = triton.jit(_impl)
'''


def _padding(count: int) -> str:
    """Statements no kernel reads: constants, plain helpers, unused jit helpers."""
    parts = []
    for i in range(count):
        parts.append(f"UNUSED_{i} = {i}\n\n\ndef plain_{i}(a):\n    return a + {i}\n\n\n"
                     f"@triton.jit\ndef unused_jit_{i}(x):\n    return x * {i}\n\n\n")
    return "".join(parts)


@pytest.fixture
def big_file(tmp_path, monkeypatch):
    """A kernel file padded with 300 unused constants, helpers and jit helpers (views made at any size)."""
    monkeypatch.setattr(kernelview, "MIN_VIEW_BYTES", 0)
    path = tmp_path / "padded.py"
    path.write_text(HEAD + _padding(150) + BODY + _padding(150))
    yield path
    use_views(())


def test_the_view_keeps_what_the_kernel_reads_at_the_files_lines(big_file):
    view = kernel_view(big_file, "kernel")
    assert view is not None
    text, real = view.text().split("\n"), big_file.read_text().split("\n")
    assert len(text) == len(real)
    assert all(line == "" or line == real[i] for i, line in enumerate(text))
    kept = "\n".join(line for line in text if line)
    for needed in ("import triton", "import triton.language as tl", "BASE = 16", "DEFAULT_BLOCK = BASE * 8",
                   "SCALE = tl.constexpr(3)", "UNRELATED = 1; OFFSET = tl.constexpr(5)", "try:", "    import math",
                   "def scale(x):", "def _impl(x_ptr, n, BLOCK: tl.constexpr = DEFAULT_BLOCK):",
                   "kernel = triton.jit(_impl)"):
        assert needed in kept.split("\n"), needed
    assert "UNUSED_" not in kept and "plain_" not in kept and "unused_jit_" not in kept
    assert "docstring" not in kept
    assert len(view.text()) < len(big_file.read_text()) / 5


def test_no_view_for_a_small_file_an_unknown_kernel_or_a_view_of_most_of_the_file(tmp_path, big_file, monkeypatch):
    assert kernel_view(big_file, "no_such_kernel") is None
    whole = tmp_path / "whole.py"
    whole.write_text(HEAD + BODY)
    assert kernel_view(whole, "kernel") is None  # nothing to leave out but the docstring
    monkeypatch.setattr(kernelview, "MIN_VIEW_BYTES", 128 * 1024)
    assert kernel_view(big_file, "kernel") is None  # small: read whole


def test_the_file_is_read_as_the_view_for_its_version_only(big_file):
    view = kernel_view(big_file, "kernel")
    use_views([view])
    assert read_python(big_file) == view.text()
    assert read_python(big_file.parent / ".." / big_file.parent.name / big_file.name) == view.text()
    use_views(())
    assert read_python(big_file) == big_file.read_text()
    use_views([view])
    big_file.write_text(big_file.read_text() + "\n# changed\n")
    assert read_python(big_file) == big_file.read_text()


def test_a_kernel_loaded_from_the_view_is_the_kernel_loaded_from_the_file(big_file):
    whole = load_kernel(big_file, "kernel")
    use_views([kernel_view(big_file, "kernel")])
    viewed = load_kernel(big_file, "kernel")
    assert viewed.fn is not whole.fn  # loaded again, from the view's text
    assert "UNUSED_0" not in viewed.fn.__globals__ and "UNUSED_0" in whole.fn.__globals__
    assert (viewed.source_hash, viewed.line, viewed.unresolved_globals, viewed.notes) == \
        (whole.source_hash, whole.line, whole.unresolved_globals, whole.notes)
    assert viewed.fn.cache_key == whole.fn.cache_key  # Triton's key: source, first line, globals read
    assert viewed.fn.__globals__["SCALE"] == whole.fn.__globals__["SCALE"]
    assert viewed.fn.params[2].default == whole.fn.params[2].default == 128


def test_views_of_two_kernels_of_one_file_do_not_mix(big_file):
    big_file.write_text(big_file.read_text() + textwrap.dedent('''

        @triton.jit
        def other(x_ptr):
            tl.store(x_ptr, BASE_OTHER)


        BASE_OTHER = tl.constexpr(7)
        '''))
    first, second = kernel_view(big_file, "kernel"), kernel_view(big_file, "other")
    assert "BASE_OTHER" not in first.text() and "SCALE" not in second.text()
    use_views([first])
    assert load_kernel(big_file, "kernel").fn.__globals__["SCALE"] == 3
    use_views([second])  # the same file version, another view: nothing read from the first one is reused
    assert load_kernel(big_file, "other").fn.__globals__["BASE_OTHER"] == 7


# --------------------------------------------------------------------------- through the pool


@pytest.fixture(scope="module")
def pool():
    from kernelrules.compile.pool import CompilePool

    with CompilePool(max_workers=1, timeout=120) as p:
        yield p


def _job(path: Path):
    from kernelrules.compile.compilejob import CompileJob

    return CompileJob(path=str(path), kernel="kernel", signature={"x_ptr": "*fp32", "n": 1024},
                      constexprs={"BLOCK": 64}, target=("cuda", 80, 32))


def test_a_worker_compiles_from_the_view_what_the_file_compiles_to(big_file, pool, monkeypatch):
    from kernelrules.compile import pool as pool_module
    from kernelrules.compile.compilejob import compile_job

    sent = []
    real = pool_module.job_views
    monkeypatch.setattr(pool_module, "job_views", lambda job: sent.append(real(job)) or sent[-1])
    [(_, viewed)] = list(pool.run([_job(big_file)], cache=None))
    assert len(sent) == 1 and len(sent[0]) == 1 and isinstance(sent[0][0], FileView)
    use_views(())
    whole = compile_job(_job(big_file))
    assert viewed.ok and whole.ok, (viewed.details, whole.details)
    assert viewed.metadata["hash"] == whole.metadata["hash"]  # the Triton cache key
    assert viewed.asm["ttir"] == whole.asm["ttir"]


def test_a_worker_reads_the_view_sent_with_the_job(big_file, pool, monkeypatch):
    from kernelrules.compile import pool as pool_module

    view = kernel_view(big_file, "kernel")
    changed = tuple((first, text.replace("SCALE = tl.constexpr(3)", "SCALE = tl.constexpr(9)"))
                    for first, text in view.blocks)
    assert changed != view.blocks
    monkeypatch.setattr(pool_module, "job_views", lambda job: (replace(view, blocks=changed),))
    [(_, result)] = list(pool.run([_job(big_file)], cache=None))
    assert result.ok, result.details
    assert "dense<9.000000e+00>" in result.asm["ttir"]  # x * SCALE, with the view's SCALE
    assert "dense<3.000000e+00>" not in result.asm["ttir"]
    assert os.path.exists(big_file) and "tl.constexpr(9)" not in big_file.read_text()


def test_a_file_of_many_constants_defines_only_those_the_kernel_reads(tmp_path, monkeypatch):
    from kernelrules.discover import kernelsource

    path = tmp_path / "constants.py"
    path.write_text(HEAD + "".join(f"UNUSED_{i} = {i}\n" for i in range(300)) + BODY)
    part = load_kernel(path, "kernel")
    monkeypatch.setattr(kernelsource, "WHOLE_MODULE_CONSTANTS", 10 ** 6)
    whole = load_kernel(path, "kernel")
    assert part.fn is not whole.fn
    assert "UNUSED_7" in whole.fn.__globals__ and "UNUSED_7" not in part.fn.__globals__
    assert {"SCALE", "OFFSET", "DEFAULT_BLOCK", "BASE"} <= set(part.fn.__globals__)
    assert (part.fn.cache_key, part.source_hash) == (whole.fn.cache_key, whole.source_hash)
