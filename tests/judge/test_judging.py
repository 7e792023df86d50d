"""The judging core's stage table: named stages, filled in order, walked in order (no compiles here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.judge.pipeline import (ArchJudging, ConfigJudge, PruneRecord, compile_stage, compiled_stage, config_stage,
                                 predict_stage, repairs_stage)
from kernelrules.compile.target import KernelTarget

REPO = Path(__file__).resolve().parents[2]
SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
             "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096, "stride_cn": 1}


@pytest.fixture
def judge():
    target = KernelTarget.for_signature(REPO / "examples" / "matmul.py", "matmul_kernel", SIGNATURE,
                                        fixed=["GROUP_SIZE_M"])
    made = ConfigJudge(target, jobs=1)
    yield made
    made.close()


def test_the_config_stage_alone_without_compile():
    stages: dict = {}
    ConfigJudge.add_stages(stages, compile=False)
    assert list(stages.items()) == [("predict", predict_stage), ("config", config_stage)]


def test_compiling_adds_compile_compiled_and_repairs_in_that_order():
    stages: dict = {}
    ConfigJudge.add_stages(stages, compile=True)
    assert list(stages) == ["predict", "config", "compile", "compiled", "repairs"]
    assert [stages[n] for n in ("compile", "compiled", "repairs")] == [compile_stage, compiled_stage, repairs_stage]


def test_judge_arch_walks_the_table_in_order_and_returns_what_the_stages_left(judge, monkeypatch):
    seen = []

    def first(_judge, judging: ArchJudging) -> None:
        seen.append(("first", len(judging.records)))
        judging.records.append("from first")

    def second(_judge, judging: ArchJudging) -> None:
        seen.append(("second", list(judging.records)))
        judging.model = "a model"

    monkeypatch.setattr(ConfigJudge, "add_stages", staticmethod(lambda stages, compile: stages.update(
        {"first": first, "second": second})))
    records, model = judge.judge_arch([KernelConfig.from_dict({"BLOCK_M": 64})], load_arch("ada"), False, {})
    assert seen == [("first", 0), ("second", ["from first"])]
    assert records == ["from first"] and model == "a model"


def test_the_config_stage_judges_every_config_and_repairs_the_rejected(judge):
    arch = load_arch("ada")
    fits = KernelConfig.from_dict({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8,
                                   "num_warps": 4, "num_stages": 2})
    bad_warps = fits.replace({"num_warps": 6})  # not a power of two: rejected without any facts
    records, model = judge.judge_arch([fits, bad_warps], arch, False, {}, probe=False)
    assert model is None
    assert all(isinstance(r, PruneRecord) and r.facts == {} and r.verdict.stage == "config" for r in records)
    assert [r.verdict.verdict for r in records] == ["pass", "reject"]
    assert records[1].verdict.repair is not None and records[1].verdict.repair.num_warps in (4, 8)


def test_the_config_stage_predicts_each_config_once(judge):
    arch = load_arch("ada")
    configs = [KernelConfig.from_dict({"BLOCK_M": m, "BLOCK_N": 64, "BLOCK_K": 32, "GROUP_SIZE_M": 8,
                                       "num_warps": 4, "num_stages": 2}) for m in (32, 64, 128)]
    asked = []

    class Model:  # stands for a learned resource model: says what it is asked
        def predict(self, config):
            asked.append(config.key())
            return {"example_fact": 1024 * config.constexprs["BLOCK_M"]}

    judging = ArchJudging(configs, arch, {}, dict(judge.target.kernel_info), False, Model())
    config_stage(judge, judging)
    assert sorted(asked) == sorted(c.key() for c in configs)  # once each: judged and recorded on the same facts
    assert [r.facts["example_fact"] for r in judging.records] == [32768, 65536, 131072]


def _labelled_compiles(judge, monkeypatch) -> list[str]:
    """The label of every batch this judge compiles (``probing ...``, ``compiling ...``), in order."""
    labels: list[str] = []
    compile_many = judge.compile_many

    def counting(configs, arch, label, *rest):
        if configs:
            labels.append(label.split()[0])
        return compile_many(configs, arch, label, *rest)

    monkeypatch.setattr(judge, "compile_many", counting)
    return labels


def _tile(m: int, n: int, k: int, stages: int) -> KernelConfig:
    return KernelConfig.from_dict({"BLOCK_M": m, "BLOCK_N": n, "BLOCK_K": k, "GROUP_SIZE_M": 8,
                                   "num_warps": 4, "num_stages": stages})


def test_deferred_probes_judge_one_config_on_its_compile_alone(judge, monkeypatch):
    labels = _labelled_compiles(judge, monkeypatch)
    fits = _tile(64, 64, 32, 2)
    records, model = judge.judge_arch([fits], load_arch("ada"), True, {}, defer_probes=True)
    assert labels == ["compiling"] and model is None  # no probe: nothing needed a prediction
    assert [(r.verdict.verdict, r.verdict.stage, r.facts["origin"]) for r in records] == [("pass", "compiled", "compiled")]
    eager, _model = judge.judge_arch([fits], load_arch("ada"), True, {})
    assert [d.code for d in records[0].verdict.diagnostics] == [d.code for d in eager[0].verdict.diagnostics]


def test_deferred_probes_are_learned_when_a_compiled_rejection_needs_a_repair(judge, monkeypatch):
    labels = _labelled_compiles(judge, monkeypatch)
    too_big = _tile(128, 128, 64, 5)  # 4 buffers x (128x64 + 64x128) x 2 bytes = 128 KiB: over Ada's 99 KiB
    records, model = judge.judge_arch([too_big], load_arch("ada"), True, {}, defer_probes=True)
    assert labels[0] == "compiling" and "probing" in labels and model is not None
    verdict = records[0].verdict
    assert verdict.verdict == "reject" and verdict.stage == "compiled"
    assert verdict.repair is not None and records[0].facts["shared_bytes"] > 101376  # the opt-in limit per block


def _limits_by_batch(judge, monkeypatch) -> dict[str, set]:
    """The time limits of the jobs the judge's pool is given, by batch label (``probing``, ``compiling``, ...)."""
    limits: dict[str, set] = {}
    batch = [""]
    compile_many, run = judge.compile_many, judge.pool.run

    def labelled(configs, arch, label, *rest):
        batch[0] = label.split()[0]
        return compile_many(configs, arch, label, *rest)

    def recording(jobs, *args, **kwargs):
        jobs = list(jobs)
        limits.setdefault(batch[0], set()).update(job.timeout for job in jobs)
        return run(jobs, *args, **kwargs)

    monkeypatch.setattr(judge, "compile_many", labelled)
    monkeypatch.setattr(judge.pool, "run", recording)
    return limits


def test_probe_compiles_get_a_shorter_time_limit_than_configs(judge, monkeypatch):
    from kernelrules.judge import pipeline

    limits = _limits_by_batch(judge, monkeypatch)
    judge.timeout = 30.0
    judge.judge_arch([_tile(128, 128, 64, 5)], load_arch("ada"), True, {}, defer_probes=True)
    assert limits.pop("probing") == {pipeline.PROBE_TIMEOUT} and pipeline.PROBE_TIMEOUT < 30.0
    assert "compiling" in limits and set().union(*limits.values()) == {30.0}  # configs, repairs: the judge's limit


def test_a_judges_lower_limit_holds_for_probes_too(monkeypatch):
    target = KernelTarget.for_signature(REPO / "examples" / "matmul.py", "matmul_kernel", SIGNATURE,
                                        fixed=["GROUP_SIZE_M"])
    judge = ConfigJudge(target, jobs=1, timeout=5.0)
    try:
        limits = _limits_by_batch(judge, monkeypatch)
        judge.judge_arch([_tile(128, 128, 64, 5)], load_arch("ada"), True, {}, defer_probes=True)
        assert limits["probing"] == {5.0} and limits["compiling"] == {5.0}
    finally:
        judge.close()


def test_deferral_is_only_for_few_configs_that_are_compiled(judge, monkeypatch):
    from kernelrules.judge import pipeline

    learned = []
    monkeypatch.setattr(judge, "learn_model", lambda candidates, arch: learned.append(len(candidates)) or "model")
    arch = load_arch("ada")
    few = [_tile(64, 64, 32, 2), _tile(32, 64, 32, 2)]
    many = few + [_tile(m, n, 32, 3) for m in (16, 128) for n in (16, 32, 128)][: pipeline.COMPILE_FIRST_CONFIGS + 1 - len(few)]
    cases = [(few, True, True, None), (few, False, True, "model"), (few, True, False, "model"),
             (many, True, True, "model")]
    for configs, compiling, defer, model in cases:
        judging = ArchJudging(list(configs), arch, {}, dict(judge.target.kernel_info), True, None,
                              compiling=compiling, defer_probes=defer)
        predict_stage(judge, judging)
        assert judging.model == model and (judging.deferred is not None) == (model is None)
    assert learned == [2, 2, len(many)]
