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
``kernelrules.optuna_helper.RulesGate`` prunes Optuna trials the rules reject.
"""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

_LAZY = {
    "load_arch": ("kernelrules.arch", "load_arch"),
    "list_archs": ("kernelrules.arch", "list_archs"),
    "Arch": ("kernelrules.arch", "Arch"),
    "check": ("kernelrules.engine", "check"),
    "Engine": ("kernelrules.engine", "Engine"),
    "Verdict": ("kernelrules.engine", "Verdict"),
    "Diagnostic": ("kernelrules.engine", "Diagnostic"),
    "KernelConfig": ("kernelrules.config", "KernelConfig"),
    "prune": ("kernelrules.prune_api", "prune"),
    "KernelPruneResult": ("kernelrules.prune_api", "KernelPruneResult"),
    "autotune": ("kernelrules.triton", "autotune"),
    "early_prune": ("kernelrules.triton", "early_prune"),
    "static_pick": ("kernelrules.static_pick", "static_pick"),
    "load_pinned": ("kernelrules.pinned", "load_table"),
    "load_space": ("kernelrules.space", "load_space"),
    "load_rules": ("kernelrules.ruleset", "load_rules"),
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
