"""Derive the suite report, ``docs/suite.md``, from the raw results (never edited by hand).

    python benchmarks/suite_report.py            # rewrite docs/suite.md
    python benchmarks/suite_report.py --check    # exit 1 if docs/suite.md is not what the results give

Reads, for every problem of ``benchmarks/results/suite/``: the GPU truth
(``<problem>.jsonl``, from ``suite_sweep.py``), kernelrules' config-stage verdicts and
perf-model estimates (``<problem>.judge.json``, from ``suite_judge.py``), the replayed
tuners (``replay.json``, from ``suite_replay.py``) and the runs' copy bandwidth
(``runs.jsonl``). :func:`metrics` computes every published number; the test suite
re-derives the document from the same files.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))
import suite_truth  # noqa: E402  (the sweep's records, held times where re-timed)
from kernelrules.config import KernelConfig  # noqa: E402
from kernelrules.predict.ranking import distinct_first, twin_key  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "suite"
#: The folder of live `tune` runs this page reads (one series, one kernelrules commit: its README says how it ran).
LIVE_SERIES = "live-e1c7981"
#: The series judged by an interleaved re-measurement of each run's pick (benchmarks/suite_live_paired.py).
PAIRED_SERIES = "live-e1c7981"
#: Live TPE runs on the raw space (the issue's baseline), compared with LIVE_SERIES by benchmarks/suite_live_vs_tpe.py.
TPE_SERIES = "tpe-raw-e1c7981"
#: Like-for-like series (benchmarks/suite_live_pairs.sh): both sides of each problem back to back in one device call.
PAIR_SERIES = ("pairs-ad2a2a2-warm", "pairs-a639a79-warm", "pairs-46d5be1-warm-h100", "pairs-c972bf3-warm",
               "pairs-2cb2fca-warm-h100", "pairs-4f51382-warm-h100")
#: Like-for-like series on one GPU kind read as one figure, oldest first (a problem from the newest that has it).
MERGED_PAIR_SERIES = {"H100": ("pairs-2cb2fca-warm-h100", "pairs-4f51382-warm-h100")}
DOC = REPO / "docs" / "suite.md"
NEAR = (0.02, 0.05, 0.10)


def key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load(results: Path = RESULTS) -> dict:
    """Every problem's truth, judgement and the runs; the replay when there is one."""
    problems = {}
    for path in sorted(results.glob("*__*.jsonl")):
        name = path.name[: -len(".jsonl")]
        lines = read_jsonl(path)
        judge_path = results / f"{name}.judge.json"
        problems[name] = {
            "configs": suite_truth.config_records(name, results),
            "problem": next((r for r in reversed(lines) if r.get("kind") == "problem"), {}),
            "judge": json.loads(judge_path.read_text()) if judge_path.exists() else None,
        }
    runs = read_jsonl(results / "runs.jsonl") if (results / "runs.jsonl").exists() else []
    retimed: dict[str, list[dict]] = {}  # problem -> the first line of each held run
    for path in sorted((results / "held").glob("*/*__*.jsonl")):
        retimed.setdefault(path.stem, []).append(read_jsonl(path)[0])
    replay_path = results / "replay.json"
    replay = json.loads(replay_path.read_text()) if replay_path.exists() else {}
    live = {path.stem[len("live-"):]: json.loads(path.read_text()) for path in sorted((results / LIVE_SERIES).glob("live-*.json"))}
    cpu_path = results / "cpu_facts.json"
    cpu = json.loads(cpu_path.read_text()) if cpu_path.exists() else None
    cli_path = results / "cli_check.json"
    cli = json.loads(cli_path.read_text()) if cli_path.exists() else None
    return {"problems": problems, "runs": runs, "retimed": retimed, "replay": replay, "live": live, "cpu": cpu, "cli": cli}


def time_to_within(records: list[dict], target_ms: float, margin: float = 0.02) -> tuple[float | None, int]:
    """Seconds until a live run's best-so-far came within ``margin`` of ``target_ms``, and configs timed by then."""
    best, timed = None, 0
    for record in sorted(records, key=lambda r: r.get("elapsed_s") or 0):
        if record.get("status") in ("better", "slower") and record.get("ms"):
            timed += 1
            best = record["ms"] if best is None else min(best, record["ms"])
            if best <= target_ms * (1 + margin):
                return record["elapsed_s"], timed
    return None, timed


def good(record: dict) -> bool:
    """Launched, correct and timed."""
    return record["launch"].get("status") == "ok" and record.get("correct") is True and "timing" in record


def doomed(record: dict) -> bool:
    """A config that cannot serve: compile failure or timeout, launch failure, or a wrong result."""
    return (record["compile"].get("status") != "ok" or record["launch"].get("status") not in ("ok",)
            or record.get("correct") is False)


def spearman(xs: list[float], ys: list[float]) -> float | None:
    """Spearman's rank correlation (average ranks for ties)."""
    if len(xs) < 3:
        return None

    def ranks(values: list[float]) -> list[float]:
        order = sorted(range(len(values)), key=lambda i: values[i])
        out = [0.0] * len(values)
        i = 0
        while i < len(order):
            j = i
            while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
                j += 1
            for k in range(i, j + 1):
                out[order[k]] = (i + j) / 2
            i = j + 1
        return out

    rx, ry = ranks(xs), ranks(ys)
    mx, my = statistics.fmean(rx), statistics.fmean(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy) if sxx and syy else None


def metrics(name: str, data: dict, copy_tb_s: float | None, replay: dict | None = None) -> dict:
    """Every number the report publishes for one problem."""
    configs, problem, judge = data["configs"], data["problem"], data["judge"]
    verdicts = {key(r["config"]): r for r in (judge or {}).get("records", [])}
    timed = [r for r in configs if good(r)]
    best = min(r["timing"]["ms"] for r in timed) if timed else None
    m: dict = {"problem": name, "family": name.split("__")[0], "shape": name.split("__")[1],
               "configs": len(configs), "timed": len(timed), "best_ms": best,
               "best_config": min(timed, key=lambda r: r["timing"]["ms"])["config"] if timed else None}
    # the sweep's own (do_bench) best, which the live runs, timed the same way, were set against
    sweep_ms = lambda r: r["timing"].get("sweep_ms", r["timing"]["ms"])  # noqa: E731
    m["sweep_best_ms"] = min(map(sweep_ms, timed)) if timed else None
    m["sweep_best_config"] = min(timed, key=sweep_ms)["config"] if timed else None

    def config_reject(r: dict) -> bool:
        v = verdicts.get(key(r["config"]))
        return v is not None and v["verdict"] == "reject"

    def compiled_reject(r: dict) -> bool:
        return config_reject(r) or r["compile"].get("verdict") == "reject"

    m["judged"] = judge is not None and all(key(r["config"]) in verdicts for r in configs)
    # compiled facts against the launch
    launched = [r for r in configs if r["launch"].get("status") == "ok" and r["launch"].get("n_regs") is not None]
    facts = [r["compile"].get("facts", {}) for r in launched]
    m["facts_compared"] = len(launched)
    m["shared_equal"] = sum(r["launch"]["shared"] == f.get("shared_bytes") for r, f in zip(launched, facts))
    m["registers_equal"] = sum(r["launch"]["n_regs"] == f.get("registers") for r, f in zip(launched, facts))
    m["spills_equal"] = sum(4 * r["launch"]["n_spills"] == f.get("spill_bytes") for r, f in zip(launched, facts))
    m["jit_cache_hits"] = sum(r["launch"].get("triton_cache_hit") is True for r in configs)
    m["launches"] = sum(r["launch"].get("status") == "ok" for r in configs)
    # doomed configs
    dead = [r for r in configs if doomed(r)]
    m["doomed"] = len(dead)
    m["doomed_kinds"] = _count(_doom_kind(r) for r in dead)
    m["doomed_caught_config"] = sum(config_reject(r) for r in dead)
    m["doomed_caught_compiled"] = sum(compiled_reject(r) for r in dead)
    m["max_compile_s"] = max((r["compile"].get("seconds", 0.0) for r in configs), default=0.0)
    # useful configs lost
    for near in NEAR:
        pct = int(near * 100)
        within = [r for r in timed if r["timing"]["ms"] <= best * (1 + near)] if best else []
        m[f"within_{pct}"] = len(within)
        m[f"lost_{pct}_config"] = sum(config_reject(r) for r in within)
        m[f"lost_{pct}_compiled"] = sum(compiled_reject(r) for r in within)
    kept = [r["timing"]["ms"] for r in timed if not config_reject(r)]
    kept_compiled = [r["timing"]["ms"] for r in timed if not compiled_reject(r)]
    m["regret_config"] = (min(kept) / best - 1) if kept and best else None
    m["regret_compiled"] = (min(kept_compiled) / best - 1) if kept_compiled and best else None
    m["rejected_config"] = sum(config_reject(r) for r in configs)
    m["rejected_compiled"] = sum(compiled_reject(r) for r in configs)
    # spills: the register pressure the config stage should see
    spilling = [r for r in timed if r["compile"].get("facts", {}).get("spill_bytes", 0) > 0]
    m["spilling"] = len(spilling)
    m["spilling_rejected_config"] = sum(config_reject(r) for r in spilling)
    m["spilling_median_slowdown"] = (statistics.median(r["timing"]["ms"] / best for r in spilling)
                                     if spilling and best else None)
    # the perf model
    ranked = [(verdicts[key(r["config"])]["perf_model_s"], r) for r in timed
              if key(r["config"]) in verdicts and verdicts[key(r["config"])].get("perf_model_s") is not None]
    m["perf_model_ranked"] = len(ranked)
    if ranked and best:
        by_estimate = sorted((p for p in ranked if not config_reject(p[1])), key=lambda p: p[0])
        # the tools' order: a num_stages twin with the same estimate after every distinct config
        eligible = distinct_first([(p[0], p) for p in by_estimate],
                                  identity=lambda p: twin_key(KernelConfig.from_dict(p[1]["config"])))
        m["perf_top1_within_2"] = bool(eligible) and eligible[0][1]["timing"]["ms"] <= best * 1.02
        m["perf_top5_within_2"] = any(r["timing"]["ms"] <= best * 1.02 for _, r in eligible[:5])
        m["perf_top1_vs_best"] = eligible[0][1]["timing"]["ms"] / best - 1 if eligible else None
        m["spearman"] = spearman([p[0] for p in ranked], [p[1]["timing"]["ms"] for p in ranked])
    # the winner against the baseline and the copy
    baseline = (problem.get("baseline_ms") or {}).get("ms")
    m["baseline_ms"] = baseline
    # both timed by do_bench in the sweep (a re-timed problem's held times are not set against a do_bench baseline)
    m["speedup_vs_baseline"] = baseline / m["sweep_best_ms"] if baseline and m["sweep_best_ms"] else None
    swept = m["sweep_best_ms"]  # the copy, too, was timed by the sweep's do_bench
    if swept and problem.get("flops"):
        m["tflops"] = problem["flops"] / (swept * 1e-3) / 1e12
    if swept and problem.get("bytes") and not problem.get("flops"):
        m["tb_per_s"] = problem["bytes"] / (swept * 1e-3) / 1e12
        m["copy_fraction"] = m["tb_per_s"] / copy_tb_s if copy_tb_s else None
    if replay:
        m["replay"] = replay
    return m


def _doom_kind(record: dict) -> str:
    if record["compile"].get("status") != "ok":
        return f"compile {record['compile'].get('status')}"
    if record["launch"].get("status") != "ok":
        return str(record["launch"].get("status"))
    return "wrong result"


def _count(items) -> dict:
    out: dict = {}
    for item in items:
        out[item] = out.get(item, 0) + 1
    return dict(sorted(out.items()))


def all_metrics(loaded: dict) -> list[dict]:
    copies = [r["copy_tb_per_s"] for r in loaded["runs"] if r.get("copy_tb_per_s")]
    copy = statistics.median(copies) if copies else None
    return [metrics(name, data, copy, loaded["replay"].get("problems", {}).get(name))
            for name, data in loaded["problems"].items()]


# --------------------------------------------------------------------------- rendering


def _pct(x: float | None, digits: int = 1) -> str:
    return "–" if x is None else f"{100 * x:.{digits}f}%"


def _ms(x: float | None) -> str:
    if x is None:
        return "–"
    return f"{x * 1000:.1f} µs" if x < 1 else f"{x:.3f} ms"


def _frac(a: int, b: int) -> str:
    return f"{a}/{b}"


def _yes(x: bool | None) -> str:
    return "–" if x is None else ("yes" if x else "**no**")


def _sum(ms: list[dict], field: str) -> int:
    return sum(m.get(field) or 0 for m in ms)


def render(loaded: dict, ms: list[dict]) -> str:
    runs = loaded["runs"]
    out: list[str] = []
    w = out.append
    families = sorted({m["family"] for m in ms})
    commits = sorted({r.get("kernelrules_commit", "?") for r in runs})
    judges = sorted({d["judge"]["kernelrules_commit"] for d in loaded["problems"].values() if d["judge"]})
    copies = [r["copy_tb_per_s"] for r in runs if r.get("copy_tb_per_s")]
    w("# The kernel suite on an H200")
    w("")
    w("<!-- Generated by benchmarks/suite_report.py from benchmarks/results/suite/; do not edit by hand. -->")
    w("")
    w(f"{len(families)} kernel families, {len(ms)} (kernel, shape) problems, {_sum(ms, 'configs')} configs, "
      "every one compiled, launched, checked and timed on the GPU (`benchmarks/suite_sweep.py`), then set against "
      "what kernelrules says of it without a GPU. The kernels are in `benchmarks/suite/` (its README lists them); "
      "this page is derived from the raw results by `python benchmarks/suite_report.py`, and "
      "`tests/suite/test_suite.py` re-derives it.")
    w("")
    if runs:
        first = runs[0]
        w(f"- **Truth**: {first['gpu']} ({first['sms']} SMs), Triton {first['triton']}, torch {first['torch']}, "
          f"{len(runs)} sweep runs between {runs[0]['date'][:10]} and {runs[-1]['date'][:10]}, kernelrules "
          f"{', '.join(commits)}; compiles by kernelrules' pool with a {first['compile_timeout_s']:.0f} s cap, "
          "launches through Triton's JIT, outputs poisoned with NaN and compared with a float64 reference, time "
          "the `do_bench` median with L2 flushed. A 1 GiB device-to-device copy ran at "
          f"{statistics.median(copies):.2f} TB/s (read plus write) in the same runs: the practical bandwidth limit.")
    retimed = loaded.get("retimed") or {}
    if retimed:
        lines = [line for runs in retimed.values() for line in runs]
        dates = sorted(line["date"][:10] for line in lines)
        counts = sorted({len(runs) for runs in retimed.values()})
        w(f"- **Re-timed**: the {len(retimed)} problems whose sweep best is under 50 us, timed again "
          f"{' or '.join(map(str, counts))} times on {lines[0]['gpu']} between {dates[0]} and {dates[-1]} (kernelrules "
          f"{', '.join(sorted({line['kernelrules_commit'] for line in lines}))}, `benchmarks/suite_retime.py`) with a "
          f"GPU-side hold of {lines[0]['hold_us']:.0f} us after each L2 flush, the configs within "
          f"{(lines[0]['second_pass_within'] - 1) * 100:.0f}% of the best twice: on this page their times are these "
          "(the mean over the runs of the passes' medians). do_bench's start event can wait on the CPU's launch, which a "
          "microsecond kernel's time then holds (docs/tune.md, *Honest timing*).")
    w(f"- **kernelrules' verdicts**: the config stage (rules plus the resource model learned from each kernel's IR, "
      f"no GPU: `benchmarks/suite_judge.py`, kernelrules {', '.join(judges) or '–'}) and the compiled stage (the "
      "rules on the compiled facts, recorded by the sweep; a config the config stage rejects is never compiled, "
      "so *rejected at the compiled stage* means rejected by either).")
    w("")
    _summary(w, ms, loaded.get("cpu"), loaded.get("cli"))
    _family_table(w, ms, families)
    _facts_table(w, ms)
    _pruning_table(w, ms)
    _model_table(w, ms)
    _winner_table(w, ms)
    _replay_section(w, ms, loaded["replay"])
    _live_section(w, ms, loaded.get("live", {}))
    _gaps(w, ms, loaded.get("live", {}))
    _reproduce(w)
    return "\n".join(out) + "\n"


def _reproduce(w) -> None:
    w("## Reproducing and extending")
    w("")
    w("On the GPU machine, from the repository root (the sweep is resumable: configs already in "
      "`benchmarks/results/suite/` are skipped, so it spans device sessions; `.whl` holds the wheels the machine "
      "lacks: lark, jsonschema and its needs, and for live tune runs optuna and its needs):")
    w("")
    w("```bash")
    w("bash benchmarks/suite_device.sh 540 [FAMILY,...]            # sweep until a deadline; writes $OUT/suite-work.tgz")
    w("bash benchmarks/suite_live_device.sh 540 40 rmsnorm/large=0.1335 ...  # live tune runs (40 s each) against "
      "the sweep's best; writes $OUT/suite-live.tgz")
    w("METHOD=tpe-raw bash benchmarks/suite_live_device.sh 540 120 ...  # the same with TPE on the raw space "
      "(tpe-raw-*.json; compare: benchmarks/suite_live_vs_tpe.py)")
    w("KR_COMMIT=<commit> bash benchmarks/suite_live_pairs.sh 540 40 90 ...  # both, back to back per problem in "
      "one call (like for like); writes $OUT/suite-pairs.tgz")
    w("KR_COMMIT=<commit> WARM=1 bash benchmarks/suite_live_pairs.sh 540 40 90 ...  # the same with warm workers "
      "(each run after a one-trial warm-up in the same process, as `kernelrules tune A B ...`'s later problems)")
    w("```")
    w("")
    w("Then here (no GPU):")
    w("")
    w("```bash")
    w("python benchmarks/suite_merge.py suite-work.tgz     # fold the run into benchmarks/results/suite/")
    w(f"tar xzf suite-live.tgz -C benchmarks/results/suite/{LIVE_SERIES}  # the live tune runs (a series' own folder: "
      "suite_report.py's LIVE_SERIES names the one this page reads)")
    w("python benchmarks/suite_judge.py                    # kernelrules' config-stage verdicts and perf-model estimates")
    w("python benchmarks/suite_replay.py                   # the tuners replayed on the measured costs")
    w("python benchmarks/suite_report.py                   # this page")
    w("TRITON_INTERPRET=1 python benchmarks/suite_smoke.py  # every family's correctness gate on the CPU")
    w("python benchmarks/suite_cli_check.py                # lint, prune, check-config, tune --interpret on every family")
    w("```")
    w("")
    w("A new family is a folder of `benchmarks/suite/` with a kernel, space files and a `smoke.yaml` "
      "(`benchmarks/suite/README.md`).")


def _summary(w, ms: list[dict], cpu: dict | None = None, cli: list | None = None) -> None:
    compared = _sum(ms, "facts_compared")
    w("## Summary")
    w("")
    if cli:
        failed = [f"{r['family']}: {r['command']}" for r in cli if not r["ok"]]
        kinds = sorted({r["command"].split(" ")[0] for r in cli})
        w(f"- **Every command on every kernel**: {len(cli)} runs of {', '.join(kinds)} (`tune` as `--interpret "
          f"--trials 1`) over {len({r['family'] for r in cli})} families (`benchmarks/suite_cli_check.py`): "
          + ("none printed a traceback or failed." if not failed else f"{len(failed)} failed: {'; '.join(failed)}."))
    if cpu:
        samples = cpu["samples"]
        equal = sum(bool(e["ok"]) and all(e.get("equal", {}).values()) for e in samples)
        problems = len({e["problem"] for e in samples})
        w(f"- **CPU cross-compile**: {equal} of {len(samples)} configs sampled from {problems} problems, "
          f"cross-compiled for {cpu['arch']} on a machine with no GPU ({cpu['machine']}, Triton {cpu['triton']}; "
          "`benchmarks/suite_cpu_facts.py`), have the same shared memory, registers and spill bytes as the GPU "
          "machine's compile of the same config.")
    w(f"- **Exact facts**: of {compared} launches whose kernel reported its resources, the compiled facts "
      f"kernelrules read equal the launched kernel's in shared memory {_sum(ms, 'shared_equal')}, registers "
      f"{_sum(ms, 'registers_equal')} and spill bytes {_sum(ms, 'spills_equal')} times; "
      f"{_sum(ms, 'jit_cache_hits')} of {_sum(ms, 'launches')} successful launches hit the Triton cache that "
      "kernelrules' compiles filled (the launched binary is the one kernelrules analysed).")
    doomed = _sum(ms, "doomed")
    w(f"- **Doomed configs**: {doomed} configs cannot serve (launch failures, compile failures or timeouts, wrong "
      f"results); the config stage rejects {_sum(ms, 'doomed_caught_config')} of them before any compile, the "
      f"compiled stage {_sum(ms, 'doomed_caught_compiled')}.")
    lost = _sum(ms, "lost_2_config")
    regret = [m for m in ms if (m.get("regret_config") or 0) > 0.02]
    w(f"- **Useful configs lost**: of the {_sum(ms, 'within_2')} configs within 2% of their problem's best, the "
      f"config stage rejects {lost} and the compiled stage {_sum(ms, 'lost_2_compiled')}; in {len(regret)} of "
      f"{len(ms)} problems the best config the config stage keeps is more than 2% slower than the best.")
    ranked = [m for m in ms if m.get("perf_model_ranked")]
    w(f"- **Perf model**: it ranks the configs of {len(ranked)} of {len(ms)} problems (`perf_general.estimate_any`: "
      f"the matmul model where the problem has M, N and K, the general model elsewhere); its first pick is within "
      f"2% of the best in "
      f"{sum(bool(m.get('perf_top1_within_2')) for m in ranked)} of them, its top 5 hold one in "
      f"{sum(bool(m.get('perf_top5_within_2')) for m in ranked)}.")
    picks = [m["perf_top1_vs_best"] for m in ranked if m.get("perf_top1_vs_best") is not None]
    if picks:
        geo = math.exp(sum(math.log1p(x) for x in picks) / len(picks)) - 1
        w(f"- **Static pick** (the perf model's first pick among the configs the config stage keeps: no timing at "
          f"all, the same on every run; the problem as its tune space describes it: sizes, grid, bytes): geometric-mean "
          f"regret {geo:.1%} against the best over {len(picks)} problems, median {statistics.median(picks):.1%}, "
          f"worst {max(picks):.1%} (target of issue 16: at most 3%).")
    spilling = _sum(ms, "spilling")
    w(f"- **Spills**: {spilling} timed configs spill registers; the config stage rejects "
      f"{_sum(ms, 'spilling_rejected_config')} of them.")
    faster = [m for m in ms if (m.get("speedup_vs_baseline") or 0) >= 1]
    w(f"- **Winners**: the best config beats the baseline (the PyTorch or vendor call) in {len(faster)} of "
      f"{len(ms)} problems.")
    w("")


def _family_table(w, ms: list[dict], families: list[str]) -> None:
    w("## Per family")
    w("")
    w("| family | problems | configs | doomed | caught (config / compiled) | within 2% | lost (config / compiled) "
      "| spilling (rejected) | perf model top 5 |")
    w("|---|---|---|---|---|---|---|---|---|")
    for family in families:
        f = [m for m in ms if m["family"] == family]
        ranked = [m for m in f if m.get("perf_model_ranked")]
        top5 = f"{sum(bool(m.get('perf_top5_within_2')) for m in ranked)}/{len(ranked)}" if ranked else "–"
        w(f"| {family} | {len(f)} | {_sum(f, 'configs')} | {_sum(f, 'doomed')} | "
          f"{_sum(f, 'doomed_caught_config')} / {_sum(f, 'doomed_caught_compiled')} | {_sum(f, 'within_2')} | "
          f"{_sum(f, 'lost_2_config')} / {_sum(f, 'lost_2_compiled')} | {_sum(f, 'spilling')} "
          f"({_sum(f, 'spilling_rejected_config')}) | {top5} |")
    w("")


def _facts_table(w, ms: list[dict]) -> None:
    w("## Compiled facts against the launch")
    w("")
    w("Per problem: launches compared, and how many agree in shared memory, registers and spill bytes "
      "(`metadata.shared`, `n_regs`, `4 * n_spills` of the launched kernel against kernelrules' facts of its own "
      "compile). A problem whose harness does not return the launch handle has no launch facts (–).")
    w("")
    w("| problem | configs | launches compared | shared | registers | spills | Triton cache hits | slowest compile |")
    w("|---|---|---|---|---|---|---|---|")
    for m in ms:
        n = m["facts_compared"]
        cells = [_frac(m[k], n) if n else "–" for k in ("shared_equal", "registers_equal", "spills_equal")]
        w(f"| {m['problem']} | {m['configs']} | {n or '–'} | {' | '.join(cells)} | "
          f"{_frac(m['jit_cache_hits'], m['launches'])} | {m['max_compile_s']:.1f} s |")
    w("")


def _pruning_table(w, ms: list[dict]) -> None:
    w("## Pruning: doomed configs caught, useful configs lost")
    w("")
    w("*Doomed*: what cannot serve, by kind. *Caught*: rejected at the config stage / at the compiled stage. "
      "*Within x%*: timed configs within x% of the problem's best; *lost*: those of them rejected (config / "
      "compiled stage). *Regret*: how much slower the best config the stage keeps is than the best.")
    w("")
    w("| problem | doomed | caught | rejected | within 2% (lost) | within 5% (lost) | within 10% (lost) "
      "| regret config | regret compiled |")
    w("|---|---|---|---|---|---|---|---|---|")
    for m in ms:
        kinds = ", ".join(f"{v} {k}" for k, v in m["doomed_kinds"].items()) or "0"
        near = " | ".join(f"{m[f'within_{p}']} ({m[f'lost_{p}_config']} / {m[f'lost_{p}_compiled']})"
                          for p in (2, 5, 10))
        w(f"| {m['problem']} | {kinds} | {m['doomed_caught_config']} / {m['doomed_caught_compiled']} | "
          f"{m['rejected_config']} / {m['rejected_compiled']} | {near} | {_pct(m['regret_config'])} | "
          f"{_pct(m['regret_compiled'])} |")
    w("")


def _model_table(w, ms: list[dict]) -> None:
    w("## Perf model and register pressure")
    w("")
    w("*Top 1 / top 5*: does the perf model's first pick (among configs the config stage keeps), or one of its "
      "first five, run within 2% of the best; *first pick*: how much slower it is. *Spearman*: rank correlation "
      "of its estimates with the measured times. *Spilling*: timed configs whose compile spills registers, how "
      "many the config stage rejects, and their median time over the best.")
    w("")
    w("| problem | ranked | top 1 | top 5 | first pick | Spearman | spilling | rejected | median slowdown |")
    w("|---|---|---|---|---|---|---|---|---|")
    for m in ms:
        ranked = m.get("perf_model_ranked")
        rho = m.get("spearman")
        slow = m.get("spilling_median_slowdown")
        w(f"| {m['problem']} | {ranked or 0} | {_yes(m.get('perf_top1_within_2')) if ranked else '–'} | "
          f"{_yes(m.get('perf_top5_within_2')) if ranked else '–'} | "
          f"{_pct(m.get('perf_top1_vs_best')) if ranked else '–'} | {'–' if rho is None else f'{rho:.2f}'} | "
          f"{m['spilling']} | {m['spilling_rejected_config']} | {'–' if slow is None else f'{slow:.2f}×'} |")
    w("")


def _winner_table(w, ms: list[dict]) -> None:
    w("## Winners against the baseline")
    w("")
    w("The best config's time, the baseline's (the PyTorch or vendor implementation a user would otherwise call, "
      "timed the same way in the same run), and for compute-bound problems the TFLOP/s, for memory-bound ones "
      "the bandwidth (fewest bytes a launch must move over its time) and its share of the copy. Every time in this "
      "table is the sweep's `do_bench` median, the timer of the baseline and the copy, also for the re-timed problems.")
    w("")
    w("| problem | configs timed | best | baseline | speed-up | TFLOP/s | TB/s | of copy |")
    w("|---|---|---|---|---|---|---|---|")
    for m in ms:
        speed = m.get("speedup_vs_baseline")
        tf = m.get("tflops")
        tb = m.get("tb_per_s")
        w(f"| {m['problem']} | {m['timed']} | {_ms(m['sweep_best_ms'])} | {_ms(m['baseline_ms'])} | "
          f"{'–' if speed is None else f'{speed:.2f}×'} | {'–' if tf is None else f'{tf:.0f}'} | "
          f"{'–' if tb is None else f'{tb:.2f}'} | {_pct(m.get('copy_fraction'), 0) if tb else '–'} |")
    w("")


def _replay_section(w, ms: list[dict], replay: dict) -> None:
    w("## Time to a config within 2% of the best (replayed)")
    w("")
    if not replay:
        w("No replay recorded yet (`python benchmarks/suite_replay.py`).")
        w("")
        return
    w(replay.get("method", ""))
    w("")
    w(_replay_truth(replay) + " The perf model's seeds rank with constants fitted on the whole suite (in sample).")
    w("")
    w("![Seconds to within 2% per problem and strategy](img/suite_replay.png)")
    w("")
    w("(`python benchmarks/plot_suite.py` draws it from the same file.)")
    w("")
    strategies = replay.get("strategies", [])
    w("| problem | " + " | ".join(strategies) + " |")
    w("|---|" + "---|" * len(strategies))
    for m in ms:
        r = m.get("replay")
        if not r:
            continue
        cells = []
        for s in strategies:
            value = r.get(s)
            cells.append("not reached" if value is None else f"{value:.1f} s")
        w(f"| {m['problem']} | " + " | ".join(cells) + " |")
    w("")
    for line in replay.get("summary", []):
        w(f"- {line}")
    w("")


def _replay_truth(replay: dict) -> str:
    """The sentence that says which times the replay ran on (``replay.json``'s ``truth``)."""
    if replay.get("truth", "sweep") == "sweep":
        return ("The replay ran on the sweep's `do_bench` times (`benchmarks/suite_replay.py --sweep-truth`), "
                "not on the re-timed microsecond problems' times.")
    untimed = replay.get("untimed_configs")
    coverage = ("every config the sweep timed was re-timed" if untimed == 0 else
                f"{untimed} configs the sweep timed were not re-timed: each costs its compile and the timing's "
                "fixed cost and never counts as within 2%")
    return ("Run times, and the best the 2% band is measured from, are this page's truth (`benchmarks/suite_truth.py`): "
            "the held re-timing for the re-timed problems, the sweep's `do_bench` elsewhere; compile times, launch "
            f"failures and correctness are the sweep's; {coverage}.")


def live_rows(ms: list[dict], live: dict) -> list[dict]:
    """Per live run: the time to within 2% of the sweep's best, against the replay's median."""
    by_name = {m["problem"]: m for m in ms}
    rows = []
    for name, run in sorted(live.items()):
        m = by_name.get(name)
        if not m or not m["sweep_best_ms"]:
            continue
        seconds, timed = time_to_within(run["records"], m["sweep_best_ms"])
        funnel = run["summary"].get("funnel", {})
        first = min((r["elapsed_s"] for r in run["records"] if r.get("status") in ("better", "slower")
                     and r.get("elapsed_s") is not None), default=None)
        sweep_best = key(m["sweep_best_config"]) if m.get("sweep_best_config") else None
        fastest = min(sweep_best_timings(run, sweep_best), default=None)
        ratio = fastest / m["sweep_best_ms"] if fastest else None
        # The same band around the sweep's best config as this run timed it, where that was slower than in the
        # sweep: the sweep ran on another machine and day, so its absolute time may be out of reach here.
        in_run_s, _ = time_to_within(run["records"], m["sweep_best_ms"] * max(1.0, ratio or 1.0))
        rows.append({"problem": name, "seconds": seconds, "timed": timed, "budget_s": run.get("wall_s"),
                     "sweep_best_again": ratio, "seconds_in_run": in_run_s,
                     "first_timed_s": first, "commit": run.get("kernelrules_commit"), "date": run.get("date"),
                     "replay": (m.get("replay") or {}).get("kernelrules"), "proposals": funnel.get("trials"),
                     "duplicates": funnel.get("duplicates"), "configs_timed": funnel.get("timed")})
    return rows


def sweep_best_timings(run: dict, sweep_best: str | None) -> list[float]:
    """Every time a live run measured the sweep's best config: as one of its trials, and in the rounds
    that re-measured it alone after the budget (``timed_config.rounds_ms``, else its ``final_ms``).
    The report reads the fastest: on a kernel of a few microseconds noise only adds time (single
    rounds 5x slow were seen), so the first or the median timing would widen the band."""
    timings = [r["ms"] for r in run["records"] if r.get("ms") and key(r.get("config") or {}) == sweep_best]
    alone = run.get("timed_config") or {}
    if sweep_best is not None and key(alone.get("config") or {}) == sweep_best:
        timings += alone.get("rounds_ms") or ([alone["final_ms"]] if alone.get("final_ms") else [])
    return timings


def _live_section(w, ms: list[dict], live: dict) -> None:
    rows = live_rows(ms, live)
    if not rows:
        return
    w("## Live `kernelrules tune` runs on the H200")
    w("")
    w("`benchmarks/suite_live_tune.sh` (`h200_tune.py --methods kernelrules`, seed 0, a time budget, the whole "
      "tune as shipped: compile pool, benchmark worker, final re-measurement), set against the replay's median. "
      "*Within 2%*: when the run's best-so-far first came within 2% of the sweep's best (its own timings).")
    w("")
    commits = sorted({r["commit"] or "unknown" for r in rows})
    dates = sorted({(r["date"] or "")[:10] for r in rows if r["date"]})
    w(f"Runs: {len(rows)}, kernelrules {', '.join(commits)}" + (f", {', '.join(dates)}" if dates else "") + ".")
    w("")
    w("*Sweep's best, timed again*: the fastest time this run measured for the sweep's best config (as one of its "
      "trials, or in the rounds that re-measured it alone after the budget, `timed_config.rounds_ms`; on a kernel of "
      "a few microseconds noise only adds time), over its sweep time (the two runs were on different machines and "
      "days: above 1.02 the 2% band could not be reached with that config).")
    w("")
    w("*Within 2% of it as timed here*: the same band around the sweep's best config's time in this run, where the "
      "run timed it slower than the sweep did (else the sweep's time).")
    w("")
    w("| problem | first config timed | within 2% after | configs timed by then | replay | configs timed in the run "
      "| proposals (duplicates) | sweep's best, timed again | within 2% of it as timed here |")
    w("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        seconds = "not reached" if r["seconds"] is None else f"{r['seconds']:.1f} s"
        replay = "not reached" if r["replay"] is None else f"{r['replay']:.1f} s"
        first = "–" if r["first_timed_s"] is None else f"{r['first_timed_s']:.1f} s"
        again = "–" if r["sweep_best_again"] is None else f"{r['sweep_best_again']:.2f}×"
        in_run = "not reached" if r["seconds_in_run"] is None else f"{r['seconds_in_run']:.1f} s"
        w(f"| {r['problem']} | {first} | {seconds} | {r['timed']} | {replay} | {r['configs_timed']} | "
          f"{r['proposals']} ({r['duplicates']}) | {again} | {in_run} |")
    w("")
    for line in live_summary(rows):
        w(f"- {line}")
    w("")
    _paired_section(w)


def _paired_section(w) -> None:
    """The newer live series, whose runs also time their pick beside the sweep's best, interleaved."""
    import suite_live_paired

    rows = suite_live_paired.rows_of(Path(__file__).resolve().parent / "results" / "suite" / PAIRED_SERIES)
    if not rows:
        return
    commits = sorted({r["commit"] or "unknown" for r in rows})
    so_far = " so far" if len(rows) < 43 else ""
    w(f"### Judged by an interleaved re-measurement (`{PAIRED_SERIES}`: {len(rows)} of 43 problems{so_far})")
    w("")
    w("A microsecond kernel's timing moves by 5-10% between do_bench calls, more than the 2% band, so comparing a "
      "run's single timings with the best round of the reference measures the noise as much as the search. In "
      f"this series (kernelrules {', '.join(commits)}, the same budget and seed), each run also times its final "
      "pick and the sweep's best config together after the budget, 7 interleaved rounds "
      "(`h200_tune.time_pair`): the pick is within 2% when its median is at most 1.02 times the reference's; "
      "*pick first timed* is when the run first timed it. `python benchmarks/suite_live_paired.py "
      f"benchmarks/results/suite/{PAIRED_SERIES}`; the series' README says how to continue it.")
    w("")
    w(suite_live_paired.markdown(rows))
    w("")
    _tpe_section(w)
    for series in PAIR_SERIES:
        _pairs_section(w, series)
    for gpu, folders in MERGED_PAIR_SERIES.items():
        _merged_pairs_section(w, gpu, folders)


def _pairs_section(w, series: str) -> None:
    """A like-for-like series: kernelrules and TPE on the raw space, each problem's two runs in one device call."""
    import suite_live_vs_tpe as vs

    folder = RESULTS / series
    live, tpe = vs.load(folder, "live-"), vs.load(folder, "tpe-raw-")
    rows = vs.compare(live, tpe)
    if not rows:
        return
    warm = all(run.get("warm") for run in [*live.values(), *tpe.values()])
    stopped = all(run.get("reference_before") for run in [*live.values(), *tpe.values()])
    commits = sorted({run.get("kernelrules_commit") or "unknown" for run in [*live.values(), *tpe.values()]})
    devices = sorted({((run.get("summary") or {}).get("final") or {}).get("device") or "a GPU not recorded"
                      for run in [*live.values(), *tpe.values()]})
    w(f"### Like for like{', warm' if warm else ''} (`{series}`: {len(rows)} of 43 problems)")
    w("")
    w(f"Both sides of each problem back to back in one device call, on one machine ({' and '.join(devices)}; "
      f"kernelrules {', '.join(commits)}; `benchmarks/suite_live_pairs.sh`, the series' README gives the call)"
      + (": every run warm, after a one-trial warm-up run of the same space in the same process (`h200_tune.py "
         "--warm`), as the later problems of `kernelrules tune A B ...` find the benchmark worker and the compile "
         "workers; the measured run's caches are empty" if warm else "")
      + ("; every run stopped once within 2% of the sweep's best config as timed just before it (`STOP=0.02`: "
         "`h200_tune.py --stop-within`), the reference its time to 2% is read against" if stopped else "")
      + f". The same criterion as above. `python benchmarks/suite_live_vs_tpe.py benchmarks/results/suite/{series} "
      f"benchmarks/results/suite/{series} --table`.")
    w("")
    w(vs.table(rows))
    w("")
    _series_ratio(w, rows)


def _merged_pairs_section(w, gpu: str, series: tuple[str, ...]) -> None:
    """One figure over like-for-like series run on one GPU kind at different commits: each problem from the newest
    series with both its runs (:func:`suite_live_vs_tpe.load_pairs`), never two GPU kinds in one figure."""
    import suite_live_vs_tpe as vs

    live, tpe, lines = vs.load_pairs([RESULTS / name for name in series])
    rows = vs.compare(live, tpe)
    if not rows:
        return
    w(f"### Over the like-for-like series on the {gpu} ({len(rows)} of 43 problems)")
    w("")
    w("Each problem from the newest of these series that ran it (`python benchmarks/suite_live_vs_tpe.py --pairs "
      + " ".join(f"benchmarks/results/suite/{name}" for name in series) + "`); each ratio is like for like, "
      "the problems ran at different commits:")
    w("")
    for line in lines:
        w(f"- `{Path(line.split(':', 1)[0]).name}`:{line.split(':', 1)[1]}")
    w("")
    _series_ratio(w, rows)
    w(f"Per kernel family (`--by-family`), kernelrules' time to 2% against TPE's on the {gpu}:")
    w("")
    for line in vs.family_lines(rows):
        w(f"- {line}")
    w("")


def _series_ratio(w, rows: list[dict]) -> None:
    """A series' geometric-mean line (:func:`_ratio_line`), with its families and whether it covers the suite; and
    kernelrules' own seconds to 2% (:func:`suite_live_vs_tpe.seconds_line`)."""
    import suite_live_vs_tpe as vs

    s = vs.summary(rows)
    families = len({r["problem"].split("__")[0] for r in rows})
    line = _ratio_line(s, f", {families} families{': not yet the suite' if len(rows) < 43 else ''};", "")
    if line:
        w(line)
    if s["kernelrules_slowest"]:
        w(f"- {vs.seconds_line(s)}.")
    w("")


def _ratio_line(s: dict, scope: str, tail: str) -> str | None:
    """The geometric-mean line of a comparison with TPE (``s``: :func:`suite_live_vs_tpe.summary`); None without a
    ratio. ``scope`` follows the problem count, ``tail`` the count of 5x problems."""
    if not s["geomean_ratio"]:
        return None
    bound = ">= " if s["lower_bound"] else ""
    return (f"- kernelrules reached the 2% band {bound}{s['geomean_ratio']:.1f}x sooner than TPE (geometric mean over "
            f"{s['with_ratio']} problems{scope} at least 5x sooner in {s['at_least_5x']}{tail}).")


def _tpe_section(w) -> None:
    """Live TPE on the raw space against the live kernelrules runs: seconds to the 2% band, per problem."""
    import suite_live_vs_tpe as vs

    tpe = vs.load(RESULTS / TPE_SERIES, "tpe-raw-")
    if not tpe:
        return
    rows = vs.compare(vs.load(RESULTS / LIVE_SERIES, "live-"), tpe)
    s = vs.summary(rows)
    commits = sorted({run.get("kernelrules_commit") or "unknown" for run in tpe.values()})
    so_far = " so far" if len(rows) < 43 else ""
    w(f"### Against live TPE on the raw space (`{TPE_SERIES}`: {len(rows)} of 43 problems{so_far})")
    w("")
    w(f"TPE searches the raw space (no rules, no perf-model seeds) with the same harness, code (kernelrules "
      f"{', '.join(commits)}) and seed as `{LIVE_SERIES}`, in its own device calls (not the same calls as the "
      "kernelrules runs; the series' README gives its budget and calls). Both sides by single "
      "timings: when the run's best-so-far first came within 2% of the sweep's best config as the same run timed "
      "it. A TPE run that never got there counts its whole run (`>=`: a lower bound). "
      f"`python benchmarks/suite_live_vs_tpe.py benchmarks/results/suite/{LIVE_SERIES} "
      f"benchmarks/results/suite/{TPE_SERIES} --table`.")
    w("")
    w(vs.table(rows))
    w("")
    line = _ratio_line(s, ";", "; issue 13's target: 5x")
    if line:
        w(line)
    for line in tpe_start_up_lines(rows):
        w(f"- {line}")
    w("")


def tpe_start_up_lines(rows: list[dict]) -> list[str]:
    """What the fixed start-up weighs in the live comparison: first timings, first-config hits, TPE's judging."""
    lines = []
    firsts = [(r["kernelrules_first_s"], r["tpe_first_s"]) for r in rows
              if r["kernelrules_first_s"] is not None and r["tpe_first_s"] is not None]
    if firsts:
        lines.append(f"Each run starts the same processes (compile workers, a benchmark worker, the study) before "
                     f"its first timing: median first timing {statistics.median(a for a, _ in firsts):.1f} s "
                     f"(kernelrules) and {statistics.median(b for _, b in firsts):.1f} s (TPE).")
    first_hits = sum(r["kernelrules_timed"] == 1 for r in rows)
    lines.append(f"kernelrules' first timed config was within 2% in {first_hits} of {len(rows)} problems: there its "
                 "time to 2% is its start-up alone, and the ratio is TPE's time over that start-up.")
    judging = [r["tpe_judging_s"] for r in rows if (r["tpe_judging_s"] or 0) > 0.05]  # later code judges nothing
    if judging:
        lines.append(f"{len(judging)} TPE runs also judged the space at the config stage before their first trial "
                     f"({min(judging):.1f}-{max(judging):.1f} s), which `--stage none` did not use (and no longer "
                     "runs): a TPE outside kernelrules would not pay it, so their times, and these ratios, would be "
                     "that much lower.")
    return lines


def live_summary(rows: list[dict]) -> list[str]:
    """The live runs against the targets: reached, geometric mean and worst time to 2%, duplicates."""
    lines = [_reached_line(rows, "seconds", "Within 2% of the sweep's best"),
             _reached_line(rows, "seconds_in_run", "Within 2% of the sweep's best config as this run timed it")]
    firsts = [r["first_timed_s"] for r in rows if r["first_timed_s"] is not None]
    if firsts:
        lines.append(f"The first config was timed {statistics.median(firsts):.1f} s after the run's start (median; "
                     "the worker processes' start, probe compiles, the study, the first compile; the run's clock "
                     "starts once the script has imported kernelrules, and at commits before 4fd2224 once it has "
                     "loaded the space and found the GPU's architecture, as in every time on this page; finding it "
                     "imported torch and set up CUDA in the driver until 9de6cd5, time these figures leave out and "
                     "a user paid: at 3f72e1d, whose clock includes it, the workers started 4.0-5.2 s into a run "
                     "on the H200, against 0.3-0.4 s at e1c7981).")
    proposals = sum(r["proposals"] or 0 for r in rows)
    duplicates = sum(r["duplicates"] or 0 for r in rows)
    lines.append(f"{duplicates} duplicate proposals in {proposals} proposals.")
    return lines


def _reached_line(rows: list[dict], field: str, label: str) -> str:
    """How many runs reached a band, and the geometric mean and slowest time over those that did."""
    reached = [r[field] for r in rows if r.get(field) is not None]
    line = f"{label} in {len(reached)} of {len(rows)} runs"
    if reached:
        geo = math.exp(sum(math.log(max(s, 1e-3)) for s in reached) / len(reached))
        line += f"; geometric mean {geo:.1f} s and slowest {max(reached):.1f} s over the runs that reached it"
    return line + "."


def _gaps(w, ms: list[dict], live: dict | None = None) -> None:
    w("## Gaps this report shows")
    w("")
    w("Derived from the tables above; the general model (resources and performance for every kernel) is where "
      "they are fixed.")
    w("")
    lost = [m for m in ms if m["lost_2_config"]]
    if lost:
        w("- **Useful configs rejected at the config stage** (within 2% of the best): " + ", ".join(
            f"{m['problem']} ({m['lost_2_config']} of {m['within_2']}, regret {_pct(m['regret_config'])})"
            for m in lost) + ".")
    missed = [m for m in ms if m["doomed"] > m["doomed_caught_config"]]
    if missed:
        w("- **Doomed configs the config stage lets through**: " + ", ".join(
            f"{m['problem']} ({m['doomed'] - m['doomed_caught_config']} of {m['doomed']})" for m in missed) + ".")
    spill = [m for m in ms if m["spilling"] > m["spilling_rejected_config"]]
    if spill:
        w(f"- **Spilling configs not seen at the config stage**: {sum(m['spilling'] - m['spilling_rejected_config'] for m in spill)}"
          f" configs in {len(spill)} problems (the config stage rejects only heavy predicted spills: REG005 for "
          "kernels without `tl.dot`, REG001/REG002 for dot accumulators; lighter ones pass or get a REG004 warning).")
    unranked = [m for m in ms if not m.get("perf_model_ranked")]
    if unranked:
        w(f"- **No perf-model ranking** for {len(unranked)} problems: "
          + ", ".join(sorted({m['family'] for m in unranked})) + ".")
    weak = [m for m in ms if m.get("perf_model_ranked") and not m.get("perf_top5_within_2")]
    if weak:
        w("- **Perf model's top 5 miss the 2% band**: " + ", ".join(
            f"{m['problem']} (first pick {_pct(m.get('perf_top1_vs_best'))} off)" for m in weak) + ".")
    dup = [r for r in live_rows(ms, live or {}) if r["proposals"] and r["duplicates"]]
    if dup:
        w("- **Duplicate proposals in the recorded live `tune` runs**: " + ", ".join(
            f"{r['problem']} ({r['duplicates']} of {r['proposals']} proposals repeated a config)" for r in dup) + ".")
    late = [r for r in live_rows(ms, live or {}) if r["seconds_in_run"] is None or r["seconds_in_run"] > 15]
    if late:
        w("- **Live `tune` runs later than 15 s to the 2% band around the sweep's best config as the run timed it** "
          "(the issue's target for the geometric mean): " + ", ".join(
            f"{r['problem']} ({'not reached' if r['seconds_in_run'] is None else format(r['seconds_in_run'], '.1f') + ' s'})"
            for r in late) + ".")
    slower = [m for m in ms if m.get("speedup_vs_baseline") is not None and m["speedup_vs_baseline"] < 1]
    if slower:
        w("- **Best config slower than the baseline**: " + ", ".join(
            f"{m['problem']} ({m['speedup_vs_baseline']:.2f}×)" for m in slower) + ".")
    w("")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with docs/suite.md instead of writing it")
    parser.add_argument("--json", help="also write every metric to this file")
    args = parser.parse_args(argv)
    loaded = load()
    ms = all_metrics(loaded)
    text = render(loaded, ms)
    if args.json:
        Path(args.json).write_text(json.dumps(ms, indent=1) + "\n")
    if args.check:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC.relative_to(REPO)} is not what the results give: run python benchmarks/suite_report.py",
                  file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC.relative_to(REPO)} ({len(ms)} problems)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
