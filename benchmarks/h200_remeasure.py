"""Re-measure the best configs of several search runs together, interleaved, in one process.

Run on the GPU machine from the repository root (kernelrules installed, with optuna):

    python3 benchmarks/h200_remeasure.py --out DIR --runs RUN.json [RUN.json ...] [--top 4] [--rounds 7]

Search runs made at different times disagree by a few per cent on the same config (clocks,
the GPU's state), more than the 2 % margin that ``h200_tune.py`` asks about. This script
takes the ``--top`` fastest configs of each saved run (``run-<method>-<r>.json``), adds the
problem's baseline (torch.matmul), and times them all with the same benchmark worker as
``kernelrules tune`` (do_bench, L2 flushed, spread check), ``--rounds`` times in a rotating
order, so every config is measured under the same conditions. ``DIR/remeasure.json`` holds
each config's median and its rounds; ``h200_tune.py --summarize ... --remeasured FILE``
then counts a run as within 2 % from the first trial that timed a config whose re-measured
median is within 2 % of the best re-measured one.

``--interpret --arch ampere --space tests/fixtures/tune/matmul_small.yaml`` checks the
script on a CPU (timings meaningless).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def top_configs(run_files: list[Path], top: int) -> list[dict]:
    """The ``top`` fastest distinct timed configs of each run, in first-seen order, deduplicated."""
    seen: dict[str, dict] = {}
    for path in run_files:
        run = json.loads(path.read_text())
        timed = sorted((r for r in run["records"] if r["status"] in ("better", "slower") and r.get("ms")),
                       key=lambda r: r["ms"])
        picked = 0
        for record in timed:
            key = json.dumps(record["config"], sort_keys=True)
            if picked >= top:
                break
            picked += 1
            seen.setdefault(key, {"config": record["config"], "from": []})["from"].append(
                {"method": run["method"], "repeat": run["repeat"], "search_ms": record["ms"]})
    return list(seen.values())


def start_worker(args):
    """One benchmark worker, set up as ``kernelrules tune`` sets up its own."""
    from kernelrules.arch import load_arch
    from kernelrules.space import load_space
    from kernelrules.tune.problem import load_problem
    from kernelrules.tune.worker import BenchWorker, WorkerSettings

    spec = load_problem(load_space(Path(args.space)))
    arch = load_arch(args.arch)
    settings = WorkerSettings(spec=spec, gpu=None if args.interpret else args.gpu, interpret=args.interpret,
                              triton_cache_dir=str(Path(args.out) / "triton-cache"),
                              l2_bytes=int(arch.flat().get("l2_bytes") or 0))
    worker = BenchWorker(0, settings, compile_timeout=120.0, bench_timeout=120.0)
    worker.start()
    worker.wait_ready()
    return worker, spec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--runs", nargs="+", required=True, type=Path)
    parser.add_argument("--space", default=str(REPO / "examples" / "matmul.tune.yaml"))
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--gpu", default="0")
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--interpret", action="store_true")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)

    from kernelrules.tune.final import call as _call
    from kernelrules.tune.timing import interleaved

    entries = top_configs(args.runs, args.top)
    print(f"{len(entries)} distinct configs from {len(args.runs)} runs, {args.rounds} rounds", flush=True)
    worker, spec = start_worker(args)
    requests = [("time", e["config"]) for e in entries] + [("baseline",)]
    errors: dict[int, str] = {}

    def time_one(index_request):
        index, request = index_request
        result = _call(worker, request)
        if result.get("status") != "ok":
            errors[index] = str(result.get("error"))[:200]
            return None
        return float(result["timing"]["ms"])

    started = time.time()
    try:
        # warm every config once (its compile and first launch) before the rounds that count
        for pair in enumerate(requests):
            time_one(pair)
        rounds = interleaved(list(enumerate(requests)), time_one, args.rounds)
    finally:
        worker.stop()
    for index, entry in enumerate(entries):
        times = rounds[index]
        entry.update(rounds_ms=times, ms=sorted(times)[len(times) // 2] if times else None, error=errors.get(index))
    base = rounds[len(entries)]
    baseline_ms = sorted(base)[len(base) // 2] if base else None
    best = min((e["ms"] for e in entries if e["ms"]), default=None)
    out = {"date": time.strftime("%Y-%m-%d"), "space": Path(args.space).name, "arch": args.arch,
           "interpret": args.interpret, "rounds": args.rounds, "baseline": spec.baseline, "baseline_ms": baseline_ms,
           "best_ms": best, "seconds": round(time.time() - started, 1),
           "configs": sorted(entries, key=lambda e: e["ms"] or float("inf"))}
    Path(args.out, "remeasure.json").write_text(json.dumps(out, indent=1))
    for entry in out["configs"]:
        ms = entry["ms"]
        rel = f"{ms / best:6.3f}" if ms and best else "     -"
        froms = ", ".join(f"{f['method']}:{f['search_ms']:.4f}" for f in entry["from"])
        print(f"{ms or 0:8.4f} ms  x{rel}  {json.dumps(entry['config'])}  (search: {froms})")
    if baseline_ms:
        print(f"baseline {spec.baseline}: {baseline_ms:.4f} ms")


if __name__ == "__main__":
    main()
