"""How long ``kernelrules tune`` takes to find its GPU's architecture, in a fresh process, two ways.

    python benchmarks/arch_detect_time.py [--runs 5] [--json OUT]

``driver``: the CUDA driver library through ctypes (``kernelrules.tune.target.cuda_device``, what
``tune``'s driver does now); ``torch``: importing torch and asking it (``_torch_device``, what it did
before, and still does where no driver library is found). Each run is a new Python process that
imports kernelrules' tune target module first (not timed), then times the one call; the two ways
alternate, so a machine's drift hits both. Prints each way's median and the answers (they must agree).
Needs a GPU machine; on one without, both answer None.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

PROBE = """
import json, time
from kernelrules.tune import target
t = time.perf_counter()
found = target.cuda_device() if {way!r} == "driver" else target._torch_device()
print(json.dumps({{"seconds": time.perf_counter() - t, "found": found}}))
"""


def one(way: str) -> dict:
    """One fresh process's timing of ``way``."""
    out = subprocess.run([sys.executable, "-c", PROBE.format(way=way)], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", default="", help="write every run here")
    args = parser.parse_args(argv)
    runs: dict[str, list[dict]] = {"driver": [], "torch": []}
    for _ in range(args.runs):
        for way in runs:
            runs[way].append(one(way))
    for way, done in runs.items():
        times = [r["seconds"] for r in done]
        print(f"{way:6s} median {statistics.median(times):.3f} s  (min {min(times):.3f}, max {max(times):.3f}; "
              f"{len(times)} runs)  {done[0]['found']}")
    answers = {json.dumps(r["found"]) for done in runs.values() for r in done}
    print("same answer both ways" if len(answers) == 1 else f"answers differ: {sorted(answers)}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(runs, f, indent=1)
    return 0 if len(answers) == 1 else 1


if __name__ == "__main__":
    sys.exit(main())
