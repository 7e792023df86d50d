"""Warm lints replay each kernel's outcome before resolving its launch (kernelrules/lint/launch_replay.py),
and any change to what the resolution reads makes the kernel resolved again."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelrules.compile.pool import CompilePool
from kernelrules.lint import linter as linter_module
from kernelrules.lint.linter import Linter, LintOptions
from kernelrules.lint.reporters import render_json

HELPERS = '''\
import triton
import triton.language as tl

SCALE = tl.constexpr(2.0)


@triton.jit
def twice(x):
    return x * SCALE
'''

KERNELS = '''\
import triton
import triton.language as tl

from .helpers import twice


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=4), triton.Config({"BLOCK": 1024}, num_warps=8)],
                 key=["n"])
@triton.jit
def scale_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)  # in place: LNT006


@triton.jit
def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst_ptr + offs, tl.load(src_ptr + offs, mask=offs < n), mask=offs < n)
'''

NEEDS_SPEC = '''\
import triton
import triton.language as tl


@triton.jit
def described_kernel(desc, out_ptr, BLOCK: tl.constexpr):
    x = desc.load([0, 0])
    tl.store(out_ptr + tl.arange(0, BLOCK), x)
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A small package of three kernels in two modules, one calling a helper of a third module."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(HELPERS)
    (pkg / "ops.py").write_text(KERNELS)
    (pkg / "desc.py").write_text(NEEDS_SPEC)
    monkeypatch.chdir(tmp_path)
    return pkg


class Resolves:
    """Counts the launches resolved (the work a replay spares), by kernel name."""

    def __init__(self, monkeypatch) -> None:
        self.names: list[str] = []
        real = linter_module.resolve

        def counting(kernel, **kwargs):
            self.names.append(kernel.name)
            return real(kernel, **kwargs)

        monkeypatch.setattr(linter_module, "resolve", counting)


def lint(tmp_path: Path, stage: str = "config", **options) -> str:
    opts = LintOptions(archs=("hopper",), stage=stage, cache_dir=str(tmp_path / "cache"), jobs=1, **options)
    return render_json(Linter(opts).run(["pkg"]))


def test_a_warm_lint_resolves_nothing_and_reports_the_same(package, tmp_path, monkeypatch):
    resolves = Resolves(monkeypatch)
    cold = lint(tmp_path)
    assert sorted(resolves.names) == ["copy_kernel", "described_kernel", "scale_kernel"]
    assert '"needs-spec"' in cold and '"analyzed"' in cold  # both kinds of outcome are replayed
    assert '"code": "LNT006"' in cold  # and the autotune side effects read before the launch
    resolves.names.clear()
    monkeypatch.setattr(linter_module.Linter, "_side_effects", lambda *a: pytest.fail("side effects read again"))
    assert lint(tmp_path) == cold
    assert resolves.names == []


def test_import_runs_are_not_replayed_before_resolving(package, tmp_path, monkeypatch):
    """With --import the configs come from running the module, which no file digest covers."""
    resolves = Resolves(monkeypatch)
    cold = lint(tmp_path, import_modules=True)
    assert lint(tmp_path, import_modules=True) == cold
    assert sorted(resolves.names) == sorted(["copy_kernel", "described_kernel", "scale_kernel"] * 2)
    assert not list((tmp_path / "cache" / "lint").rglob("launch-*"))


def test_an_edit_anywhere_in_the_package_resolves_its_kernels_again(package, tmp_path, monkeypatch):
    resolves = Resolves(monkeypatch)
    cold = lint(tmp_path)
    resolves.names.clear()
    # The helper's module: its kernels' helpers and constants may change, so nothing is replayed...
    (package / "helpers.py").write_text(HELPERS.replace("SCALE = tl.constexpr(2.0)", "SCALE = tl.constexpr(3.0)"))
    assert lint(tmp_path) == cold  # (a constant the config stage does not judge: the same report)
    assert sorted(resolves.names) == ["copy_kernel", "described_kernel", "scale_kernel"]
    resolves.names.clear()
    assert lint(tmp_path) == cold and resolves.names == []  # ...and the new version is replayed next time
    # A new module an import could reach counts as an edit too.
    (package / "extra.py").write_text("X = 1\n")
    lint(tmp_path)
    assert sorted(resolves.names) == ["copy_kernel", "described_kernel", "scale_kernel"]


def test_a_sidecar_spec_or_other_options_are_part_of_the_key(package, tmp_path, monkeypatch):
    resolves = Resolves(monkeypatch)
    lint(tmp_path)
    resolves.names.clear()
    (package / "ops.kernelrules.yaml").write_text("kernels:\n  copy_kernel:\n    signature:\n      n: 7\n")
    lint(tmp_path)
    assert sorted(resolves.names) == ["copy_kernel", "scale_kernel"]  # the two kernels of ops.py
    resolves.names.clear()
    lint(tmp_path, timeout=12.0)
    lint(tmp_path, spec={"copy_kernel": {"n": 3}})
    assert len(resolves.names) == 6


def test_a_fifo_where_the_sidecar_would_be_is_never_waited_on(package, tmp_path):
    import os
    import threading

    os.mkfifo(package / "ops.kernelrules.yaml")
    done: list[str] = []
    runner = threading.Thread(target=lambda: done.append(lint(tmp_path)), daemon=True)
    runner.start()
    runner.join(timeout=120)
    assert done and '"copy_kernel"' in done[0]


def test_a_warm_compiled_lint_starts_no_compile_worker(package, tmp_path, monkeypatch):
    (package / "desc.py").unlink()
    cold = lint(tmp_path, stage="compiled")
    assert cold.count('"compile_status": "ok"') == 3 and '"compile_status": "error"' not in cold

    def no_worker(self):
        raise AssertionError("a warm lint started a compile worker")

    monkeypatch.setattr(CompilePool, "_spawn", no_worker)
    for entry in (tmp_path / "cache").iterdir():  # the compile cache too: nothing may need it
        if entry.name != "lint":
            import shutil

            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    assert lint(tmp_path, stage="compiled") == cold


def test_an_unstable_input_is_not_keyed(package, tmp_path, monkeypatch):
    """An input whose text changes from run to run (an object's address) would never match: no key, no entry."""
    from kernelrules.lint.launch_replay import LaunchReplay

    class Opaque:
        pass

    options = LintOptions(archs=("hopper",), stage="config", spec={"copy_kernel": {"n": Opaque()}})
    replay = LaunchReplay(tmp_path / "cache", options, [], engine=linter_module.default_engine())
    from kernelrules.discover.kernels import discover

    kernel = discover(["pkg"]).by_name("copy_kernel")[0]
    assert replay.key(kernel) is None
    stable = LaunchReplay(tmp_path / "cache", LintOptions(archs=("hopper",)), [], linter_module.default_engine())
    assert stable.key(kernel) == stable.key(kernel) is not None
    monkeypatch.setenv("TRITON_DEBUG", "1")  # a switch that changes a build (and the compile cache's key)
    debug = LaunchReplay(tmp_path / "cache", LintOptions(archs=("hopper",)), [], linter_module.default_engine())
    assert debug.key(kernel) not in (None, stable.key(kernel))
