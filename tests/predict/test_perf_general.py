"""The general perf model: finite, monotone where it must be, and the committed constants
reproduce benchmarks/fit_perf_general.py's numbers on a small fixture."""

from __future__ import annotations

import json
import math
import sys
from dataclasses import asdict, replace
from pathlib import Path

import pytest

from kernelrules.predict.perf_general import FITTED, Constants, estimate, estimate_any, features, seconds

REPO = Path(__file__).resolve().parents[2]
FIT = REPO / "benchmarks" / "results" / "perf_general_fit.json"

ROWS = {"M": 4096, "N": 4096, "dtype": "fp16", "grid": "cdiv(M, ROWS)", "bytes": "2 * 2 * M * N"}


def _cfg(rows=1, block=1024, warps=4, stages=1):
    return {"ROWS": rows, "BLOCK_N": block, "num_warps": warps, "num_stages": stages}


def test_finite_and_positive():
    for rows in (1, 4, 16):
        for block in (128, 1024, 4096):
            for warps in (1, 4, 16):
                e = estimate(_cfg(rows, block, warps), "h200", ROWS)
                assert math.isfinite(e.seconds) and e.seconds > 0
                assert e.programs == math.ceil(4096 / rows)


def test_more_bytes_more_time():
    small = estimate(_cfg(), "h200", ROWS).seconds
    big = estimate(_cfg(), "h200", {**ROWS, "M": 8192}).seconds
    assert big > small
    more = estimate(_cfg(), "h200", {**ROWS, "bytes": "8 * M * N"}).seconds
    assert more > small


def test_spills_and_unlaunchable_cost_more():
    base = estimate(_cfg(), "h200", ROWS, facts={"registers": 64}).seconds
    spilled = estimate(_cfg(), "h200", ROWS, facts={"registers": 400}).seconds
    assert spilled > base
    # a compile's registers stop at the limit: what ptxas spilled is charged as the demand above it
    capped = estimate(_cfg(), "h200", ROWS, facts={"registers": 255}).seconds
    compiled = estimate(_cfg(), "h200", ROWS, facts={"registers": 255, "spill_bytes": 4 * 145}).seconds
    assert compiled > capped and compiled == pytest.approx(spilled)
    no_fit = estimate(_cfg(), "h200", ROWS, facts={"shared_bytes": 10 ** 7}).seconds
    assert no_fit > 100 * base


def test_waves_quantise():
    """One more program than fills a wave costs a second wave (when each program is latency-bound)."""
    f = features(_cfg(), "h200", {**ROWS, "grid": "G", "G": 1, "bytes": "2"}, {"registers": 32})
    k = FITTED["sm_90"]
    slots = f["sms"] * f["blocks_per_sm"]
    full = seconds({**f, "programs": slots, "bytes": 2 * slots}, k)
    over = seconds({**f, "programs": slots + 1, "bytes": 2 * (slots + 1)}, k)
    assert over > 1.5 * full


def test_few_elements_per_thread_pay_the_step_overhead():
    """Same bytes, same programs: one element per thread per step issues more than eight."""
    k = replace(FITTED["sm_90"], ops_per_element=8.0, ops_per_step=32.0)
    one = estimate(_cfg(block=128, warps=4), "h200", ROWS, facts={"registers": 32}, constants=k).parts["compute"]
    eight = estimate(_cfg(block=1024, warps=4), "h200", ROWS, facts={"registers": 32}, constants=k).parts["compute"]
    assert one > 2 * eight
    flat = replace(k, ops_per_step=0.0)
    a = estimate(_cfg(block=128, warps=4), "h200", ROWS, facts={"registers": 32}, constants=flat).parts["compute"]
    b = estimate(_cfg(block=1024, warps=4), "h200", ROWS, facts={"registers": 32}, constants=flat).parts["compute"]
    assert a == pytest.approx(b, rel=0.05)


def test_a_block_wider_than_its_size_moves_only_the_filled_lanes():
    """BLOCK_N over N columns leaves N / BLOCK_N of the lanes filled: a row chunk twice the row has the bytes in
    flight of a chunk the row's width, so it is not ranked ahead for more memory-level parallelism."""
    from kernelrules.predict.problem_grid import tile_fill

    assert tile_fill({"BLOCK_N": 2048, "ROWS": 4}, {"N": 1024, "M": 256}) == 0.5
    assert tile_fill({"BLOCK_SIZE_N": 4096, "BLOCK_M": 64}, {"N": 1024, "M": 32}) == 0.125
    assert tile_fill({"BLOCK_N": 512, "XBLOCK": 1024}, {"N": 1024}) == 1.0  # narrower, or no size of its name
    rows = {"M": 256, "N": 1024, "dtype": "fp16", "grid": "M", "bytes": "2 * 2 * M * N"}
    exact = features({"BLOCK_N": 1024, "num_warps": 4}, "h200", rows, {"registers": 32})
    wider = features({"BLOCK_N": 2048, "num_warps": 4}, "h200", rows, {"registers": 32})
    assert wider["fill"] == 0.5 * exact["fill"] and wider["tile_load"] == 2 * exact["tile_load"]
    k = FITTED["sm_90"]
    latency = [seconds(f, k, parts=True)[1]["latency"] for f in (exact, wider)]
    assert latency[0] == pytest.approx(latency[1])
    unfilled = seconds({**wider, "fill": 1.0}, k, parts=True)[1]["latency"]
    assert unfilled < latency[0]  # without the fill the wider chunk would look twice as parallel


def test_resident_data_past_l2_costs_dram_rereads():
    """Short rows: the resident programs' data fit in L2; rows of 1 MiB do not, and what a
    program revisits costs DRAM time again (per byte), unless nothing is revisited."""
    k = replace(FITTED["sm_90"], l2_revisit=1.0, l2_usable_fraction=0.5)

    def dram_per_byte(n, constants):
        problem = {**ROWS, "N": n}
        return estimate(_cfg(), "h200", problem, facts={"registers": 32}, constants=constants).parts["dram"] / n

    assert dram_per_byte(262144, k) > 1.5 * dram_per_byte(1024, k)
    none = replace(k, l2_revisit=0.0)
    assert dram_per_byte(262144, none) == pytest.approx(dram_per_byte(1024, none))


def test_l2_reads_go_into_the_busy_sms_only():
    """The L2 -> SM rate is per SM: a grid of fewer programs than SMs moves its tiles through
    its own SMs only, so the same re-read bytes in half as many programs take twice as long;
    with every SM busy, the part is the bytes over all SMs' rate."""
    moe = {"T": 256, "N": 512, "K": 512, "dtype": "fp16", "flops": "2 * T * N * K", "bytes": "2 * (T * K + N * K)",
           "grid": "G"}
    cfg = {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
    f = features(cfg, "h200", {**moe, "G": 1}, {"registers": 128})
    k = FITTED["sm_90"]
    sms = int(f["sms"])

    def l2(programs):
        return seconds({**f, "programs": float(programs)}, k, parts=True)[1]["l2"]

    assert l2(sms // 4) == pytest.approx(2 * l2(sms // 2))
    every_sm = f["reread_bytes"] / (k.l2_bytes_per_clock_per_sm * f["sms"] * f["clock_hz"])
    assert l2(sms * int(f["blocks_per_sm"])) == pytest.approx(every_sm)


def test_an_attention_tile_is_the_one_the_kernel_names_not_the_resource_models_second_dot():
    """The resource model reports one of a kernel's dots: in attention P @ V, whose N is HEAD_DIM. The tile the
    estimate uses is BLOCK_M x BLOCK_N as the kernel names them, so BLOCK_N moves it (it did not: every BLOCK_N of
    a BLOCK_M tied, and the first of the ties was 27% off the best on flash_attn__skinny)."""
    problem = {"B": 1, "H": 32, "S": 4096, "D": 128, "dtype": "fp16", "grid": "cdiv(S, BLOCK_M) * B * H",
               "flops": "4 * B * H * S * S * D", "bytes": "4 * B * H * S * D * 2"}
    p_at_v = {"dot_count": 2, "dot_m": 128, "dot_n": 128, "dot_k": 32, "mma_path": "wgmma"}  # P @ V's tile

    def tile(block_n):
        config = {"HEAD_DIM": 128, "BLOCK_M": 128, "BLOCK_N": block_n, "num_warps": 8, "num_stages": 3}
        f = features(config, "h200", problem, {**p_at_v, "dot_k": block_n})
        return f["tile_load"], f["reread_bytes"]

    assert tile(32) != tile(64) != tile(128)
    assert tile(32)[0] == (128 + 32) * 128 * 2  # (BLOCK_M + BLOCK_N) x HEAD_DIM, num_stages - 1 in flight
    assert tile(32)[1] > tile(64)[1] > tile(128)[1]  # a narrower BLOCK_N re-reads more


def test_needs_a_grid():
    with pytest.raises(ValueError):
        estimate(_cfg(), "h200", {k: v for k, v in ROWS.items() if k != "grid"})


def test_problem_expressions_are_evaluated_for_the_values_they_read():
    """The grid, bytes and FLOPs are parsed once per text and evaluated once per value of the names they read:
    another value of one of them gives its own result, a name missing is still no value, an unhashable one is
    evaluated as it is."""
    from kernelrules.predict.problem_grid import exact_programs, number, programs

    assert programs("cdiv(M, ROWS)", {"M": 4096, "ROWS": 4, "N": 1}) == 1024
    assert programs("cdiv(M, ROWS)", {"M": 4096, "ROWS": 8, "N": 1}) == 512
    assert programs("cdiv(M, ROWS)", {"M": 4097, "ROWS": 8}) == 513
    assert exact_programs("cdiv(M, ROWS)", {"M": 4097, "ROWS": 8}) == pytest.approx(4097 / 8)
    assert number("M * N * 2", {"M": 3}) is None  # N missing: no value, and nothing cached for it
    assert number("M * N * 2", {"M": 3, "N": 5}) == 30.0
    assert number("M * N * 2", {"M": 3, "N": 6, "BLOCK": 64}) == 36.0  # a name it does not read changes nothing
    assert number("S[1] * 2", {"S": [1, 2, 3]}) == 4.0  # a list: not a key, evaluated directly
    assert number(7, {}) == 7.0


def test_estimate_any_keeps_the_matmul_model_for_gemms():
    from kernelrules.predict.perf_model import estimate as matmul

    cfg = {"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8, "num_warps": 4, "num_stages": 3}
    gemm = {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16", "grid": "cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)"}
    assert estimate_any(cfg, "h200", gemm) == matmul(cfg, "h200", gemm).seconds
    assert estimate_any(_cfg(), "h200", ROWS) == estimate(_cfg(), "h200", ROWS).seconds


def test_committed_constants_are_the_fit():
    data = json.loads(FIT.read_text())
    fitted = asdict(FITTED[data["arch"]])
    for name, value in data["constants"].items():
        assert fitted[name] == pytest.approx(value, rel=1e-3), name
    assert set(fitted) == set(asdict(Constants()))


@pytest.mark.parametrize("name", ["softmax__small", "rope__large", "layernorm__skinny"])
def test_committed_constants_reproduce_the_fit_scores(name, monkeypatch):
    sys.path.insert(0, str(REPO / "benchmarks"))
    import fit_perf_general as fit
    from kernelrules.arch import load_arch

    data = json.loads(FIT.read_text())
    # the committed fit was made on the truth it records (the sweep's do_bench times before the key existed)
    monkeypatch.setattr(fit.suite_truth, "SWEEP_ONLY", data.get("truth", "sweep") == "sweep")
    p = fit.load_problem(name, load_arch(data["sku"]))
    got = fit.score(p, seconds(p["f"], FITTED[data["arch"]]))
    want = data["all"][name]
    assert got["top1"] == want["top1"] and got["top5"] == want["top5"]
    assert got["spearman"] == pytest.approx(want["spearman"], abs=0.01)
