"""The order every ranking path gives configs (``kernelrules.predict.ranking``): distinct configs
before the ``num_stages`` twins that tie with them, in tune's seeds, the static pick's ranking and
the ``perf_model`` hook Triton sorts by."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import triton

from kernelrules.config import KernelConfig
from kernelrules.predict.ranking import distinct_first, is_tie, twin_key

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "examples"))
from standins import FakeTensor  # noqa: E402


def config(block, warps, stages):
    return KernelConfig(constexprs={"BLOCK_N": block}, num_warps=warps, num_stages=stages)


def test_num_stages_twins_with_the_same_estimate_go_after_every_distinct_config():
    scored = [(1.0, config(1024, 4, 1)), (1.0, config(1024, 4, 2)), (1.0, config(1024, 4, 3)),
              (1.5, config(2048, 8, 1)), (1.5, config(2048, 8, 2)), (2.0, config(512, 4, 1)),
              (2.5, config(512, 4, 2))]  # a dot kernel's twins differ in time: they stay in place
    ordered = distinct_first(scored)
    assert [(c.constexprs["BLOCK_N"], c.num_stages) for c in ordered] == [
        (1024, 1), (2048, 1), (512, 1), (512, 2), (1024, 2), (1024, 3), (2048, 2)]
    assert distinct_first([]) == []


def test_configs_differing_in_more_than_num_stages_are_not_twins():
    scored = [(1.0, config(1024, 4, 1)), (1.0, config(1024, 8, 2)), (1.0, config(2048, 4, 1))]
    assert distinct_first(scored) == [c for _, c in scored]
    assert twin_key(config(1024, 4, 1)) == twin_key(config(1024, 4, 3)) != twin_key(config(1024, 8, 1))


def test_identity_keys_rank_plain_items_the_same_way():
    """Callers that rank many times (the suite's scoring) pass twin keys computed once."""
    configs = [config(1024, 4, 1), config(1024, 4, 2), config(2048, 4, 1)]
    keys = [twin_key(c) for c in configs]
    assert distinct_first([(1.0, 0), (1.0, 1), (1.2, 2)], identity=keys.__getitem__) == [0, 2, 1]


def test_a_tie_is_equality_up_to_rounding():
    assert is_tie(1e-5, 1e-5 * (1 + 1e-12)) and not is_tie(1e-5, 1.001e-5)


def test_the_static_pick_ranks_twins_after_distinct_configs():
    from kernelrules.adapters.static_pick import rank

    configs = [triton.Config({"BLOCK_N": 1024}, num_warps=4, num_stages=s) for s in (1, 2, 3)] + \
        [triton.Config({"BLOCK_N": 2048}, num_warps=4, num_stages=1)]

    def model(**values):  # a loop-free kernel: num_stages does not change the estimate
        return 1.0 if values["BLOCK_N"] == 1024 else 1.1

    ranked = rank(configs, {}, model=model)
    assert [c for c, _ in ranked] == [configs[0], configs[3], configs[1], configs[2]]
    assert [e for _, e in ranked] == [1.0, 1.1, 1.0, 1.0]


def test_the_perf_model_hook_raises_a_tied_twin_so_tritons_top_k_times_distinct_configs():
    """Triton's own Autotuner.prune_configs sorts by the hook's values: with three stage twins and
    one other tile, a top 2 holds both tiles, not one tile twice."""
    from softmax import softmax_kernel

    from kernelrules.adapters.triton_perf import TWIN_FACTOR, triton_perf_model

    rows, cols = 4096, 4096
    problem = {"rows": rows, "n_cols": cols, "dtype": "fp16", "grid": "rows", "bytes": "2 * rows * n_cols * 2"}
    args = {"out_ptr": FakeTensor(), "in_ptr": FakeTensor(), "in_row_stride": cols, "out_row_stride": cols,
            "n_cols": cols}
    configs = [triton.Config({"BLOCK_SIZE": 4096}, num_warps=8, num_stages=s) for s in (1, 2, 3)] + \
        [triton.Config({"BLOCK_SIZE": 4096}, num_warps=16, num_stages=1)]
    model = triton_perf_model(softmax_kernel, arch="h200", problem=lambda a: problem)
    values = [model(**args, **c.all_kwargs()) for c in configs]
    assert values[1] == values[2] == pytest.approx(values[0] * TWIN_FACTOR)
    assert values[3] < values[1]
    assert [model(**args, **c.all_kwargs()) for c in configs] == values  # the same answer when asked again
    tuned = triton.autotune(configs=configs, key=["n_cols"],
                            prune_configs_by={"perf_model": model, "top_k": 2})(softmax_kernel.fn)
    tuned.nargs = args
    assert tuned.prune_configs({}) == sorted([configs[0], configs[3]], key=lambda c: values[configs.index(c)])
