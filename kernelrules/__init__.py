"""kernelrules: a hardware-aware rules engine and static analyzer for Triton kernels.

The public Python API::

    import kernelrules
    arch = kernelrules.load_arch("ada")                 # a profile, by name or alias
    verdict = kernelrules.check({"BLOCK_M": 128, "num_warps": 8}, arch)
    verdict.verdict, [d.code for d in verdict.diagnostics], verdict.repair

For tuners::

    result = kernelrules.prune(kernel, configs, "ada", args=(a, b, c, M, N, K))  # or signature={...}
    result.kept, [r.codes for r in result.rejected], result.repaired[config], result.candidates()

    @kernelrules.autotune(configs=CONFIGS, key=["M", "N", "K"], arch="ada")    # triton.autotune + pruning
    @triton.jit
    def kernel(...): ...

``@kernelrules.autotune(..., pinned="matmul.pinned.json", on_missing="static")`` launches
pinned configs with no benchmark (docs/pinned.md); ``kernelrules.static_pick(kernel,
configs, args, arch=...)`` is the deterministic choice without timing.

``kernelrules.prune(space_file, "ada,hopper")`` judges a search-space file instead, and
``kernelrules.RulesGate`` prunes Optuna trials the rules reject.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load_arch": ("kernelrules.arch", "load_arch"),
    "list_archs": ("kernelrules.arch", "list_archs"),
    "Arch": ("kernelrules.arch", "Arch"),
    "check": ("kernelrules.judge.engine", "check"),
    "Engine": ("kernelrules.judge.engine", "Engine"),
    "Verdict": ("kernelrules.judge.engine", "Verdict"),
    "Diagnostic": ("kernelrules.judge.engine", "Diagnostic"),
    "KernelConfig": ("kernelrules.config", "KernelConfig"),
    "prune": ("kernelrules.adapters.prune_api", "prune"),
    "KernelPruneResult": ("kernelrules.adapters.prune_api", "KernelPruneResult"),
    "autotune": ("kernelrules.adapters.triton_autotune", "autotune"),
    "early_prune": ("kernelrules.adapters.triton_prune", "early_prune"),
    "static_pick": ("kernelrules.adapters.static_pick", "static_pick"),
    "triton_perf_model": ("kernelrules.adapters.triton_perf", "triton_perf_model"),
    "RulesGate": ("kernelrules.adapters.optuna_helper", "RulesGate"),
    "load_pinned": ("kernelrules.pinned", "load_table"),
    "load_space": ("kernelrules.space", "load_space"),
    "load_rules": ("kernelrules.judge.ruleset", "load_rules"),
    "KernelrulesError": ("kernelrules.errors", "KernelrulesError"),
}

__all__ = ["__version__", *_LAZY]


def __getattr__(name: str) -> Any:
    """Import the public API on first use, so ``kernelrules --version`` stays fast."""
    if name in _LAZY:
        import importlib

        module_name, attr = _LAZY[name]
        value = getattr(importlib.import_module(module_name), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kernelrules' has no attribute {name!r}")
