"""Seeds ranked on the config stage's facts against seeds ranked by asking the resource model again: the same?

    python benchmarks/seed_facts_check.py [--arch h200] [SPACE ...]

After the judging, ``kernelrules tune`` ranks the configs that pass the config stage with the perf model
(:func:`kernelrules.tune.options.perf_model_seeds`). It used to ask the resource model for every config's
predictions again; it now reads the facts the config stage judged each config on. For each space (default: every
suite problem) this judges the space as ``tune``'s gate does (:meth:`kernelrules.tune.gate.Gate.prejudge`: probe
compiles on this machine's CPU, two workers, an empty kernelrules cache) and ranks the passing configs both ways:
prints one JSON line per space with the configs ranked, how many estimates differ, whether the 16 seeds are the
same and in the same order, and each way's milliseconds; then a total line. CPU only.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def check(path: Path, arch) -> dict:
    """One space, both ways."""
    from kernelrules.predict.perf_general import estimate_any
    from kernelrules.space import load_space
    from kernelrules.tune.gate import Gate
    from kernelrules.tune.options import perf_model_seeds

    space = load_space(path)
    configs = list(space.configs())
    gate = Gate(space, arch, stage="config", jobs=2)
    try:
        gate.prejudge(configs)
    finally:
        gate.pruner.close()
    problem = dict(space.problem)
    passing = [c for c in configs if gate.at_config_stage(c).passed]

    def judged(config):
        return gate.at_config_stage(config).facts

    differ = 0
    for config in passing:
        try:
            asked = estimate_any(config, arch, problem, model=gate.model)
        except Exception:  # noqa: BLE001 - a config neither model reads: not ranked either way
            asked = None
        try:
            read = estimate_any(config, arch, problem, facts=judged(config)) if judged(config) else asked
        except Exception:  # noqa: BLE001
            read = None
        differ += asked != read
    started = time.perf_counter()
    by_model = perf_model_seeds(passing, arch, problem, 16, model=gate.model)
    model_ms = (time.perf_counter() - started) * 1e3
    started = time.perf_counter()
    by_facts = perf_model_seeds(passing, arch, problem, 16, model=gate.model, facts=judged)
    facts_ms = (time.perf_counter() - started) * 1e3
    return {"space": f"{path.parent.name}__{path.name.removesuffix('.tune.yaml')}", "passing": len(passing),
            "estimates_differ": differ, "same_seeds": by_model == by_facts, "model_ms": round(model_ms, 1),
            "facts_ms": round(facts_ms, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spaces", nargs="*", type=Path)
    parser.add_argument("--arch", default="h200")
    args = parser.parse_args()
    os.environ["KERNELRULES_CACHE_DIR"] = tempfile.mkdtemp(prefix="kernelrules-seed-facts-")
    from kernelrules.arch import load_arch

    arch = load_arch(args.arch)
    spaces = [p.resolve() for p in args.spaces] or sorted((REPO / "benchmarks" / "suite").glob("*/*.tune.yaml"))
    rows = []
    for path in spaces:
        row = check(path, arch)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(f"{len(rows)} spaces: estimates differ in {sum(r['estimates_differ'] for r in rows)} configs, seeds differ in "
          f"{sum(not r['same_seeds'] for r in rows)} spaces; ranking {sum(r['model_ms'] for r in rows):.0f} ms asking the "
          f"model, {sum(r['facts_ms'] for r in rows):.0f} ms reading the facts")


if __name__ == "__main__":
    sys.exit(main())
