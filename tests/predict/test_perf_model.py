"""kernelrules.predict.perf_model: the analytic model's properties, Triton's calling convention, and
the documented top-k claim on the committed H200 sweep (no GPU needed)."""

from __future__ import annotations

import importlib.util
import math
import sys
import warnings
from pathlib import Path

import pytest
import triton
from hypothesis import given, settings
from hypothesis import strategies as st

from kernelrules.predict.perf_model import estimate
from kernelrules.adapters.triton_perf import NEUTRAL_ESTIMATE, triton_perf_model

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))
from matmul import matmul_kernel  # noqa: E402
from standins import FakeTensor  # noqa: E402
from standins import matmul_named_args as named_args  # noqa: E402

#: The k docs/perf-model.md claims: the fastest measured config is in the model's top 5.
DOCUMENTED_TOP_K = 5

SKUS = ("a100-80gb-sxm", "a10", "rtx3090", "rtx4090", "l4", "h100-sxm", "h200")
tiles = st.sampled_from([16, 32, 64, 128, 256])


def config(bm, bn, bk, warps=4, stages=3):
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8, "num_warps": warps, "num_stages": stages}


@pytest.fixture(scope="module", autouse=True)
def cache_dir(tmp_path_factory):
    """One fresh compile cache for the module: every probe compiles once."""
    with pytest.MonkeyPatch.context() as patch:
        path = tmp_path_factory.mktemp("cache")
        patch.setenv("KERNELRULES_CACHE_DIR", str(path))
        yield path


@pytest.fixture(scope="module")
def evaluation():
    """benchmarks/eval_perf_model.py, with the resource model learned (probe compiles) and
    the space judged for hopper."""
    spec = importlib.util.spec_from_file_location("eval_perf_model", ROOT / "benchmarks" / "eval_perf_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, kept, configs = module.judged_space()
    return module, model, kept, configs


@pytest.fixture(scope="module")
def perf_model():
    """One Triton perf_model for the example matmul on an H200, its resource model learned at the first call."""
    return triton_perf_model(matmul_kernel, arch="h200")


# -- properties of the model ---------------------------------------------------------------


@given(bm=tiles, bn=tiles, bk=tiles, warps=st.sampled_from([1, 2, 4, 8, 16]), stages=st.integers(1, 7),
       m=st.integers(1, 1 << 15), n=st.integers(1, 1 << 15), k=st.integers(1, 1 << 15), sku=st.sampled_from(SKUS),
       dtype=st.sampled_from(["fp16", "bf16", "fp32", "fp8e4nv"]))
def test_estimates_are_positive_and_finite(bm, bn, bk, warps, stages, m, n, k, sku, dtype):
    e = estimate(config(bm, bn, bk, warps, stages), sku, {"M": m, "N": n, "K": k, "dtype": dtype})
    parts = (e.seconds, e.compute_seconds, e.feed_seconds, e.memory_seconds, e.latency_seconds)
    assert all(math.isfinite(p) and p > 0 for p in parts)
    assert e.waves >= 1 and e.tiles == math.ceil(m / bm) * math.ceil(n / bn)


@given(bm=tiles, bn=tiles, bk=tiles, warps=st.sampled_from([2, 4, 8]), stages=st.integers(1, 5),
       a=st.integers(1, 16), extra=st.integers(1, 16), n=st.integers(16, 1 << 14), k=st.integers(16, 1 << 14),
       sku=st.sampled_from(SKUS))
def test_more_waves_are_never_faster(bm, bn, bk, warps, stages, a, extra, n, k, sku):
    """The same config and per-wave work (M a multiple of BLOCK_M x GROUP_SIZE_M): more waves take longer."""
    small, large = (estimate(config(bm, bn, bk, warps, stages), sku, {"M": bm * 8 * rows, "N": n, "K": k})
                    for rows in (a, a + extra))
    assert large.seconds >= small.seconds
    if large.waves > small.waves:
        assert large.seconds > small.seconds


@given(tiles_m=st.integers(1, 8), tiles_n=st.integers(1, 16), k=st.sampled_from([256, 1024, 4096]),
       sku=st.sampled_from(SKUS))
def test_a_lone_partial_wave_does_not_depend_on_how_many_blocks_an_sm_could_hold(tiles_m, tiles_n, k, sku):
    """With fewer programs than SMs, every program has an SM of its own: the occupancy the config allows
    (here set by its shared memory) changes nothing. With many waves it does."""
    def seconds(shared, m, n):
        facts = {"dot_m": 64, "dot_n": 32, "dot_k": 64, "shared_bytes": shared}
        return estimate(config(64, 32, 64, 4, 3), sku, {"M": m, "N": n, "K": k, "dtype": "fp16"}, facts=facts).seconds

    lone = (64 * tiles_m, 32 * tiles_n)  # at most 128 programs: one partial wave on every SKU but the smallest
    from kernelrules.arch import load_arch
    from kernelrules.predict.perf_model import sku_figures

    if tiles_m * tiles_n > int(sku_figures(load_arch(sku), sku)["sm_count"]):
        return
    assert seconds(16 * 1024, *lone) == seconds(96 * 1024, *lone)
    many = (64 * 64, 32 * 256)
    assert seconds(16 * 1024, *many) < seconds(96 * 1024, *many)


@given(bm=tiles, bn=tiles, bk=tiles, warps=st.sampled_from([1, 2, 4, 8]), stages=st.integers(1, 5),
       size=st.sampled_from([256, 1024, 4096]), sku=st.sampled_from(SKUS))
def test_off_the_tensor_cores_is_slower(bm, bn, bk, warps, stages, size, sku):
    """The same tile as an FMA dot (mma_path none) is slower than on the tensor cores, whenever
    every warp has whole mma.sync instructions (m16n8) of its own."""
    if bm * bn < warps * 16 * 8:
        return
    problem = {"M": size, "N": size, "K": size, "dtype": "fp16"}
    on = estimate(config(bm, bn, bk, warps, stages), sku, problem)
    off = estimate(config(bm, bn, bk, warps, stages), sku, problem, facts={"mma_path": "none"})
    assert on.mma_path in ("wgmma", "mma_sync") and off.mma_path == "none"
    assert off.seconds > on.seconds


def test_wgmma_beats_mma_sync_for_the_same_tile_on_hopper():
    problem = {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16"}
    wgmma = estimate(config(128, 128, 64), "h200", problem)
    mma_sync = estimate(config(128, 128, 64), "h200", problem, facts={"mma_path": "mma_sync"})
    assert (wgmma.mma_path, mma_sync.mma_path) == ("wgmma", "mma_sync")
    assert mma_sync.seconds > 1.2 * wgmma.seconds


def test_the_learned_resource_model_gives_the_compiled_shared_memory(evaluation):
    _module, model, _kept, _configs = evaluation
    e = estimate(config(128, 128, 64, 4, 3), "h200", {"M": 4096, "N": 4096, "K": 4096}, model=model)
    assert e.mma_path == "wgmma" and e.blocks_per_sm == 2  # 98304 B of shared memory each (compiled: the same)


def test_split_k_splits_the_k_loop_over_more_programs():
    """Split-K: a skinny output (4 tiles) over a long K leaves the SMs idle unless the K loop
    is split; the split runs s times the programs, each over K / s, and pays an atomic add."""
    base = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
    skinny = {"M": 256, "N": 256, "K": 65536, "dtype": "fp16"}
    one = estimate({**base, "SPLIT_K": 1}, "h200", skinny)
    eight = estimate({**base, "SPLIT_K": 8}, "h200", skinny)
    assert eight.tiles == 8 * one.tiles
    assert eight.seconds < one.seconds / 4
    # square and short K: the SMs are already busy; splitting only adds the atomic traffic
    square = {"M": 4096, "N": 4096, "K": 512, "dtype": "fp16"}
    assert estimate({**base, "SPLIT_K": 4}, "h200", square).seconds > estimate({**base, "SPLIT_K": 1}, "h200", square).seconds
    assert estimate(base, "h200", skinny).seconds == one.seconds  # no SPLIT_K: not split


def test_bad_inputs_raise_value_errors():
    with pytest.raises(ValueError, match="no dot tile"):
        estimate({"BLOCK_Q": 64, "num_warps": 4}, "h200", {"M": 64, "N": 64, "K": 64})
    with pytest.raises(ValueError, match="positive integers"):
        estimate(config(64, 64, 32), "h200", {"M": 0, "N": 64, "K": 64})


# -- inside Triton's autotuner -------------------------------------------------------------


def test_triton_calling_convention_and_order(perf_model):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        times = [perf_model(**named_args(), **c.all_kwargs()) for c in matmul_kernel.configs]
    assert all(isinstance(t, float) and math.isfinite(t) and t > 0 for t in times)
    over = [i for i, c in enumerate(matmul_kernel.configs) if c.kwargs["BLOCK_K"] == 128]  # 327680 B of shared memory
    assert max(times) == times[over[0]]  # the one config that cannot launch on Hopper comes last
    assert perf_model(**named_args(), **matmul_kernel.configs[0].all_kwargs()) == times[0]  # cached


def test_triton_autotuner_keeps_the_top_k(perf_model):
    """Triton's own Autotuner.prune_configs, on the CPU, with the model as perf_model."""
    tuned = triton.autotune(configs=matmul_kernel.configs, key=["M", "N", "K"],
                            prune_configs_by={"perf_model": perf_model, "top_k": 3})(matmul_kernel.fn)
    tuned.nargs = named_args()
    kept = tuned.prune_configs({})
    assert len(kept) == 3 and all(c in matmul_kernel.configs for c in kept)
    ranked = sorted(matmul_kernel.configs, key=lambda c: perf_model(**named_args(), **c.all_kwargs()))
    assert kept == ranked[:3]


def test_a_problem_with_a_grid_ranks_any_kernel_with_the_general_model():
    """perf_model=True on a kernel without M, N, K: given a grid and bytes, the general model
    (perf_general.estimate_any) ranks its configs; without them it stays neutral."""
    from softmax import softmax_kernel

    from kernelrules.predict.perf_general import estimate_any

    rows, cols = 4096, 4096
    problem = {"rows": rows, "n_cols": cols, "dtype": "fp16", "grid": "rows", "bytes": "2 * rows * n_cols * 2"}
    args = {"out_ptr": FakeTensor(), "in_ptr": FakeTensor(), "in_row_stride": cols, "out_row_stride": cols,
            "n_cols": cols}
    model = triton_perf_model(softmax_kernel, arch="h200", problem=lambda a: problem)
    got = [model(**args, **c.all_kwargs()) for c in softmax_kernel.configs]
    assert all(g > 0 for g in got) and len(set(got)) > 1
    first = softmax_kernel.configs[0]
    assert got[0] == pytest.approx(estimate_any({**first.kwargs, "num_warps": first.num_warps,
                                                 "num_stages": first.num_stages}, "h200", problem,
                                                model=next(iter(model._models.values()))))
    with pytest.warns(UserWarning, match="no integer argument named M"):
        assert triton_perf_model(softmax_kernel, arch="h200")(**args, **first.all_kwargs()) == NEUTRAL_ESTIMATE


def test_a_zero_argument_callable_binds_the_kernel_before_it_exists():
    model = triton_perf_model(lambda: tuned, arch="h200")
    tuned = matmul_kernel
    without_k = {k: v for k, v in named_args().items() if k != "K"}  # fails before any probe compile
    with pytest.warns(UserWarning, match="no integer argument named K"):
        assert model(**without_k, **matmul_kernel.configs[0].all_kwargs()) == NEUTRAL_ESTIMATE


def test_bad_input_warns_once_and_returns_the_neutral_constant():
    one = matmul_kernel.configs[0].all_kwargs()
    with pytest.warns(UserWarning, match="unknown architecture") as caught:
        model = triton_perf_model(matmul_kernel, arch="nosuch")
        assert model(**named_args(), **one) == NEUTRAL_ESTIMATE
        assert model(**named_args(), **one) == NEUTRAL_ESTIMATE
    assert len(caught) == 1
    without_m = {k: v for k, v in named_args().items() if k != "M"}
    with pytest.warns(UserWarning, match="no integer argument named M"):
        assert triton_perf_model(matmul_kernel, arch="h200")(**without_m, **one) == NEUTRAL_ESTIMATE
    with pytest.warns(UserWarning, match="not a Triton kernel"):
        assert triton_perf_model(42, arch="h200")(**named_args(), **one) == NEUTRAL_ESTIMATE


#: Junk for the problem sizes that keeps the launch signature's class (a new class means new probes).
SIZE_JUNK = st.sampled_from([None, "x", 0, -16, 128, 4096, 2.5, float("nan")])
CONFIG_JUNK = st.one_of(st.none(), st.integers(-5, 300), st.text(max_size=3), st.floats())


@settings(max_examples=60)
@given(sizes=st.dictionaries(st.sampled_from(["M", "N", "K"]), SIZE_JUNK),
       config=st.dictionaries(st.sampled_from(["BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"]),
                              CONFIG_JUNK))
def test_junk_arguments_never_raise(perf_model, sizes, config):
    junk = {**sizes, **config}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = perf_model(**{**named_args(), **junk})
    assert isinstance(result, float)


# -- the documented claim ------------------------------------------------------------------


def test_fastest_measured_config_is_in_the_documented_top_k(evaluation):
    """docs/perf-model.md: on the committed H200 sweep the fastest measured config (among those
    kernelrules keeps) is in the model's top DOCUMENTED_TOP_K."""
    module, model, kept, configs = evaluation
    measured, _references = module.measurements()
    keys = [k for k in configs if k in measured and k in kept]
    rows = {row["k"]: row for row in module.top_k(keys, module.estimates(keys, configs, model), measured)}
    assert rows[DOCUMENTED_TOP_K]["best_in"]
    assert rows[DOCUMENTED_TOP_K]["fraction"] == 1.0


def test_compiled_spills_count_like_predicted_excess_registers():
    # ptxas caps a compile's registers at the limit and spills the rest: with compiled facts the model must
    # still charge the spilled values (before, gemm__large's spilling 256x256 tiles ranked first on H200 facts)
    from kernelrules.config import KernelConfig
    from kernelrules.predict.perf_general import estimate_any

    config = KernelConfig.from_dict({"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8,
                                     "num_warps": 8, "num_stages": 3})
    problem = {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16"}
    facts = {"registers": 255, "shared_bytes": 196608, "dot_m": 256, "dot_n": 256, "dot_k": 64}
    clean = estimate_any(config, "sm_90", problem, facts=facts, sku="h200")
    spilled = estimate_any(config, "sm_90", problem, facts={**facts, "spill_bytes": 800}, sku="h200")
    assert spilled > 1.2 * clean
