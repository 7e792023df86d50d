"""The public API is the names of ``kernelrules.__all__``, whatever folder their module lives in."""

from __future__ import annotations

import subprocess
import sys

import kernelrules


def test_every_public_name_resolves():
    for name in kernelrules.__all__:
        assert getattr(kernelrules, name) is not None, name


def test_public_functions_stay_functions_after_every_module_is_imported():
    """No module shares a public function's name (``kernelrules.prune`` was once a module too)."""
    code = (
        "import importlib, pkgutil, kernelrules\n"
        "for m in pkgutil.walk_packages(kernelrules.__path__, 'kernelrules.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "import inspect\n"
        "bad = [n for n in ('prune', 'static_pick', 'autotune', 'early_prune', 'triton_perf_model', 'check')\n"
        "       if not inspect.isfunction(getattr(kernelrules, n))]\n"
        "print(bad)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "[]"


def test_tuner_names_are_public():
    from kernelrules.adapters.optuna_helper import RulesGate
    from kernelrules.adapters.triton_perf import triton_perf_model

    assert kernelrules.RulesGate is RulesGate
    assert kernelrules.triton_perf_model is triton_perf_model
