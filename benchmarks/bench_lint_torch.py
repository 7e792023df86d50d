"""A cold ``kernelrules lint`` of each example kernel with and without torch kept out of the CLI process.

    python benchmarks/bench_lint_torch.py [--repeat 2] [--arch ada]

Triton's specializer imports torch at its first call, when torch is installed; the CLI sets it up with
torch hidden (:func:`kernelrules.compile.specialize.hide_torch_from_specializer`). Each run is a fresh
process with empty kernelrules and Triton caches; the baseline is the same CLI with that call made a
no-op, so torch is imported as before. The two are interleaved per example; prints each example's
median wall seconds and their ratio, and whether torch ended up imported. CPU figures (torch's CPU build
here; a CUDA build imports slower).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ["attention_fwd.py", "fused_pointwise.py", "layernorm.py", "matmul.py", "softmax.py"]
CHILD = """
import atexit, json, sys
import kernelrules.compile.specialize as specialize
if sys.argv[1] == "torch":
    specialize.hide_torch_from_specializer = lambda: None  # the baseline: the specializer imports torch
atexit.register(lambda: print(json.dumps({"torch": "torch" in sys.modules}), flush=True))  # stdout: stderr is quiet by then
sys.argv = ["kernelrules", "lint", sys.argv[2], "--arch", sys.argv[3]]
from kernelrules.cli import main
main()
"""


def run(mode: str, example: str, arch: str) -> tuple[float, bool]:
    with tempfile.TemporaryDirectory() as folder:
        env = {"KERNELRULES_CACHE_DIR": f"{folder}/kr", "TRITON_CACHE_DIR": f"{folder}/triton"}
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-c", CHILD, mode, str(REPO / "examples" / example), arch],
                              capture_output=True, text=True, env={**__import__("os").environ, **env}, timeout=900)
        wall = time.perf_counter() - start
    lines = [line for line in done.stdout.splitlines() if line.startswith('{"torch"')]
    if done.returncode not in (0, 1) or not lines:
        raise SystemExit(f"{example} ({mode}) failed:\n{done.stderr[-2000:]}")
    return wall, json.loads(lines[-1])["torch"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--arch", default="ada")
    args = parser.parse_args()
    print("| example | with torch imported (s) | without (s) | ratio | torch imported: with / without |")
    print("|---|---:|---:|---:|---|")
    for example in EXAMPLES:
        times: dict[str, list[float]] = {"torch": [], "hidden": []}
        imported: dict[str, bool] = {}
        for _ in range(args.repeat):
            for mode in times:
                wall, imported[mode] = run(mode, example, args.arch)
                times[mode].append(wall)
        before, after = statistics.median(times["torch"]), statistics.median(times["hidden"])
        print(f"| {example} | {before:.2f} | {after:.2f} | {before / after:.2f}x | {imported['torch']} / {imported['hidden']} |",
              flush=True)


if __name__ == "__main__":
    main()
