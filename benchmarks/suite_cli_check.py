"""Run every kernelrules command a user would on every suite kernel; report exit codes and tracebacks.

    python benchmarks/suite_cli_check.py [FAMILY ...] [--out results.json]

Per family: ``lint`` (config and compiled stage), ``prune`` of every space file,
``check-config --kernel`` with the family's smoke config (compiled), and ``tune
--interpret --trials 1`` on the smoke's space file. A command passes when it exits
0, 1 or (for ``tune``) names no winner for a reason it states, and never prints a
Python traceback. Prints one line per command; exit 1 if any failed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "suite"


def kernelrules() -> list[str]:
    exe = shutil.which("kernelrules", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "kernelrules"]


def commands(family: Path, study_dir: str) -> list[tuple[str, list[str]]]:
    """(label, arguments) of every command to try on one family."""
    import yaml

    smoke = yaml.safe_load((family / "smoke.yaml").read_text())
    out = []
    for kernel in sorted(family.glob("*.py")):
        if kernel.name.endswith("_harness.py"):
            continue
        out.append((f"lint --stage config {kernel.name}", ["lint", str(kernel), "--arch", "hopper", "--stage", "config"]))
        out.append((f"lint {kernel.name}", ["lint", str(kernel), "--arch", "hopper"]))
    for space in sorted(family.glob("*.tune.yaml")):
        out.append((f"prune {space.name}", ["prune", str(space), "--arch", "hopper"]))
    values = [f"{k}={v}" for k, v in smoke["config"].items()]
    out.append(("check-config", ["check-config", "--arch", "hopper", "--space", str(family / smoke["space"]), *values]))
    out.append(("tune --interpret", ["tune", str(family / smoke["space"]), "--arch", "hopper", "--interpret",
                                     "--trials", "1", "--bench-timeout", "900", "--study-dir", study_dir]))
    return out


def run(args: list[str], timeout: float) -> tuple[int, str, float]:
    start = time.time()
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200")
    try:
        done = subprocess.run([*kernelrules(), *args], capture_output=True, text=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return -1, "timed out", time.time() - start
    return done.returncode, done.stdout + done.stderr, time.time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*")
    parser.add_argument("--out")
    parser.add_argument("--timeout", type=float, default=1800)
    args = parser.parse_args()
    results = []
    for family in sorted(p.parent for p in SUITE.glob("*/smoke.yaml")):
        if args.families and family.name not in args.families:
            continue
        with tempfile.TemporaryDirectory() as study_dir:
            for label, argv in commands(family, study_dir):
                code, output, seconds = run(argv, args.timeout)
                ok = code in (0, 1) and "Traceback (most recent call last)" not in output
                last = (output.strip().splitlines() or [""])[-1][:160]
                results.append({"family": family.name, "command": label, "exit": code, "ok": ok,
                                "seconds": round(seconds, 1), "last_line": last})
                print(f"{family.name}: {label}: exit {code} ({seconds:.0f} s){'' if ok else ' FAIL'} | {last}",
                      flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
