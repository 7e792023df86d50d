"""No duplicate trials: the sampler never proposes a config the study already holds (DedupSampler)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

optuna = pytest.importorskip("optuna")
pytest.importorskip("torch")

from optuna.trial import TrialState  # noqa: E402

from kernelrules.space import load_space  # noqa: E402
from kernelrules.tune import tune  # noqa: E402
from kernelrules.tune.samplers import DedupSampler, make_sampler  # noqa: E402
from kernelrules.tune.study import ParamCodec, config_key, load_records, open_storage  # noqa: E402

FIXTURES = Path(__file__).parent.parent / "fixtures" / "tune"
SMALL = FIXTURES / "matmul_small.yaml"


def _tiny_space(tmp_path: Path) -> Path:
    """matmul_small cut to 12 configs: (BLOCK_M, BLOCK_N) = (32, 32) outside the constraints, num_warps=6
    rejected by a rule (6 of them), 6 timed."""
    text = SMALL.read_text()
    text = text.replace("kernel: ../../../examples/matmul.py:matmul_kernel",
                        f"kernel: {(FIXTURES / '../../../examples/matmul.py').resolve()}:matmul_kernel")
    text = text.replace("num_warps: [1, 4, 6]", "num_warps: [1, 6]").replace("num_stages: [1, 2]", "num_stages: [1]")
    text = text.replace("problem:\n", 'constraints:\n  - "config.BLOCK_M * config.BLOCK_N <= 512"\nproblem:\n', 1)
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    return path


class _Stuck(optuna.samplers.BaseSampler):
    """An inner sampler that always proposes the same point (position 0 / the first value of every key)."""

    def __init__(self, point=None):
        self.point = point or {}
        self.calls = 0

    def infer_relative_search_space(self, study, trial):
        return {}

    def sample_relative(self, study, trial, search_space):
        return {}

    def sample_independent(self, study, trial, name, distribution):
        self.calls += 1
        if name in self.point:
            return self.point[name]
        return distribution.low if hasattr(distribution, "low") else distribution.choices[0]


def _exhaust(sampler, codec, *, limit=200, enqueue=()):
    study = optuna.create_study(sampler=sampler)
    for params in enqueue:
        study.enqueue_trial(params)
    asked = []
    while not sampler.exhausted(study) and len(asked) < limit:
        trial = study.ask(codec.distributions)
        asked.append(config_key(codec.decode(trial.params)))
        study.tell(trial, float(len(asked)))
    return study, asked


def test_a_stuck_inner_sampler_still_walks_the_whole_space_once():
    space = load_space(SMALL)
    codec = ParamCodec(space)
    keys = {config_key(c) for c in space.configs()}
    sampler = DedupSampler(_Stuck(), codec, seed=5)
    study, asked = _exhaust(sampler, codec)
    assert len(asked) == len(keys) == 48 and set(asked) == keys  # each config once, then it stops
    assert sampler.exhausted(study)
    replaced = [t for t in study.trials if "kr_replaced" in t.system_attrs]
    assert len(replaced) == 47 and all(t.system_attrs["kr_replaced"]["reason"] == "duplicate" for t in replaced)
    # the trial's parameters are the config evaluated; the inner proposal is kept beside them
    assert all(t.system_attrs["kr_replaced"]["proposed"] == {n: 0 for n in codec.distributions} for t in replaced)
    # the replacement is the nearest untried config: the second trial differs from the first in one step
    first, second = (t.params for t in study.trials[:2])
    assert sum(first[n] != second[n] for n in first) == 1
    # deterministic from the seed
    _study, again = _exhaust(DedupSampler(_Stuck(), codec, seed=5), codec)
    assert again == asked
    # asked once more anyway (a race between processes): the inner proposal, a duplicate the claims catch
    trial = study.ask(codec.distributions)
    assert trial.params == {n: 0 for n in codec.distributions}


def test_proposals_outside_the_constraints_queued_trials_and_failed_ones(tmp_path):
    space = load_space(_tiny_space(tmp_path))
    codec = ParamCodec(space)
    keys = {config_key(c) for c in space.configs()}
    assert len(keys) == 12
    outside = {"BLOCK_M": 1, "BLOCK_N": 1, "BLOCK_K": 0, "num_warps": 0}  # 32 x 32: excluded by the constraint
    queued = codec.encode(next(iter(space.configs())).to_dict())
    sampler = DedupSampler(_Stuck(outside), codec, seed=0)
    study, asked = _exhaust(sampler, codec, enqueue=[queued])
    assert sorted(asked) == sorted(keys)
    assert asked[0] == config_key(codec.decode(queued))  # the queued trial is asked first, as enqueued
    reasons = Counter(t.system_attrs["kr_replaced"]["reason"] for t in study.trials if "kr_replaced" in t.system_attrs)
    assert reasons == {"outside_space": 11}

    # a queued config counts as tried; a failed trial of the driver (duplicate or interrupted) does not
    study = optuna.create_study(sampler=DedupSampler(_Stuck(outside), codec, seed=0))
    for config in space.configs():
        study.enqueue_trial(codec.encode(config.to_dict()))
    assert not study.sampler.exhausted(study)  # trials wait
    lost = None
    for _ in range(12):
        trial = study.ask(codec.distributions)
        if lost is None:
            lost = dict(trial.params)
            trial.set_user_attr("kr_owner", {"worker": "gone"})
            study.tell(trial, state=TrialState.FAIL)
        else:
            study.tell(trial, 1.0)
    assert not study.sampler.exhausted(study)
    trial = study.ask(codec.distributions)
    assert trial.params == lost and "kr_replaced" in study._storage.get_trial(trial._trial_id).system_attrs
    study.tell(trial, 1.0)
    assert study.sampler.exhausted(study)


@pytest.mark.parametrize("name", ["auto", "tpe", "qmc", "random", "grid"])
def test_every_sampler_proposes_each_config_once(name):
    space = load_space(SMALL)
    codec = ParamCodec(space)
    sampler = make_sampler(name, codec, seed=1, n_startup=4)
    assert isinstance(sampler, DedupSampler)
    _study, asked = _exhaust(sampler, codec)
    assert len(asked) == 48 and len(set(asked)) == 48


def test_a_tune_run_to_exhaustion_judges_every_config_exactly_once(tmp_path):
    space = _tiny_space(tmp_path)
    db = tmp_path / "study.db"
    result = tune(space, arch="ampere", interpret=True, storage=str(db), study_name="s", stage="config",
                  cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, seed=0, startup_trials=2, model_seeds=2)
    statuses = Counter(r["status"] for r in result.records)
    assert statuses["duplicate"] == 0 and statuses["outside_space"] == 0
    keys = Counter(r["key"] for r in result.records)
    assert len(keys) == 12 and max(keys.values()) == 1  # every config judged exactly once
    assert statuses["rejected"] == 6 and statuses["better"] + statuses["slower"] == 6
    f = result.summary["funnel"]
    assert f["sampled"] == 12 and f["not_sampled"] == 0 and f["duplicates"] == 0
    assert not [n for n in result.notes if "in a row" in n]  # stopped because the space was done
    study = optuna.load_study(study_name="s", storage=open_storage(f"sqlite:///{db}"))
    assert len(study.trials) == 12 and all(t.state == TrialState.COMPLETE for t in study.trials)
    assert not [r for r in load_records(study) if r["status"] == "duplicate"]
    # resumed, the exhausted study asks nothing
    again = tune(space, arch="ampere", interpret=True, storage=str(db), study_name="s", stage="config",
                 cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, seed=0)
    assert again.records == [] and len(study.trials) == 12


def test_claims_stop_at_the_study_total(tmp_path):
    """``--trials N`` is a study total: a claim past N is refused (None), an owned config still names its owner."""
    from kernelrules.tune.study import Claims

    claims = Claims(open_storage(f"sqlite:///{tmp_path / 'c.db'}"), "s")
    assert claims.claim("a", 0, limit=2) == 0 and claims.claim("b", 1, limit=2) == 1
    assert claims.claim("c", 2, limit=2) is None and claims.count() == 2
    assert claims.claim("a", 3, limit=2) == 0  # a duplicate, not a refusal
    assert claims.claim("c", 4, limit=3) == 4 and claims.claim("d", 5) == 5  # no limit: as before


def test_a_config_another_process_reserved_meanwhile_is_skipped():
    space = load_space(SMALL)
    codec = ParamCodec(space)
    sampler = DedupSampler(_Stuck(), codec, seed=0)
    owners: dict[str, int] = {config_key(codec.decode({n: 0 for n in codec.distributions})): 99}  # the other process

    def reserve(params, number):
        return owners.setdefault(config_key(codec.decode(params)), number)

    sampler.reserve = reserve
    study = optuna.create_study(sampler=sampler)
    trial = study.ask(codec.distributions)
    assert trial.params != {n: 0 for n in codec.distributions}  # the stuck point was taken elsewhere
    assert owners[config_key(codec.decode(trial.params))] == trial.number
    sampler.reserve = lambda params, number: None  # the --trials total is reached: returned as is, the driver refuses
    assert study.ask(codec.distributions).params


_DIES_WHILE_SAMPLING = """
import os, sys
import optuna
from kernelrules.space import load_space
from kernelrules.tune import recovery
from kernelrules.tune.samplers import DedupSampler
from kernelrules.tune.study import ParamCodec, open_storage

class Dies(optuna.samplers.RandomSampler):
    def sample_independent(self, study, trial, name, distribution):
        os._exit(3)  # killed while the sampler works

url, name, owner_first, space = sys.argv[1:]
codec = ParamCodec(load_space(space))
sampler = DedupSampler(Dies(), codec, seed=0)
sampler.on_start = recovery.write_owner if owner_first == "1" else None
study = optuna.create_study(storage=open_storage(url), study_name=name, sampler=sampler)
study.ask(codec.distributions)
"""


def test_a_trial_has_its_owner_before_its_sampler_works_so_a_kill_then_is_resumed_at_once(tmp_path):
    """The driver's DedupSampler.on_start (recovery.write_owner) runs as Optuna starts a trial, before any sampling:
    a process that dies while its sampler works leaves a RUNNING trial with its pid, which a resumed run fails at
    once; without it the trial has no owner and waits out the two minutes' grace."""
    import subprocess
    import sys

    from kernelrules.tune import recovery

    url = f"sqlite:///{tmp_path / 'k.db'}"
    for owner_first, recovered in (("0", []), ("1", [0])):
        name = f"k{owner_first}"
        died = subprocess.run([sys.executable, "-c", _DIES_WHILE_SAMPLING, url, name, owner_first, str(SMALL)],
                              capture_output=True, text=True)
        assert died.returncode == 3, died.stderr
        study = optuna.load_study(study_name=name, storage=open_storage(url))
        trial = study.get_trials()[0]
        assert trial.state == TrialState.RUNNING and trial.params == {}
        assert ("kr_owner" in trial.user_attrs) == (owner_first == "1")
        assert recovery.recover(study, None) == recovered
