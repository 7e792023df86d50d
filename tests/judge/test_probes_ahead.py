"""A kernel without dots compiles its register probes beside its first probes, not in a round after them, and
learns the same resource model (CPU cross-compiles of a fixture kernel for sm_90)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kernelrules.arch import load_arch
from kernelrules.compile.target import KernelTarget
from kernelrules.config import KernelConfig
from kernelrules.judge.pipeline import ConfigJudge

KERNEL = Path(__file__).resolve().parents[1] / "fixtures" / "register_tiles.py"
SIGNATURE = {"x_ptr": "*fp16", "out_ptr": "*fp32", "M": 4096, "N": 8192, "stride": 8192}
SPACE = [KernelConfig.from_dict({"ROWS": r, "BLOCK_N": n, "num_warps": w, "num_stages": 2})
         for r in (1, 2, 4, 8) for n in (128, 512, 2048) for w in (1, 4, 8)]


def _learn(monkeypatch: pytest.MonkeyPatch, ahead: bool) -> tuple[list[list[str]], dict[str, str]]:
    """The batches the learning compiled (config keys) and every config's predictions."""
    judge = ConfigJudge(KernelTarget.for_signature(KERNEL, "row_moments_kernel", SIGNATURE), jobs=2)
    if not ahead:  # the old order: the register probes in a round of their own
        monkeypatch.setattr(judge, "register_probes_ahead", lambda candidates, probes, arch: [])
    batches: list[list[str]] = []
    compile_many = judge.compile_many

    def recording(configs, arch, label, timeout=None):
        batches.append([c.key() for c in configs])
        return compile_many(configs, arch, label, timeout)

    monkeypatch.setattr(judge, "compile_many", recording)
    try:
        arch = load_arch("sm_90")
        model = judge.model_for(SPACE, arch)
        assert model is not None and model.registers is not None
        predictions = {c.key(): json.dumps(model.predict(c), sort_keys=True, default=str) for c in SPACE}
    finally:
        judge.close()
    return batches, predictions


def test_register_probes_compile_with_the_first_probes_and_learn_the_same_model(monkeypatch):
    in_rounds, before = _learn(monkeypatch, ahead=False)
    monkeypatch.undo()
    at_once, now = _learn(monkeypatch, ahead=True)
    assert len(in_rounds) == 2 and len(at_once) == 1  # first probes, then register probes; now one batch
    assert at_once[0] == in_rounds[0] + in_rounds[1]
    assert now == before
