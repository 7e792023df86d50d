"""Is the suite's timer right for microsecond kernels? Two timers, two passes, on the GPU.

Run on the GPU machine from the repository root (kernelrules importable):

    python benchmarks/h200_timer_check.py --out DIR [--problems rope__skinny,row_sum__small] [--configs 48]

The suite's truth (``suite_sweep.py``) and ``kernelrules tune`` time a config with
``triton.testing.do_bench``: the L2 flush, a start event, the launch, an end event, per
repetition. When the kernel runs a few microseconds, the GPU can finish the flush before
the CPU has issued the launch; the start event is then stamped while the GPU waits for the
CPU, and the time includes part of the launch's CPU cost. The committed sweep shows the
symptom on the smallest problems: 20th and 80th percentiles up to 3x apart (rope__skinny).

This script times the same configs of each chosen problem with

* ``do_bench``: the sweep's call (warm-up 10 ms, 40 ms of repetitions, median);
* ``held``: the same flush, then a GPU-side wait (``torch.cuda._sleep``) long enough for
  the CPU to issue the events and the launch behind it, so the GPU never waits on the CPU
  between the start and the end event (the "blocking kernel" of nvbench and Kernel Tuner);
* ``prehold``: the wait first, then the flush, then the start event: the GPU is busy with
  the flush right up to the start event, as in do_bench, yet the CPU is far ahead of it;

and, with ``--product``, with ``kernelrules.tune.timing.measure`` as ``kernelrules tune``
calls it (25 ms warm-up, 100 ms of runs, repeated up to 3 times while the inter-quartile
spread is over 5 %) around do_bench (``measure:do_bench``), the held loop
(``measure:held``) and the prehold loop (``measure:prehold``): their attempts and wall time
say what a timer costs the tuner,
in ``--passes`` passes, each pass timing every config once with each timer in a rotated
order. A right timer gives the same ranking twice: per timer it prints the rank
correlation of pass 1 with pass 2, the median p80/p20 spread, and whether both passes agree
on the configs within 2 % of the best. ``DIR/timer-check.json`` holds every measurement.
The configs are the sweep's ``--configs``/2 fastest and as many spread evenly over the rest.

``--interpret`` checks the script on a CPU (timings meaningless; no GPU wait).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_sweep  # noqa: E402  (the suite's problems, runner and sweep timer)

HOLD_US = 150.0  # GPU-side wait before each start event: longer than a Triton launch's CPU cost


def chosen_configs(problem, count: int) -> list:
    """The sweep's ``count // 2`` fastest timed configs and ``count // 2`` spread over the rest."""
    lines = suite_sweep.read_lines(suite_sweep.RESULTS / f"{problem.name}.jsonl")
    timed = sorted((r for r in lines if r.get("kind") == "config" and (r.get("timing") or {}).get("ms")),
                   key=lambda r: r["timing"]["ms"])
    keys = [suite_sweep.config_key(r["config"]) for r in timed]
    head, rest = keys[: count // 2], keys[count // 2:]
    step = max(1, len(rest) // max(1, count - len(head)))
    wanted = head + rest[::step][: count - len(head)]
    by_key = {suite_sweep.config_key(c.to_dict()): c for c in problem.configs}
    return [by_key[k] for k in wanted if k in by_key]


def held_timer(torch, sleep_cycles: int, reps: int, before_flush: bool = False):
    """A do_bench-like timer whose start event waits behind a GPU-side sleep after the flush
    (``before_flush``: the sleep comes first, then the flush, then the start event)."""
    flush = torch.empty(256 * 1024 * 1024, dtype=torch.int8, device="cuda")

    def bench(fn) -> dict:
        for _ in range(3):
            fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            if before_flush:
                torch.cuda._sleep(sleep_cycles)
                flush.zero_()
            else:
                flush.zero_()
                torch.cuda._sleep(sleep_cycles)
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return quantiles([s.elapsed_time(e) for s, e in zip(starts, ends)])

    return bench


def prehold_runs(fn, *, warmup_ms: float = 25.0, rep_ms: float = 100.0, hold_us: float = HOLD_US) -> list[float]:
    """``kernelrules.tune.timing.held_runs`` with the hold before the flush instead of after it."""
    from kernelrules.tune import timing

    return timing.held_runs(fn, warmup_ms=warmup_ms, rep_ms=rep_ms, hold_us=hold_us, hold_before_flush=True)


def product_timer(timer: str):
    """``kernelrules.tune.timing.measure`` as the tuner calls it, with its attempts and wall time."""
    from kernelrules.tune import timing

    def bench(fn) -> dict:
        started = time.perf_counter()
        if timer == "prehold":
            m = timing.measure(fn, bench=lambda f: prehold_runs(f), timer="held")
        else:
            m = timing.measure(fn, timer=timer)
        return {"ms": m.ms, "ms_p25": m.p25, "ms_p75": m.p75, "runs": m.runs, "spread": m.spread,
                "error": m.error, "attempts": m.attempts, "noisy": m.noisy, "wall_s": time.perf_counter() - started}

    return bench


def quantiles(times: list[float]) -> dict:
    ordered = sorted(times)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))]  # noqa: E731
    return {"ms": statistics.median(ordered), "ms_p20": pick(0.2), "ms_p80": pick(0.8), "runs": len(ordered)}


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(values):
        order = sorted(range(len(values)), key=values.__getitem__)
        out = [0.0] * len(values)
        for rank, i in enumerate(order):
            out[i] = float(rank)
        return out

    ra, rb = ranks(a), ranks(b)
    n = len(a)
    if n < 3:
        return float("nan")
    ma, mb = sum(ra) / n, sum(rb) / n
    cov = sum((x - ma) * (y - mb) for x, y in zip(ra, rb))
    var = (sum((x - ma) ** 2 for x in ra) * sum((y - mb) ** 2 for y in rb)) ** 0.5
    return cov / var if var else float("nan")


def within(times: list[float], margin: float = 0.02) -> set[int]:
    best = min(times)
    return {i for i, t in enumerate(times) if t <= best * (1 + margin)}


def summary(name: str, timer: str, passes: list[list[dict]]) -> dict:
    """Agreement of pass 1 with pass 2 for one timer."""
    first, second = [m["ms"] for m in passes[0]], [m["ms"] for m in passes[1]]
    high, low = ("ms_p80", "ms_p20") if "ms_p80" in passes[0][0] else ("ms_p75", "ms_p25")
    spreads = [m[high] / m[low] for p in passes for m in p if m[low] > 0]
    near1, near2 = within(first), within(second)
    attempts = [m["attempts"] for p in passes for m in p if "attempts" in m]
    walls = [m["wall_s"] for p in passes for m in p if "wall_s" in m]
    line = {"problem": name, "timer": timer, "configs": len(first), "spearman_pass1_pass2": spearman(first, second),
            "median_p80_over_p20" if high == "ms_p80" else "median_p75_over_p25": statistics.median(spreads), "best_pass1": min(first), "best_pass2": min(second),
            "within_2pct_pass1": len(near1), "within_2pct_pass2": len(near2),
            "within_2pct_both": len(near1 & near2),
            "pass1_best_in_pass2": second[first.index(min(first))] / min(second)}
    print(f"{name:24s} {timer:16s} n={line['configs']:3d} spearman {line['spearman_pass1_pass2']:.3f} "
          f"{high[3:]}/{low[3:]} {statistics.median(spreads):.2f} best {line['best_pass1'] * 1e3:.2f}/{line['best_pass2'] * 1e3:.2f} us "
          f"within 2%: {len(near1)}/{len(near2)} both {len(near1 & near2)}; pass-1 best in pass 2 "
          f"{line['pass1_best_in_pass2']:.3f}", flush=True)
    if attempts:
        line.update(mean_attempts=statistics.mean(attempts), repeated=sum(a > 1 for a in attempts) / len(attempts),
                    median_wall_s=statistics.median(walls), total_wall_s=sum(walls))
        print(f"{'':24s} {timer:16s} attempts {line['mean_attempts']:.2f} (repeated {line['repeated']:.0%}) "
              f"wall {line['median_wall_s']:.3f} s median, {line['total_wall_s']:.1f} s in all", flush=True)
    return line


def run(args) -> None:
    if args.interpret:
        suite_sweep.INTERPRET = True
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from kernelrules.arch import load_arch
    from kernelrules.judge.engine import default_engine

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", str(out / "triton-cache"))
    suite_sweep.WORK = out / "work"
    arch, engine = load_arch(args.arch), default_engine()
    clock_hz = 1.98e9 if args.interpret else torch.cuda.get_device_properties(0).clock_rate * 1e3
    timers = {"do_bench": suite_sweep.bench}
    if not args.interpret:
        timers["held"] = held_timer(torch, int(HOLD_US * 1e-6 * clock_hz), args.reps)
        timers["prehold"] = held_timer(torch, int(HOLD_US * 1e-6 * clock_hz), args.reps, before_flush=True)
        if args.product:
            timers.update({f"measure:{t}": product_timer(t) for t in ("do_bench", "held", "prehold")})
    if args.timers:
        timers = {name: timers[name] for name in args.timers.split(",")}
    report = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "hold_us": HOLD_US, "timers": list(timers),
              "gpu": "cpu (TRITON_INTERPRET=1)" if args.interpret else torch.cuda.get_device_name(0),
              "triton": __import__("triton").__version__, "torch": torch.__version__, "problems": []}
    for name in [n for n in args.problems.split(",") if n]:
        path = suite_sweep.problems([name])[0]
        problem = suite_sweep.Problem(path, arch, engine)
        configs = chosen_configs(problem, args.configs)
        problem.start(torch)
        started = time.time()
        calls = []
        for config in configs:  # compile (Triton's JIT) and check each config once
            flat = {**problem.space.fixed, **config.to_dict()}
            problem.runner.launch(flat, problem.tensors, problem.spec.sizes)
            calls.append(problem.runner.prepare(flat, problem.tensors, problem.spec.sizes))
        suite_sweep.sync(torch)
        print(f"{name}: {len(calls)} configs compiled in {time.time() - started:.0f} s", flush=True)
        passes = {t: [[None] * len(calls) for _ in range(args.passes)] for t in timers}
        for p in range(args.passes):
            order = list(range(len(calls)))
            shift = (p * len(order)) // args.passes
            for i in order[shift:] + order[:shift]:
                for timer, bench in (timers.items() if p % 2 == 0 else reversed(list(timers.items()))):
                    passes[timer][p][i] = bench(calls[i])
        entry = {"name": name, "configs": [c.to_dict() for c in configs], "timings": passes,
                 "summaries": [summary(name, t, passes[t]) for t in timers]}
        report["problems"].append(entry)
        problem.stop(torch)
        (out / args.output_name).write_text(json.dumps(report, indent=1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--problems", default="rope__skinny,row_sum__small,pointwise__skinny,gemm__small,layernorm__large")
    parser.add_argument("--configs", type=int, default=48)
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--reps", type=int, default=200, help="repetitions per measurement of the held timer")
    parser.add_argument("--product", action="store_true", help="also time with kernelrules.tune.timing.measure")
    parser.add_argument("--timers", default="", help="only these timers (comma-separated names from the above)")
    parser.add_argument("--output-name", default="timer-check.json")
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--interpret", action="store_true")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
