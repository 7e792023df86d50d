"""benchmarks/perf_model_fit.py's committed figures: the leave-one-family-out scores of
``estimate_any`` on the H200 suite are re-derived from the committed fold constants and
judge files (no fitting, no compiles), and the committed constants are the ones in
``kernelrules.predict.perf_general.FITTED``."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import pytest

from kernelrules.predict.perf_general import FITTED, Constants

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "benchmarks" / "results" / "perf_model_fit.json"


@pytest.fixture(scope="module")
def rederived():
    sys.path.insert(0, str(REPO / "benchmarks"))
    import perf_model_fit as fit
    from kernelrules.arch import load_arch

    data = json.loads(FIT.read_text())
    names = sorted(data["held_out"])
    problems = fit.load(names, load_arch(data["sku"]))
    folds = {fam: Constants(**values) for fam, values in data["folds"].items()}
    held = {p["name"]: fit.score(p, fit.estimates(p, folds[p["family"]])) for p in problems}
    whole = {p["name"]: fit.score(p, fit.estimates(p, FITTED[data["arch"]])) for p in problems}
    return data, problems, held, whole, fit


def test_every_problem_is_scored(rederived):
    data, problems, held, _whole, _fit = rederived
    assert len(problems) == len(data["held_out"]) == data["summary"]["held_out"]["problems"] >= 43
    assert sorted(p["name"] for p in problems if p["matmul"]) == data["matmul"]


def test_held_out_scores_reproduce(rederived):
    data, _problems, held, _whole, fit = rederived
    for name, want in data["held_out"].items():
        got = held[name]
        assert (got["top1"], got["top5"], got["top5_within_noise"]) == \
            (want["top1"], want["top5"], want["top5_within_noise"]), name
        assert got["spearman"] == pytest.approx(want["spearman"], abs=1e-3), name
        assert got["first_pick"] == pytest.approx(want["first_pick"], abs=1e-3), name
    assert fit.summarise(held) == data["summary"]["held_out"]


def test_committed_constants_reproduce_the_in_sample_figure(rederived):
    data, _problems, _held, whole, fit = rederived
    assert fit.summarise(whole) == data["summary"]["all"]


def test_one_fold_per_family_with_every_constant():
    data = json.loads(FIT.read_text())
    families = {name.split("__")[0] for name in data["held_out"]}
    assert set(data["folds"]) == families
    for values in data["folds"].values():
        assert set(values) == set(asdict(Constants()))
