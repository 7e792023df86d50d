"""kernelrules.adapters.optuna_helper.RulesGate: Optuna trials the rules reject never reach the objective."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import pytest

import kernelrules
from kernelrules.errors import ConfigValueError
from kernelrules.adapters.optuna_helper import USER_ATTR, RulesGate

optuna = pytest.importorskip("optuna")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import matmul_args as example_args  # noqa: E402

SPACE = {"BLOCK_M": [64, 128, 256], "BLOCK_N": [128, 256], "BLOCK_K": [64], "num_warps": [4, 8],
         "num_stages": [3, 4, 5]}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("KERNELRULES_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(autouse=True)
def quiet_optuna():
    optuna.logging.set_verbosity(optuna.logging.WARNING)


def grid():
    return [dict(zip(SPACE, values)) for values in itertools.product(*SPACE.values())]


def key(params):
    return tuple(sorted(params.items()))


def grid_study():
    """Every point of SPACE exactly once."""
    return optuna.create_study(sampler=optuna.samplers.GridSampler(SPACE, seed=0))


def over_shared(params):
    """On ada, (num_stages - 1) fp16 pipeline buffers over the 101376 bytes of shared memory (MEM001)."""
    stages = params["num_stages"] - 1
    return stages * (params["BLOCK_M"] + params["BLOCK_N"]) * params["BLOCK_K"] * 2 > 101376


def over_the_limit(params):
    """MEM001, or 512+ fp32 accumulators per thread (REG002)."""
    return over_shared(params) or params["BLOCK_M"] * params["BLOCK_N"] // (32 * params["num_warps"]) >= 512


def test_rejected_trials_are_pruned_before_the_objective():
    expected = kernelrules.prune(matmul_kernel, grid(), "ada", args=example_args(), fixed={"GROUP_SIZE_M": 8})
    assert [r.config for r in expected.rejected] == [p for p in grid() if over_the_limit(p)]
    assert [r.config for r in expected.rejected if "MEM001" in r.codes] == [p for p in grid() if over_shared(p)]
    assert expected.rejected and expected.kept  # the space has both
    evaluated = []
    with RulesGate(matmul_kernel, "ada", args=example_args(), fixed={"GROUP_SIZE_M": 8}) as gate:
        def objective(trial):
            params = gate.sample(trial, SPACE)
            evaluated.append(params)
            return params["BLOCK_M"] * params["BLOCK_N"]

        study = grid_study()
        study.optimize(objective, n_trials=len(grid()))
    assert sorted(map(key, evaluated)) == sorted(map(key, expected.kept))  # objective ran exactly on the passing ones
    pruned = {key(t.params): t.user_attrs[USER_ATTR] for t in study.trials if t.state == optuna.trial.TrialState.PRUNED}
    assert len(pruned) == len(expected.rejected)
    for rejection in expected.rejected:
        info = pruned[key(rejection.config)]
        assert info["verdict"] == "reject" and info["arch"] == "sm_89"
        assert info["codes"] == rejection.codes and set(info["codes"]) <= {"MEM001", "REG002"}
        assert ("MEM001" in info["codes"]) == ("101376" in info["message"])
        assert info["repair"] == rejection.repair  # plain JSON: a dict of the tuned parameters only


def test_repair_evaluates_the_nearest_passing_config():
    evaluated = []
    with RulesGate(matmul_kernel, "ada", args=example_args(), fixed={"GROUP_SIZE_M": 8}, repair=True) as gate:
        def objective(trial):
            params = gate.sample(trial, SPACE)
            evaluated.append(params)
            return 0.0

        study = grid_study()
        study.optimize(objective, n_trials=len(grid()))
    repaired = [t for t in study.trials if USER_ATTR in t.user_attrs]
    assert len(evaluated) == len(grid()) and repaired  # nothing pruned: each rejected point has a neighbour
    assert all(t.state == optuna.trial.TrialState.COMPLETE for t in study.trials)
    for trial in repaired:
        info = trial.user_attrs[USER_ATTR]
        assert info["verdict"] == "repaired" and info["evaluated"] != trial.params
    check = kernelrules.prune(matmul_kernel, evaluated, "ada", args=example_args(), fixed={"GROUP_SIZE_M": 8})
    assert check.rejected == []  # the objective only ever saw configs that pass


def test_check_without_optuna_and_bad_params():
    gate = RulesGate(matmul_kernel, "hopper", signature={"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16",
                                                         "M": 4096, "N": 4096, "K": 4096, "stride_am": 4096,
                                                         "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1,
                                                         "stride_cm": 4096, "stride_cn": 1, "GROUP_SIZE_M": 8})
    with gate:
        ok = {"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "num_warps": 8, "num_stages": 3}
        assert gate.check(ok) is None
        rejection = gate.check({**ok, "num_warps": 6})
        assert rejection.codes == ["CFG002"] and rejection.repair["num_warps"] in (4, 8)
        with pytest.raises(ConfigValueError, match="BLOCK_Q"):
            gate.check({**ok, "BLOCK_Q": 32})


def test_core_never_imports_optuna():
    code = ("import sys, kernelrules, kernelrules.adapters.optuna_helper, kernelrules.adapters.prune_api, kernelrules.adapters.triton_autotune; "
            "sys.exit('optuna' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0
