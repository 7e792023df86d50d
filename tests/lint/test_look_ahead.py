"""A compiled-stage lint resolves the next kernels early and compiles their first config ahead
(kernelrules/lint/look_ahead.py): the same report, each launch resolved once, no compile twice."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from kernelrules.compile.pool import CompilePool
from kernelrules.lint import linter as linter_module
from kernelrules.lint import look_ahead
from kernelrules.lint.linter import Linter, LintOptions
from kernelrules.lint.reporters import render_json

KERNEL = '''\

@triton.jit
def {name}(x_ptr, y_ptr, n, BLOCK: tl.constexpr = {block}):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) {op}, mask=offs < n)
'''


@pytest.fixture
def package(tmp_path, monkeypatch):
    """Five small kernels in two modules of a package."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    header = "import triton\nimport triton.language as tl\n"
    (pkg / "a.py").write_text(header + "".join(KERNEL.format(name=f"k{i}", block=128 << i, op=f"* {i + 2}")
                                               for i in range(3)))
    (pkg / "b.py").write_text(header + "".join(KERNEL.format(name=f"k{i}", block=64 << i, op=f"+ {i}")
                                               for i in range(3, 5)))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))
    return pkg


def lint(tmp_path, name: str) -> str:
    options = LintOptions(archs=("hopper",), stage="compiled", cache_dir=str(tmp_path / name), jobs=2)
    return render_json(Linter(options).run(["pkg"]))


def untimed(report: str) -> object:
    """The report without compile times (which differ from run to run)."""
    def strip(value):
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items() if k != "compile_seconds"}
        return [strip(v) for v in value] if isinstance(value, list) else value
    return strip(json.loads(report))


@pytest.fixture
def dispatched(monkeypatch):
    """Every job the pools dispatch: (compiled ahead?, kernel, constexprs, options)."""
    jobs: list[tuple] = []
    real = CompilePool._dispatch

    def recording(self, worker, job, key, shared_dir=None):
        jobs.append((self._ahead.owns(job), job.kernel, tuple(sorted(job.constexprs.items())),
                     tuple(sorted(job.options.items()))))
        return real(self, worker, job, key, shared_dir)

    monkeypatch.setattr(CompilePool, "_dispatch", recording)
    return jobs


def test_look_ahead_changes_nothing_but_when_compiles_run(package, tmp_path, monkeypatch, dispatched):
    resolved = Counter()
    for module in (linter_module, look_ahead):
        real = module.resolve
        monkeypatch.setattr(module, "resolve", lambda kernel, _real=real, **kw: resolved.update([kernel.name])
                            or _real(kernel, **kw))
    ahead = lint(tmp_path, "with")
    assert '"analyzed"' in ahead and ahead.count('"status": "analyzed"') == 5
    assert resolved == Counter({f"k{i}": 1 for i in range(5)})  # a resolution made ahead is the one judged
    compiled = Counter((kernel, constexprs) for _, kernel, constexprs, _ in dispatched)
    assert sum(1 for owned, *_ in dispatched if owned) >= 1  # some first configs were compiled ahead
    assert max(compiled.values()) == 1  # and none twice

    monkeypatch.setattr(look_ahead.LookAhead, "enabled", property(lambda self: False))
    dispatched.clear()
    assert untimed(lint(tmp_path, "without")) == untimed(ahead)
    assert not any(owned for owned, *_ in dispatched)


def test_no_look_ahead_at_the_config_stage(package, tmp_path, dispatched):
    options = LintOptions(archs=("hopper",), stage="config", cache_dir=str(tmp_path / "cache"), jobs=2)
    Linter(options).run(["pkg"])
    assert not any(owned for owned, *_ in dispatched)
