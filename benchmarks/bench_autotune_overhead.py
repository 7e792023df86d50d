"""kernelrules.autotune's fixed overhead on this machine's CPU: pruning, the perf model and precompiling.

    python benchmarks/bench_autotune_overhead.py [--repeat 3] [--out FILE] [--before REV]

What is timed is ``tuner.prune_configs({})`` (what Triton's autotuner calls once per new
tuning key before timing anything) for ``kernelrules.autotune(perf_model=True, top_k=5)``
over the 120 configs of ``benchmarks/results/h200_autotune_configs.json`` (the example
fp16 matmul at M = N = K = 4096), judged and compiled for Hopper (``KERNELRULES_ARCH=hopper``,
sm_90 cross-compiles: no GPU needed). Stand-in tensors (a dtype and an aligned pointer)
replace the real ones; torch is imported before the clock starts, as it is in any process
that launches a kernel on torch tensors (``--no-torch`` leaves it out).

Every measurement runs in a fresh process with an empty Triton cache and an empty
kernelrules cache, so every probe and every precompile is a cold compile. Modes:

- ``shared``: ``kernelrules.autotune(perf_model=True, top_k=5)``: one compile pool and one
  set of probe compiles for the whole tuner;
- ``separate``: the same three phases through the standalone APIs (``early_prune``,
  ``triton_perf_model``, ``precompile_before_timing``), each with its own pool and its own
  probe compiles: the path ``kernelrules.autotune`` took before it shared them;
- ``before`` (with ``--before REV``): ``kernelrules.autotune`` as the commit ``REV`` of this
  repository has it (its package, rules and profiles, extracted with ``git archive``), for a
  before/after comparison in the same run;
- ``triton_serial``: the baseline: Triton's own compiler compiling the five configs the
  ``shared`` mode kept, one after another in this process, into the empty cache: what the
  autotuner pays for them without kernelrules' precompile.

The script prints each mode's median over ``--repeat`` runs, the number of compile workers
each mode started, whether every mode kept the same five configs (the verdicts must not
change), and the ratios ``separate / shared`` and ``shared / triton_serial``.
Figures are this machine's CPU, not a GPU
machine's: the worker start-up (importing Triton) and the cross-compiles are CPU work.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "benchmarks" / "results" / "h200_autotune_configs.json"
SIZE = 4096
TOP_K = 5
MODES = ("shared", "separate", "triton_serial")


class StandInTensor:
    """A dtype and a 16-byte-aligned pointer: all a launch signature and a compile need of a tensor."""

    dtype = "torch.float16"

    def data_ptr(self) -> int:
        return 1 << 20


def named_args() -> dict:
    a = StandInTensor()
    return {"a_ptr": a, "b_ptr": a, "c_ptr": a, "M": SIZE, "N": SIZE, "K": SIZE, "stride_am": SIZE, "stride_ak": 1,
            "stride_bk": SIZE, "stride_bn": 1, "stride_cm": SIZE, "stride_cn": 1}


def to_triton(config: dict):
    import triton

    meta = {k: v for k, v in config.items() if k not in ("num_warps", "num_stages")}
    return triton.Config(meta, num_warps=config["num_warps"], num_stages=config["num_stages"])


def as_dict(config) -> dict:
    return {**config.kwargs, "num_warps": config.num_warps, "num_stages": config.num_stages}


def count_spawns() -> list[int]:
    """Count the compile workers started in this process (CompilePool._spawn calls)."""
    from kernelrules.compile import pool

    counter = [0]
    original = pool.CompilePool._spawn

    def spawn(self):
        counter[0] += 1
        return original(self)

    pool.CompilePool._spawn = spawn
    return counter


def build_tuner(mode: str, fn, listed: list):
    """The tuner of a kernelrules mode."""
    import triton

    import kernelrules

    if mode in ("shared", "before"):
        return kernelrules.autotune(listed, ["M", "N", "K"], perf_model=True, top_k=TOP_K)(fn)
    from kernelrules.adapters.triton_perf import triton_perf_model
    from kernelrules.adapters.precompile import precompile_before_timing
    from kernelrules.adapters.triton_prune import early_prune

    tuner = triton.autotune(configs=listed, key=["M", "N", "K"],
                            prune_configs_by={"early_config_prune": early_prune(fn), "top_k": TOP_K})(fn)
    tuner.perf_model = triton_perf_model(tuner)
    return precompile_before_timing(tuner)


def run_mode(mode: str, kept: list[dict] | None, with_torch: bool) -> dict:
    """One measurement in this (fresh) process."""
    import warnings

    warnings.simplefilter("ignore")
    if with_torch:
        import torch  # noqa: F401 - a launching process has it already
    import triton  # noqa: F401

    sys.path.insert(0, str(REPO / "examples"))
    from matmul import matmul_kernel

    fn = matmul_kernel.fn  # the plain JITFunction under the example's own autotune list
    if mode == "triton_serial":
        return {"mode": mode, **compile_serially(fn, kept or [])}
    spawns = count_spawns()
    listed = [to_triton(c) for c in json.loads(CONFIGS.read_text())]
    tuner = build_tuner(mode, fn, listed)
    tuner.nargs = named_args()
    start = time.perf_counter()
    chosen = tuner.prune_configs({})
    seconds = time.perf_counter() - start
    return {"mode": mode, "seconds": seconds, "workers_started": spawns[0], "kept": [as_dict(c) for c in chosen]}


def compile_serially(fn, kept: list[dict]) -> dict:
    """Triton's compiler on each kept config in turn, in this process, into the (empty) Triton cache."""
    import inspect

    from kernelrules.compile.compilejob import CompileJob, compile_job
    from kernelrules.adapters.kernel_prune import launch_signature

    signature, _ = launch_signature(fn, named_args())
    options = ("num_warps", "num_stages")
    jobs = [CompileJob(path=str(Path(inspect.getsourcefile(fn.fn)).resolve()), kernel=fn.fn.__name__,
                       signature=signature, constexprs={k: v for k, v in c.items() if k not in options},
                       options={k: c[k] for k in options}, target=("cuda", 90, 32)) for c in kept]
    start = time.perf_counter()
    results = [compile_job(job, use_triton_cache=True) for job in jobs]
    return {"seconds": time.perf_counter() - start, "compiled": sum(r.ok for r in results)}


def measure(mode: str, kept: list[dict] | None, args) -> dict:
    """Run one mode in a fresh process with empty caches."""
    with tempfile.TemporaryDirectory() as triton_cache, tempfile.TemporaryDirectory() as kr_cache:
        env = dict(os.environ, TRITON_CACHE_DIR=triton_cache, KERNELRULES_CACHE_DIR=kr_cache, KERNELRULES_ARCH="hopper",
                   PYTHONUNBUFFERED="1")
        env.pop("TRITON_INTERPRET", None)
        if mode == "before":
            env["PYTHONPATH"] = os.pathsep.join(p for p in (args.before_root, env.get("PYTHONPATH")) if p)
        command = [sys.executable, __file__, "--mode", mode, "--kept", json.dumps(kept or [])]
        if args.no_torch:
            command.append("--no-torch")
        proc = subprocess.run(command, env=env, capture_output=True, text=True, timeout=args.mode_timeout,
                              cwd=tempfile.gettempdir())
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if not lines:
            raise SystemExit(f"{mode} failed:\n{proc.stderr[-3000:]}")
        return json.loads(lines[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", help="append one JSON line per measurement and one summary line")
    parser.add_argument("--before", metavar="REV", help="add the mode 'before': kernelrules.autotune as commit REV "
                                                        "has it")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--no-torch", action="store_true", help="do not import torch before timing")
    parser.add_argument("--mode-timeout", type=float, default=600.0)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--kept", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(run_mode(args.mode, json.loads(args.kept or "[]"), not args.no_torch)), flush=True)
        return

    modes = args.modes.split(",") + (["before"] if args.before else [])
    records: dict[str, list[dict]] = {m: [] for m in modes}
    kept = None
    out = open(args.out, "a") if args.out else None  # noqa: SIM115 - closed below
    before_tree = tempfile.TemporaryDirectory() if args.before else None
    try:
        if before_tree is not None:
            args.before_root = extract(args.before, Path(before_tree.name))
        for _ in range(args.repeat):
            for mode in modes:
                if mode == "triton_serial" and kept is None:
                    kept = measure("shared", None, args)["kept"]
                record = measure(mode, kept, args)
                kept = kept if kept is not None or "kept" not in record else record["kept"]
                records[mode].append(record)
                print(json.dumps({k: v for k, v in record.items() if k != "kept"}), flush=True)
                if out:
                    out.write(json.dumps(record) + "\n")
        median = {m: statistics.median(r["seconds"] for r in rs) for m, rs in records.items()}
        kept_sets = {json.dumps(r["kept"], sort_keys=True) for rs in records.values() for r in rs if "kept" in r}
        summary = {"summary": True, "repeat": args.repeat, "cpu_count": os.cpu_count(),
                   "median_seconds": {m: round(s, 2) for m, s in median.items()},
                   "workers_started": {m: rs[0].get("workers_started") for m, rs in records.items()},
                   "same_kept_configs": len(kept_sets) <= 1, "kept": kept}
        if "shared" in median and "separate" in median:
            summary["separate_over_shared"] = round(median["separate"] / median["shared"], 2)
        if args.before:
            summary["before_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.before],
                                                      capture_output=True, text=True).stdout.strip()
        if "before" in median and "shared" in median:
            summary["before_over_shared"] = round(median["before"] / median["shared"], 2)
        if "shared" in median and "triton_serial" in median:
            summary["shared_over_triton_serial"] = round(median["shared"] / median["triton_serial"], 2)
        print(json.dumps(summary), flush=True)
        if out:
            out.write(json.dumps(summary) + "\n")
    finally:
        if out:
            out.close()
        if before_tree is not None:
            before_tree.cleanup()


def extract(rev: str, into: Path) -> str:
    """The kernelrules package of commit ``rev`` laid out as installed (rules, profiles and
    analyzers inside it) under ``into``; returns the directory to put first on PYTHONPATH."""
    parts = {"kernelrules": "kernelrules", "analyzers": "kernelrules/analyzers", "rules": "kernelrules/rules",
             "arch_profiles": "kernelrules/arch_profiles"}
    raw = into / "raw"
    raw.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, *parts], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(raw)], input=archive, check=True)
    root = into / "tree"
    for source, target in parts.items():
        (root / target).parent.mkdir(parents=True, exist_ok=True)
        (raw / source).rename(root / target)
    return str(root)


if __name__ == "__main__":
    main()
