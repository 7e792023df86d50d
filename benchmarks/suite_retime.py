"""Re-time the suite's microsecond problems with the held timer: their truth without the CPU in it.

Run on the GPU machine from the repository root (kernelrules importable):

    python benchmarks/suite_retime.py --until EPOCH [--problems rope__skinny,...] [--workers 15]

The sweep (``suite_sweep.py``) timed every config with ``triton.testing.do_bench`` while 15
compile workers shared the CPU. On a kernel of a few microseconds do_bench's start event can
wait on the CPU's launch, so the sweep's ranking of those problems is partly noise
(``benchmarks/h200_timer_check.py``: pass-to-pass rank correlation 0.74-0.87). This script
times again, with :func:`kernelrules.tune.timing.held_runs` (a GPU-side hold after each L2
flush; 0.98-0.99 pass to pass), every config the sweep timed and found correct, of every
problem whose sweep best is under ``--max-best-us`` (50 us by default: 25 problems), and
times the configs within 10 % of the first pass's best a second time. The compiles (the
sweep's own jobs, by kernelrules' pool into one Triton cache) run ahead in a thread while the
GPU times the problem before.

One JSON line per config in ``WORK/<problem>.jsonl`` (``--work``, default ``.suite-work/held``;
``config``, ``passes``: each pass's median and 20th/80th percentiles in ms, ``ms``: the mean of the
pass medians), after a ``problem`` line (date, GPU, Triton, torch, the hold, the runs' budget). A
problem is written whole when it is done; a run stopped by ``--until`` resumes at the first problem
not written in ``WORK``. Each run's folder is committed as ``benchmarks/results/suite/held/<run>/``
(``suite_truth.py`` averages the runs). ``--interpret`` checks the script on
a CPU (timings meaningless).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

import suite_sweep  # noqa: E402  (the suite's problems, runner and records)
from h200_timer_check import quantiles  # noqa: E402  (median, 20th and 80th percentiles of run times)

SECOND_PASS = 1.10  # configs within 10 % of the first pass's best are timed twice
WARMUP_MS, REP_MS = 10.0, 40.0  # the sweep's do_bench budget


def sweep_timed(name: str) -> dict[str, float]:
    """Config key -> the sweep's median (ms), for the configs it timed and found correct."""
    lines = suite_sweep.read_lines(suite_sweep.RESULTS / f"{name}.jsonl")
    return {suite_sweep.config_key(r["config"]): r["timing"]["ms"] for r in lines
            if r.get("kind") == "config" and r.get("correct") and (r.get("timing") or {}).get("ms")}


def chosen_problems(names: list[str], max_best_us: float) -> list[str]:
    """The named problems, else every problem whose sweep best is under ``max_best_us``."""
    if names:
        return names
    found = []
    for path in suite_sweep.problems([]):
        name = suite_sweep.problem_name(path)
        timed = sweep_timed(name)
        if timed and min(timed.values()) * 1e3 < max_best_us:
            found.append(name)
    return found


def written(name: str, work: Path) -> bool:
    return (work / f"{name}.jsonl").exists()


def make_timer(interpret: bool):
    from kernelrules.tune.timing import held_runs, wallclock

    if interpret:
        return lambda fn: quantiles(wallclock(fn, 3))
    return lambda fn: quantiles(held_runs(fn, warmup_ms=WARMUP_MS, rep_ms=REP_MS))


def retime(problem, configs: list, timer, torch) -> list[dict]:
    """Time every config once, the near-best twice; one record per config."""
    calls, kept = [], []
    for config in configs:
        flat = {**problem.space.fixed, **config.to_dict()}
        try:
            problem.runner.launch(flat, problem.tensors, problem.spec.sizes)  # Triton's JIT loads the compiled kernel
            suite_sweep.sync(torch)
        except Exception as exc:  # noqa: BLE001 - the sweep launched it; reported, not timed
            print(f"{problem.name} {config.to_dict()}: {type(exc).__name__}: {exc}"[:300], flush=True)
            continue
        calls.append(problem.runner.prepare(flat, problem.tensors, problem.spec.sizes))
        kept.append(config)
    configs = kept
    passes = [[timer(call)] for call in calls]
    best = min(p[0]["ms"] for p in passes)
    for i, call in enumerate(calls):
        if passes[i][0]["ms"] <= best * SECOND_PASS:
            passes[i].append(timer(call))
    return [{"kind": "config", "config": c.to_dict(), "passes": p, "ms": statistics.fmean(x["ms"] for x in p)}
            for c, p in zip(configs, passes)]


def compile_ahead(pool, jobs: list, results: "queue.Queue") -> threading.Thread:
    """Drain the pool's results into ``results`` from a thread, so compiles run while the GPU times."""
    def drain() -> None:
        try:
            for job, result in pool.run(jobs):
                results.put((job, result))
        finally:
            results.put(None)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread


def run(args) -> None:
    work = Path(args.work).resolve()
    suite_sweep.WORK = work / "scratch"  # the sweep's own per-problem files (its problem lines), not ours
    if args.interpret:
        suite_sweep.INTERPRET = True
        os.environ["TRITON_INTERPRET"] = "1"
    import torch

    from kernelrules.arch import load_arch
    from kernelrules.compile.cache import ResultCache
    from kernelrules.compile.pool import CompilePool
    from kernelrules.judge.engine import default_engine
    from kernelrules.tune.timing import HOLD_US

    suite_sweep.WORK.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", str(work / "triton-cache"))
    arch, engine = load_arch(args.arch), default_engine()
    info = {**suite_sweep.run_line(torch, args), "timer": "held", "hold_us": HOLD_US, "warmup_ms": WARMUP_MS,
            "rep_ms": REP_MS, "second_pass_within": SECOND_PASS}
    todo, jobs, index = [], [], {}
    for name in chosen_problems([n for n in args.problems.split(",") if n], args.max_best_us):
        if written(name, work):
            continue
        problem = suite_sweep.Problem(suite_sweep.problems([name])[0], arch, engine)
        timed = sweep_timed(name)
        configs = [c for c in problem.configs if suite_sweep.config_key(c.to_dict()) in timed]
        configs = configs[: args.limit or None]
        todo.append((problem, configs))
        for config in configs:
            job = problem.target.job(config, arch, suite_sweep.COMPILE_TIMEOUT)
            jobs.append(job)
            index[id(job)] = name
        print(f"{name}: {len(configs)} configs to time", flush=True)
    timer, results, compiled = make_timer(args.interpret), queue.Queue(), {p.name: 0 for p, _ in todo}
    pool = CompilePool(max_workers=args.workers, timeout=suite_sweep.COMPILE_TIMEOUT,
                       cache=ResultCache(work / "krcache"), triton_cache_dir=os.environ["TRITON_CACHE_DIR"])
    started = time.time()
    with pool:
        os.environ.pop("TRITON_INTERPRET", None)
        pool.start(min(args.workers, max(1, len(jobs))))
        if args.interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        compile_ahead(pool, jobs, results)
        finished = False
        for problem, configs in todo:
            while compiled[problem.name] < len(configs) and not finished:
                item = results.get()
                if item is None:
                    finished = True
                else:
                    compiled[index[id(item[0])]] += 1
            if time.time() + args.reserve > args.until:
                print(f"deadline: stopped before {problem.name}", flush=True)
                break
            line = problem.start(torch)
            records = retime(problem, configs, timer, torch)
            problem.stop(torch)
            with open(work / f"{problem.name}.jsonl", "w") as out:
                for record in [{**info, **line}, *records]:
                    out.write(json.dumps(record) + "\n")
            best = min(r["ms"] for r in records)
            print(f"{problem.name}: {len(records)} configs timed, best {best * 1e3:.2f} us "
                  f"({time.time() - started:.0f} s)", flush=True)
            problem.out.file.close()
    print(f"done in {time.time() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=time.time() + 540, help="absolute deadline (epoch seconds)")
    parser.add_argument("--reserve", type=float, default=60.0, help="no problem starts later than this before --until")
    parser.add_argument("--problems", default="", help="comma-separated <family>__<shape> names (default: by --max-best-us)")
    parser.add_argument("--max-best-us", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--work", default=str(suite_sweep.WORK / "held"))
    parser.add_argument("--interpret", action="store_true")
    parser.add_argument("--limit", type=int, default=0, help="at most this many configs per problem (dry runs)")
    run(parser.parse_args())


if __name__ == "__main__":
    main()
