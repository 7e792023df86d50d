"""kernelrules.prune(kernel, configs, arch, signature=|args=): the plain prune API for tuners, on the CPU."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import triton

import kernelrules
from kernelrules.errors import ConfigValueError, KernelrulesError, SignatureSpecError, UnknownArchError

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import FakeTensor, matmul_args as example_args  # noqa: E402

M = N = K = 4096
LIMITS = {"ada": 101376, "hopper": 232448}
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": M, "N": N, "K": K, "stride_am": K,
             "stride_ak": 1, "stride_bk": N, "stride_bn": 1, "stride_cm": N, "stride_cn": 1}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """One compile cache for the module: the probes are compiled once, not once per test."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELRULES_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        mp.delenv("KERNELRULES_ARCH", raising=False)
        yield


def values(config):
    """A triton.Config or a dict as one flat dict."""
    return dict(config) if isinstance(config, dict) else {**config.kwargs, "num_warps": config.num_warps,
                                                          "num_stages": config.num_stages}


def shared_bytes(config, arch):
    """Pipeline buffers of the example matmul: (stages - 1) on sm_89, stages with wgmma on sm_90."""
    v = values(config)
    stages = v["num_stages"] - 1 if arch == "ada" else v["num_stages"]
    return max(1, stages) * (v["BLOCK_M"] * v["BLOCK_K"] + v["BLOCK_K"] * v["BLOCK_N"]) * 2


@pytest.mark.parametrize("arch", ["ada", "hopper"])
def test_partition_of_the_example_configs_is_exact(arch):
    configs = matmul_kernel.configs
    result = kernelrules.prune(matmul_kernel, configs, arch, args=example_args())
    over = [c for c in configs if shared_bytes(c, arch) > LIMITS[arch]]
    assert [id(c) for c in result.kept] == [id(c) for c in configs if c not in over]
    assert [id(r.config) for r in result.rejected] == [id(c) for c in over]
    assert all(r.codes == ["MEM001"] for r in result.rejected)
    assert list(result.repaired) == over  # every rejected config has a nearest passing one
    for original, repair in result.repaired.items():
        assert isinstance(repair, triton.Config) and repair is not original
        assert shared_bytes(repair, arch) <= LIMITS[arch] and repair.kwargs["GROUP_SIZE_M"] == 8
    again = kernelrules.prune(matmul_kernel, result.repaired.values(), arch, args=example_args())
    assert again.rejected == [] and len(again.kept) == len(over)


def test_cpu_torch_tensors_work_as_args():
    torch = pytest.importorskip("torch")
    a = torch.empty((64, 64), dtype=torch.float16)
    result = kernelrules.prune(matmul_kernel, matmul_kernel.configs, "ada", args=(a, a, a) + example_args()[3:])
    expected = kernelrules.prune(matmul_kernel, matmul_kernel.configs, "ada", args=example_args())
    assert result.kept == expected.kept and result.repaired == expected.repaired


def test_rejection_reasons_carry_the_numbers():
    config = matmul_kernel.configs[8]  # 128x256x64, 8 warps, 4 stages: 147456 bytes
    (rejection,) = kernelrules.prune(matmul_kernel, [config], "ada", args=example_args()).rejected
    assert rejection.config is config and rejection.codes == ["MEM001"]
    assert "147456" in rejection.message and "101376" in rejection.message and "\n" not in rejection.message
    assert (rejection.repair.kwargs, rejection.repair.num_warps, rejection.repair.num_stages) == (config.kwargs, 8, 3)


def test_dict_configs_with_a_signature_come_back_as_dicts():
    configs = [{**c.kwargs, "num_warps": c.num_warps, "num_stages": c.num_stages} for c in matmul_kernel.configs]
    for config in configs:
        del config["GROUP_SIZE_M"]  # fixed through the signature instead
    result = kernelrules.prune(matmul_kernel, configs, "ada", signature={**SIGNATURE, "GROUP_SIZE_M": 8})
    over = [c for c in configs if shared_bytes(c, "ada") > LIMITS["ada"]]
    assert [id(c) for c in result.kept] == [id(c) for c in configs if c not in over]
    assert list(result.repaired) == over
    for original, repair in result.repaired.items():
        assert type(repair) is dict and list(repair) == list(original)  # the caller's keys, in its order
        assert shared_bytes(repair, "ada") <= LIMITS["ada"]
    assert result.repaired[dict(configs[8])] == {**configs[8], "num_stages": 3}  # found by equality too


def test_candidates_put_repairs_in_place_without_duplicates():
    base = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4}
    configs = [{**base, "num_stages": 5}, {**base, "num_stages": 4}, {**base, "num_stages": 6}]
    result = kernelrules.prune(matmul_kernel, configs, "ada", signature=SIGNATURE)
    # 4 stages need 98304 bytes and pass; 5 repairs to 4 (one edit), already kept; 6 to BLOCK_K=32 (one edit)
    six = {**base, "BLOCK_K": 32, "num_stages": 6}
    assert result.kept == [configs[1]] and [r.repair for r in result.rejected] == [configs[1], six]
    assert result.candidates() == [configs[1], six] and result.candidates(repair=False) == [configs[1]]
    assert result.candidates()[0] is configs[1]
    assert result.to_json()["results"][0]["verdict"] == "reject"


def test_arch_from_the_environment(monkeypatch):
    monkeypatch.setenv("KERNELRULES_ARCH", "hopper")
    result = kernelrules.prune(matmul_kernel, matmul_kernel.configs[8:9], args=example_args())
    assert result.arch == "sm_90" and len(result.kept) == 1


def test_the_space_file_form_still_dispatches():
    with pytest.raises(KernelrulesError, match="nosuch.space.yaml"):
        kernelrules.prune("nosuch.space.yaml", "ada")
    with pytest.raises(TypeError, match="Triton kernel"):
        kernelrules.prune(42, [], "ada", signature=SIGNATURE)


IMPORT_ORDERS = {
    "function first": "kernelrules.prune\nimport kernelrules.judge.pipeline, kernelrules.adapters.prune_api, kernelrules.adapters.triton_autotune",
    "modules first": "import kernelrules.judge.pipeline, kernelrules.adapters.prune_api, kernelrules.adapters.triton_autotune\nkernelrules.prune",
}


@pytest.mark.parametrize("order", IMPORT_ORDERS)
def test_kernelrules_prune_is_the_dispatcher_whichever_is_imported_first(order):
    """``kernelrules.prune`` is prune_api's function, read before or after the modules around it are imported."""
    code = (f"import sys, kernelrules\n{IMPORT_ORDERS[order]}\n"
            "assert kernelrules.prune is kernelrules.adapters.prune_api.prune, kernelrules.prune\n"
            "assert 'kernelrules.prune' not in sys.modules\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


BAD_INPUT = [
    ({"configs": [{"BLOCK_Q": 64, "num_warps": 4}], "args": example_args()}, ConfigValueError, "BLOCK_Q"),
    ({"arch": "nosuch", "args": example_args()}, UnknownArchError, "nosuch"),
    ({"args": example_args() + (1, 2, 3, 4, 5)}, SignatureSpecError, "17 positional arguments"),
    ({"args": example_args() + (16,)}, ConfigValueError, "BLOCK_M is set by the config"),
    ({"args": {"a_ptr": FakeTensor(), "Q": 1}}, SignatureSpecError, "'Q'"),
    ({"args": example_args()[:3]}, SignatureSpecError, "'M'"),
    ({"args": (object(),) + example_args()[1:]}, SignatureSpecError, "'a_ptr'"),
    ({"signature": {**SIGNATURE, "stride_cn": "*fp16x"}}, SignatureSpecError, "fp16x"),
]


@pytest.mark.parametrize("kwargs,error,fragment", BAD_INPUT)
def test_bad_input_is_one_clear_error(kwargs, error, fragment):
    call = {"configs": matmul_kernel.configs[:2], "arch": "ada", **kwargs}
    with pytest.raises(error, match=fragment) as info:
        kernelrules.prune(matmul_kernel, call.pop("configs"), call.pop("arch"), **call)
    assert "\n" not in str(info.value)


def test_no_arch_and_no_gpu_says_what_to_do():
    with pytest.raises(UnknownArchError, match="KERNELRULES_ARCH"):
        kernelrules.prune(matmul_kernel, matmul_kernel.configs[:1], signature=SIGNATURE)


def test_launch_needs_exactly_one_of_signature_and_args():
    with pytest.raises(TypeError, match="exactly one"):
        kernelrules.prune(matmul_kernel, matmul_kernel.configs, "ada")
    with pytest.raises(TypeError, match="exactly one"):
        kernelrules.prune(matmul_kernel, matmul_kernel.configs, "ada", signature=SIGNATURE, args=example_args())
