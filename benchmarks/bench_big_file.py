"""How long `kernelrules lint` takes on 1 MB source files, and how much memory: issue 18's bound.

    python benchmarks/bench_big_file.py [--stage compiled] [--size 1000000]

Each input is a kernel file padded to about ``--size`` bytes in one way a real or hostile
file can be large: 50,000 module constants; 2,000 plain Python helpers; one expression
line of 1 MB; 500 jit helpers the kernel does not call. Each is linted in a fresh process
with a fresh cache (``--arch ada``), its wall time and the child's peak RSS measured; the
baseline is the same kernel alone (a few hundred bytes), linted the same way in the same
run, so the ratio says what the size costs. Target (issue 18): every file up to 1 MB judged
or refused in at most 10 s and 1 GB (on the 2-core CI machine).

The CPU seconds (user and system, of the lint and the compile workers it waited for) are
printed too: on a shared machine the wall time says more about the other processes than
about kernelrules, the CPU time much less.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KERNEL = '''
@triton.jit
def kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
'''
HEAD = "import triton\nimport triton.language as tl\n\n"


def padded(kind: str, size: int) -> str:
    """A kernel file of about ``size`` bytes, padded with ``kind``."""
    lines: list[str] = []
    total, i = 0, 0
    while total < size:
        if kind == "constants":
            line = f"CONST_{i} = {i}\n"
        elif kind == "helpers":
            line = f"def helper_{i}(a, b):\n    c = a * {i} + b\n    return c if c > 0 else -c\n\n"
        elif kind == "jit_helpers":
            line = f"@triton.jit\ndef jit_helper_{i}(x):\n    return x * {i} + 1\n\n\n"
        else:  # one long expression line
            line = "LONG = " + " + ".join(str(j) for j in range(size // 8)) + "\n"
            lines.append(line)
            break
        lines.append(line)
        total += len(line)
        i += 1
    return HEAD + "".join(lines) + KERNEL


def lint(path: Path, stage: str) -> dict:
    """Lint one file in a fresh process: seconds, exit code, the child's peak RSS in MB."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    before, cpu_before = usage.ru_maxrss, usage.ru_utime + usage.ru_stime
    with tempfile.TemporaryDirectory() as cache:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "kernelrules", "lint", str(path), "--arch", "ada", "--stage", stage,
                               "--cache-dir", cache, "--format", "json"], capture_output=True, text=True,
                              cwd=path.parent, timeout=600)
        seconds = time.monotonic() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime - cpu_before
    statuses = []
    try:
        statuses = [k["status"] for k in json.loads(done.stdout)["kernels"]]
    except (ValueError, KeyError):
        pass
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 2), "rc": done.returncode, "peak_rss_mb": round(max(peak, before) / 1024),
            "kernels": statuses, "stderr": done.stderr.strip()[-200:]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="compiled", choices=["config", "compiled"])
    parser.add_argument("--size", type=int, default=1_000_000)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "small.py"
        base.write_text(HEAD + KERNEL)
        baseline = lint(base, args.stage)
        print(f"baseline (the kernel alone, {base.stat().st_size} bytes): {baseline['seconds']:.2f} s "
              f"(CPU {baseline['cpu_seconds']:.2f} s)")
        for kind in ("constants", "helpers", "jit_helpers", "long_line"):
            path = Path(tmp) / f"{kind}.py"
            path.write_text(padded(kind, args.size))
            result = lint(path, args.stage)
            result.update(kind=kind, bytes=path.stat().st_size, ratio=round(result["seconds"] / baseline["seconds"], 2))
            rows.append(result)
            ok = result["seconds"] <= 10 and result["peak_rss_mb"] <= 1024
            print(f"{kind:12s} {result['bytes']:>9d} bytes  {result['seconds']:6.2f} s (CPU {result['cpu_seconds']:5.2f} s)  "
                  f"x{result['ratio']:<5}  "
                  f"peak RSS <= {result['peak_rss_mb']} MB  exit {result['rc']}  {result['kernels']}  "
                  f"{'within' if ok else 'OVER'} 10 s / 1 GB" + (f"  {result['stderr']}" if result["rc"] == 2 else ""))
    print("(peak RSS: the largest child so far, an upper bound for each row)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
