"""Cross-compile a sample of every suite problem's configs on this (GPU-less) machine; compare with the truth.

    python benchmarks/suite_cpu_facts.py [--per-problem 3] [-j 2]

The sweep's compiles ran in kernelrules' pool on the GPU machine's CPUs; this script
cross-compiles a seeded sample of the same configs here, with no GPU, for sm_90, and
records whether shared memory, registers and spill bytes equal what the GPU machine's
compile reported (and so, through the sweep's launch check, what the launched kernel
had). Writes ``benchmarks/results/suite/cpu_facts.json``; ``docs/suite.md`` quotes it.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))

from suite_report import RESULTS, key, load  # noqa: E402

FIELDS = (("shared_bytes", "shared_bytes"), ("registers", "registers"), ("spill_bytes", "spill_bytes"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-problem", type=int, default=3)
    parser.add_argument("-j", "--jobs", type=int, default=2)
    args = parser.parse_args()
    import triton

    from kernelrules.arch import load_arch
    from kernelrules.judge.facts import compiled_facts
    from kernelrules.compile.pool import CompilePool
    from kernelrules.compile.target import KernelTarget
    from kernelrules.space import load_space

    arch = load_arch("h200")
    loaded = load()
    jobs, index = [], {}
    for name, data in loaded["problems"].items():
        family, shape = name.split("__")
        space = load_space(REPO / "benchmarks" / "suite" / family / f"{shape}.tune.yaml")
        target = KernelTarget(space.kernel_path, space.kernel_name, space.signature, space.kernel_info(),
                              frozenset(space.fixed))
        truth = {key(r["config"]): r for r in data["configs"] if r["compile"].get("status") == "ok"}
        configs = [c for c in space.configs() if key(c.to_dict()) in truth]
        for config in random.Random(name).sample(configs, min(args.per_problem, len(configs))):
            job = target.job(config, arch, 60.0)
            jobs.append(job)
            index[id(job)] = (name, config, truth[key(config.to_dict())])
    samples = []
    with CompilePool(max_workers=args.jobs, timeout=60.0, cache=None) as pool:
        for job, result in pool.run(jobs):
            name, config, record = index[id(job)]
            gpu_side = record["compile"]["facts"]
            entry = {"problem": name, "config": config.to_dict(), "ok": result.ok}
            if result.ok:
                here = compiled_facts(result, arch, num_warps=config.num_warps or 4)
                entry["equal"] = {field: here.get(a) == gpu_side.get(b) for field, (a, b) in zip(
                    ("shared", "registers", "spills"), FIELDS)}
            samples.append(entry)
            print(name, config, entry.get("equal"), flush=True)
    samples.sort(key=lambda e: (e["problem"], key(e["config"])))
    out = {"machine": f"{platform.machine()}, no GPU", "triton": triton.__version__, "arch": arch.name,
           "samples": samples}
    (RESULTS / "cpu_facts.json").write_text(json.dumps(out, indent=1) + "\n")
    equal = sum(all(e.get("equal", {}).values()) and e["ok"] for e in samples)
    print(f"{equal} of {len(samples)} sampled configs: CPU cross-compile equals the GPU machine's compile")
    return 0


if __name__ == "__main__":
    sys.exit(main())
