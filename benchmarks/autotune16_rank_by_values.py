"""The perf model's ranking of the 16-config autotune list from the configs' values alone, beside the H200 sweep.

``kernelrules.autotune(perf_model=True, top_k=k)`` ranks a matmul-like list before compiling anything
(docs/tuners.md): the matmul model estimates each config from its values (``facts={}``). This prints that
ranking for ``benchmarks/results/autotune16/configs.json`` (fp16, M = N = K = 4096, H200) next to each
config's time measured in the H200 sweep (``benchmarks/results/h200_sweep_launch.jsonl``), and where the
sweep's fastest configs land. CPU only, no compile.

    python benchmarks/autotune16_rank_by_values.py [--top-k 3]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.predict.perf_general import estimate_any

RESULTS = Path(__file__).resolve().parent / "results"
PROBLEM = {"M": 4096, "N": 4096, "K": 4096, "dtype": "fp16"}


def measured() -> dict[str, float]:
    """Config (canonical JSON) -> milliseconds measured in the H200 sweep."""
    times = {}
    for line in (RESULTS / "h200_sweep_launch.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("config") and record.get("ms"):
            times[json.dumps(record["config"], sort_keys=True)] = record["ms"]
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top-k", type=int, default=3)
    args = parser.parse_args()
    configs = json.loads((RESULTS / "autotune16" / "configs.json").read_text())
    arch, times = load_arch("sm_90"), measured()
    rows = sorted(((estimate_any(KernelConfig.from_dict(c), arch, PROBLEM, facts={}, sku="h200"),
                    times.get(json.dumps(c, sort_keys=True)), c) for c in configs), key=lambda r: r[0])
    fastest = sorted(ms for _, ms, _ in rows if ms is not None)
    for rank, (estimate, ms, config) in enumerate(rows, 1):
        place = "-" if ms is None else str(fastest.index(ms) + 1)
        print(f"{rank:2d}  estimated {estimate * 1e3:9.3f} ms  measured {'-' if ms is None else f'{ms:.3f} ms':>9}"
              f"  (measured rank {place:>2})  {config}")
    top = [ms for _, ms, _ in rows[:args.top_k] if ms is not None]
    best = fastest[0]
    print(f"top {args.top_k} by values: fastest measured {min(top):.3f} ms = {min(top) / best:.3f} x the list's best "
          f"({best:.3f} ms); holds the measured top {args.top_k}: {sorted(top) == fastest[:args.top_k]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
