"""The specify step (:mod:`kernelrules.specify.kernelspec`): a kernel's launch signature, constexpr values
and configs to judge, resolved from the source and loaded spec files, without running anything."""

from __future__ import annotations

import pytest

from kernelrules.config import KernelConfig
from kernelrules.specify.kernelspec import resolve

KERNELS = '''
import triton
import triton.language as tl


def keep_small(configs, named_args, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] <= named_args["n"]]


@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 512})],
    key=["n"],
    prune_configs_by={"early_config_prune": keep_small},
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scale_kernel(x_ptr, y_ptr, n, EVEN: tl.constexpr, BLOCK: tl.constexpr, SCALE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs) * SCALE)
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * SCALE, mask=offs < n)


@triton.jit
def desc_kernel(a_desc, BLOCK: tl.constexpr):
    a_desc.store([0, 0], a_desc.load([0, 0]))
'''

SPEC = {"scale_kernel": {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 256, "SCALE": 2}}


@pytest.fixture
def kernels(discovered) -> dict:
    return discovered(KERNELS)


def test_a_loaded_spec_gives_the_signature_and_the_constexprs(kernels):
    resolved = resolve(kernels["scale_kernel"], spec=SPEC)
    assert resolved.source == "spec" and resolved.signature.complete
    assert resolved.signature.spec["x_ptr"] == "*fp32" and resolved.signature.spec["n"] == 256
    assert resolved.provenance["SCALE"] == "spec" and resolved.fixed["SCALE"] == 2
    assert resolved.guessed == {}
    target = resolved.target(kernels["scale_kernel"])
    assert target.name == "scale_kernel" and target.kernel_info["dtypes"] == ["fp32"]
    assert target.fixed == frozenset({"EVEN", "SCALE"})


def test_without_a_spec_the_missing_constexpr_is_a_labelled_guess(kernels):
    resolved = resolve(kernels["scale_kernel"])
    assert resolved.provenance["x_ptr"] == "naming" and resolved.provenance["SCALE"] == "default"
    assert set(resolved.guessed) == {"SCALE"}
    assert all(config.constexprs["SCALE"] == resolved.guessed["SCALE"] for config, _, _ in resolved.sites)


def test_heuristics_and_early_prune_run_as_at_launch(kernels):
    resolved = resolve(kernels["scale_kernel"], spec=SPEC)
    assert [c.constexprs["BLOCK"] for c, _, _ in resolved.sites] == [64, 128]  # 512 > n=256: pruned
    assert all(c.constexprs["EVEN"] is True for c, _, _ in resolved.sites)  # 256 % BLOCK == 0
    assert resolved.provenance["EVEN"] == "heuristics"
    assert resolved.notes == ("keep_small kept 2 of 3 configs",)
    assert [line for _, line, _ in resolved.sites] == [11, 11]  # the triton.Config lines


def test_given_sites_are_judged_as_given_without_launch_code(kernels):
    config = KernelConfig.from_dict({"BLOCK": 512})
    resolved = resolve(kernels["scale_kernel"], spec=SPEC, sites=[(config, None, None)], at_launch=False)
    assert [c.to_dict() for c, _, _ in resolved.sites] == [{"BLOCK": 512, "EVEN": False, "SCALE": 2}]
    assert resolved.guessed == {"EVEN": False} and resolved.provenance["EVEN"] == "default"
    assert resolved.notes == ()


def test_an_incomplete_signature_says_what_is_missing_and_guesses_nothing(kernels):
    resolved = resolve(kernels["desc_kernel"])
    assert not resolved.signature.complete
    assert resolved.signature.missing == ["a_desc"] and resolved.signature.descriptors == ["a_desc"]
    assert resolved.guessed == {} and len(resolved.sites) == 1


def test_the_specify_step_sits_below_lint_and_check_config():
    """kernelspec imports neither lint, check-config nor the CLI; check-config reaches the specify
    step through it, not through lint (it imported three of lint's private helpers before)."""
    from test_layering import GRAPH  # the import graph the layering contracts read (tests/ is on sys.path)

    specify = GRAPH["kernelrules.specify.kernelspec"]
    assert not {m for m in specify if m.startswith(("kernelrules.lint", "kernelrules.cli"))}
    check_config = GRAPH["kernelrules.lint.check_kernel"]
    assert "kernelrules.specify.kernelspec" in check_config and "kernelrules.lint.linter" not in check_config
    assert "kernelrules.specify.kernelspec" in GRAPH["kernelrules.lint.linter"]
