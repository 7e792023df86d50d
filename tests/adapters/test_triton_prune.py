"""kernelrules.adapters.triton_prune.early_prune: Triton's prune_configs_by hook, judged on the CPU."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import pytest
import triton

from kernelrules.adapters.kernel_prune import launch_signature
from kernelrules.adapters.triton_prune import early_prune

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import matmul_named_args as named_args  # noqa: E402


def shared_bytes(config, arch):
    """Pipeline buffers of the example matmul: (stages - 1) on sm_89, stages with wgmma on sm_90."""
    k = config.kwargs
    stages = config.num_stages - 1 if arch == "ada" else config.num_stages
    return max(1, stages) * (k["BLOCK_M"] * k["BLOCK_K"] + k["BLOCK_K"] * k["BLOCK_N"]) * 2


def test_signature_from_named_args():
    signature, constexprs = launch_signature(matmul_kernel.fn, named_args())
    assert signature["a_ptr"] == "*fp16" and signature["M"] == 4096 and signature["stride_ak"] == 1
    assert constexprs == {}


@pytest.mark.parametrize("arch,limit", [("ada", 101376), ("hopper", 232448)])
def test_drops_configs_over_the_shared_memory_limit(arch, limit, tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path))
    configs = matmul_kernel.configs
    prune = early_prune(matmul_kernel, arch=arch, repair=False)
    kept = prune(configs, named_args())
    assert all(isinstance(c, triton.Config) for c in kept)
    expected = [c for c in configs if shared_bytes(c, arch) <= limit
                and c.kwargs["BLOCK_M"] * c.kwargs["BLOCK_N"] // (32 * c.num_warps) < 512]
    assert [id(c) for c in kept] == [id(c) for c in expected]


def test_repair_replaces_rejected_configs_without_duplicates(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path))
    configs = [triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=4,
                             num_stages=s) for s in (4, 5)]
    kept = early_prune(matmul_kernel, arch="ada")(configs, named_args())
    # ns=4 needs 98304 bytes and is kept; ns=5 (131072) repairs to ns=4, already kept: no duplicate
    assert [(c.num_stages, c.kwargs["BLOCK_K"]) for c in kept] == [(4, 64)]
    assert kept[0] is configs[0]


def test_bad_input_warns_and_keeps_every_config(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path))
    configs = [triton.Config({"BLOCK_Q": 64}, num_warps=4)]
    with pytest.warns(UserWarning, match="BLOCK_Q"):
        assert early_prune(matmul_kernel, arch="ada")(configs, named_args()) == configs
    with pytest.warns(UserWarning, match="unknown architecture"):
        assert early_prune(matmul_kernel, arch="nosuch")(configs, named_args()) == configs
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert early_prune(matmul_kernel, arch="hopper")([], named_args()) == []


def test_repair_builds_a_new_config(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path))
    hook = object()
    config = triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=8,
                           num_stages=4, pre_hook=None)
    config.pre_hook = hook
    (kept,) = early_prune(matmul_kernel, arch="ada")([config], named_args())
    assert kept is not config and isinstance(kept, triton.Config)
    assert kept.num_stages == 3 and kept.kwargs == config.kwargs and kept.pre_hook is hook
