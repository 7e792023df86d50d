"""The config stage's verdicts against cross-compiles, on the architectures the H200 cannot run (issue 13).

    python benchmarks/suite_cross_arch.py [--archs sm_80,sm_86,sm_89,sm_100,sm_120] [--shape large]
                                          [--per-side 3] [--families gemm,softmax] [-j 2]
    python benchmarks/suite_cross_arch.py --table      # the markdown table from the results file

For one shape of every suite family and each architecture, on this GPU-less machine: the
config stage judges the whole tune space (the rules plus the resource model learned from
its probe compiles, as ``kernelrules prune`` does), then a seeded sample of the configs it
rejects and of those it keeps (``--per-side`` each) is cross-compiled for that architecture
and judged again on the compiled facts. The compiler is the truth for resources: a config
is *doomed* when the rules reject it on its compiled facts (over the shared memory or
tensor memory limit, a compile that fails) or its compile runs past 30 s. A config-stage
rejection of a config that is not doomed is a *false reject*; a kept config that is doomed
is a *miss*. Writes ``benchmarks/results/suite/cross_arch.json``.
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from suite_smoke import families as family_folders  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "suite" / "cross_arch.json"
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_100", "sm_120")
TIMEOUT = 30.0
#: Rules that reject a config for the registers it is predicted to spill (REG005: 320 bytes per thread or
#: more). Their claim is a heavy spill, not a failure: a compile spilling as much confirms them.
SPILL_CODES = frozenset({"REG005"})
HEAVY_SPILL_BYTES = 320


def families() -> list[str]:
    """The suite's family names (:func:`suite_smoke.families`)."""
    return [folder.name for folder in family_folders()]


def sample_problem(space_path: Path, arch_name: str, per_side: int, pool) -> list[dict]:
    """The sampled configs of one space on one architecture, each with both verdicts."""
    from kernelrules.arch import load_arch
    from kernelrules.compile.target import KernelTarget
    from kernelrules.judge.facts import compiled_facts
    from kernelrules.judge.pipeline import ConfigJudge
    from kernelrules.space import load_space

    space = load_space(space_path)
    arch = load_arch(arch_name)
    target = KernelTarget.from_space(space)
    judge = ConfigJudge(target, timeout=TIMEOUT, pool=pool)  # the pool's own (temporary) cache
    records, model = judge.judge_arch(list(space.configs()), arch, False, space.problem)
    rng = random.Random(f"{space_path.parent.name}/{arch_name}")
    rejected = [r for r in records if r.verdict.rejected]
    kept = [r for r in records if not r.verdict.rejected]
    sample = rng.sample(rejected, min(per_side, len(rejected))) + rng.sample(kept, min(per_side, len(kept)))
    results = judge.compile_many([r.verdict.config for r in sample], arch, "truth")
    rows = []
    for record, result in zip(sample, results):
        config = record.verdict.config
        facts = compiled_facts(result, arch, num_warps=config.num_warps or 4, timeout=TIMEOUT)
        truth = judge.engine.judge(config, arch, kernel=dict(target.kernel_info), facts=facts,
                                   problem=space.problem, stage="compiled")
        timed_out = result.error_kind == "timeout"
        rows.append({
            "family": space_path.parent.name, "arch": arch_name, "config": config.to_dict(),
            "space_configs": len(records), "space_rejected": len(rejected), "model": model is not None,
            "config_stage": "reject" if record.verdict.rejected else "pass",
            "config_codes": sorted({d.code for d in record.verdict.diagnostics if d.severity == "error"}),
            "compile": "ok" if result.ok else result.error_kind,
            "compiled": "reject" if truth.rejected else "pass",
            "compiled_codes": sorted({d.code for d in truth.diagnostics if d.severity == "error"}),
            "doomed": truth.rejected or timed_out,
            "predicted_shared_bytes": record.facts.get("shared_bytes"),
            "compiled_shared_bytes": facts.get("shared_bytes"),
            "predicted_spill_bytes": record.facts.get("spill_bytes_predicted"),
            "predicted_register_demand": record.facts.get("register_demand_per_thread"),
            "compiled_spill_bytes": facts.get("spill_bytes"),
            "compiled_register_demand": facts.get("register_demand_per_thread"),
            "compile_seconds": round(float(result.compile_seconds or 0.0), 2),
        })
    return rows


def run(args: argparse.Namespace) -> int:
    import triton

    from kernelrules.compile.cache import ResultCache
    from kernelrules.compile.pool import CompilePool

    picked = args.families.split(",") if args.families else families()
    rows: list[dict] = []
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp, CompilePool(max_workers=args.jobs, timeout=TIMEOUT,
                                                           cache=ResultCache(tmp)) as pool:
        for family in picked:
            space_path = REPO / "benchmarks" / "suite" / family / f"{args.shape}.tune.yaml"
            for arch_name in args.archs.split(","):
                found = sample_problem(space_path, arch_name, args.per_side, pool)
                rows.extend(found)
                print(family, arch_name, [(r["config_stage"], r["compiled"], r["compile"]) for r in found], flush=True)
    out = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, no GPU, {args.jobs} compile workers",
           "triton": triton.__version__, "kernelrules_commit": _commit(), "shape": args.shape,
           "per_side": args.per_side, "compile_timeout_s": TIMEOUT, "seconds": round(time.perf_counter() - start),
           "rows": rows}
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    print("\n".join(table(out)))
    return 0


def _commit() -> str:
    import subprocess

    return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True,
                          text=True).stdout.strip() or "unknown"


def summary(rows: list[dict]) -> dict[str, dict[str, int]]:
    """Per architecture: the sampled rejections and keeps, false rejects, misses, doomed by kind."""
    by_arch: dict[str, dict[str, int]] = collections.defaultdict(collections.Counter)
    for r in rows:
        s = by_arch[r["arch"]]
        side = "rejected" if r["config_stage"] == "reject" else "kept"
        s[side] += 1
        if side == "rejected" and not r["doomed"]:
            spill = bool(r["config_codes"]) and set(r["config_codes"]) <= SPILL_CODES
            confirmed = spill and (r.get("compiled_spill_bytes") or 0) >= HEAVY_SPILL_BYTES
            s["spill_confirmed"] += confirmed
            s["false_rejects"] += not confirmed
        if side == "kept" and r["doomed"]:
            s["misses"] += 1
        if r["doomed"]:
            s["doomed"] += 1
            s["doomed_caught"] += side == "rejected"
        if r["compile"] == "timeout":
            s["timeouts"] += 1
            s["timeouts_caught"] += side == "rejected"
    return {arch: dict(counts) for arch, counts in by_arch.items()}


def table(out: dict) -> list[str]:
    """The markdown table of docs/validation.md, from the results file."""
    lines = ["| arch | config-stage rejections sampled | doomed on their compile | predicted heavy spills "
             "that spill 320 B or more compiled | false rejects | kept sampled | doomed (misses) | "
             "compiles past 30 s (caught) |",
             "|---|---|---|---|---|---|---|---|"]
    for arch, s in sorted(summary(out["rows"]).items()):
        lines.append(f"| {arch} | {s.get('rejected', 0)} | {s.get('doomed_caught', 0)} | {s.get('spill_confirmed', 0)} | "
                     f"{s.get('false_rejects', 0)} | {s.get('kept', 0)} | {s.get('misses', 0)} | "
                     f"{s.get('timeouts', 0)} ({s.get('timeouts_caught', 0)}) |")
    families = sorted({r["family"] for r in out["rows"]})
    lines.append("")
    lines.append(f"{len(out['rows'])} configs of {len(families)} families ({out['shape']} shape), kernelrules "
                 f"{out['kernelrules_commit']}, Triton {out['triton']}, {out['machine']}, {out['date']}, "
                 f"{out['seconds']} s.")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--archs", default=",".join(ARCHS))
    parser.add_argument("--shape", default="large")
    parser.add_argument("--per-side", type=int, default=3)
    parser.add_argument("--families", default="")
    parser.add_argument("-j", "--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--table", action="store_true", help="print the table of the results file")
    args = parser.parse_args()
    if args.table:
        print("\n".join(table(json.loads(args.out.read_text()))))
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
