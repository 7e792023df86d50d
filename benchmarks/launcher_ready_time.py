"""When Triton's launcher for a tune run's kernel is in the study's Triton cache, against the first probe's answer.

    python benchmarks/launcher_ready_time.py [--repeat 5] [--before REV] [--jobs 2] [--space FILE ...]

Before a benchmark worker launches a kernel, Triton needs a launcher for its signature (a C module, 0.19-0.23 s of
the first trial's check on the H200 when the worker builds it: benchmarks/results/first_trial_profile_2026-12-04).
The gate's compile workers build it into the study's Triton cache, which the worker reads. Each measurement here is a
fresh process that does what a ``kernelrules tune`` run's start does with that cache: start the gate's compile
workers, send the resource model's probe compiles, and wait for their answers, while a thread polls the cache for
the launcher's file (every 2 ms). It prints when the first probe answered and when the launcher appeared, seconds
from the probes' send; a launcher that appears before the first answer is there for any config the run launches.

``--before REV`` runs the same with the kernelrules of commit REV, interleaved with this tree's. Without a CUDA
driver library (a CPU machine) the script links Triton's host modules against an empty stub library: they build
(and are cached) but cannot load, as on a GPU machine they would. Prints one JSON line per run, then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_autotune_overhead import extract  # noqa: E402

CHILD = r"""
import json, os, sys, threading, time
from pathlib import Path
space_file, folder, jobs = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
from kernelrules.arch import load_arch
from kernelrules.compile.cache import ResultCache
from kernelrules.predict.resource_model import choose_probes
from kernelrules.space import load_space
from kernelrules.tune.gate import Gate

space = load_space(space_file)
triton_cache = folder / "triton-cache"
gate = Gate(space, load_arch("h200"), jobs=jobs, cache=ResultCache(folder / "kr-cache"),
            triton_cache_dir=str(triton_cache))
configs = list(space.configs())
gate.start_compile_workers()
pool = gate.pruner.pool
probes = choose_probes(gate.plain_survivors(configs))
jobs_ = [gate.pruner.compile_job(c, gate.arch, 60) for c in probes]
seen = {}
done = threading.Event()

def poll():
    while not done.is_set():
        if [p for p in triton_cache.glob("*/__triton_launcher*") if not p.parent.name.startswith("tmp.")]:
            seen["launcher_s"] = time.perf_counter() - start
            return
        time.sleep(0.002)

start = time.perf_counter()
watcher = threading.Thread(target=poll, daemon=True)
watcher.start()
answers = []
for job, result in pool.run(jobs_):
    answers.append(round(time.perf_counter() - start, 4))
    assert result.ok, result.details
watcher.join(10)
done.set()
pool.close()
print(json.dumps({"first_answer_s": answers[0], "answers_s": answers,
                  "launcher_s": round(seen["launcher_s"], 4) if "launcher_s" in seen else None}))
"""


def has_libcuda() -> bool:
    """Whether the machine has a CUDA driver library Triton finds (``ldconfig``)."""
    try:
        found = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    except OSError:
        return False
    return "libcuda.so.1" in found


def stub_libcuda(folder: Path) -> str:
    """An empty ``libcuda.so`` for Triton's link on a machine without the driver; its folder."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "stub.c").write_text("int kernelrules_stub(void) { return 0; }\n")
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise SystemExit("no C compiler: Triton cannot build its launchers here either")
    subprocess.run([cc, "-shared", "-fPIC", "-o", str(folder / "libcuda.so"), str(folder / "stub.c")], check=True)
    (folder / "libcuda.so.1").symlink_to("libcuda.so")
    return str(folder)


def environment(root: str | None, libcuda: str | None) -> dict[str, str]:
    env = dict(os.environ)
    if root:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    if libcuda:
        env["TRITON_LIBCUDA_PATH"] = libcuda
    return env


def measure(root: str | None, space: Path, jobs: int, tree: Path, libcuda: str | None) -> dict:
    """One fresh process (run outside the repository, so ``PYTHONPATH`` picks the kernelrules measured)."""
    with tempfile.TemporaryDirectory(dir=tree) as folder:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(space), folder, str(jobs)],
                              env=environment(root, libcuda), capture_output=True, text=True, timeout=600, cwd=tree)
    if proc.returncode:
        raise SystemExit(f"the child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--before", metavar="REV")
    parser.add_argument("--jobs", type=int, default=2, help="the gate's compile workers")
    parser.add_argument("--space", type=Path, nargs="+",
                        default=[REPO / "benchmarks" / "suite" / "softmax" / "large.tune.yaml"])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as temporary:
        tree = Path(temporary)
        libcuda = None if has_libcuda() else stub_libcuda(tree / "libcuda-stub")
        modes: dict[str, str | None] = {"head": None}
        if args.before:
            modes["before"] = extract(args.before, tree)
        for space in args.space:
            found: dict[str, list[dict]] = {mode: [] for mode in modes}
            for _ in range(args.repeat):
                for mode, root in modes.items():
                    record = measure(root, space.resolve(), args.jobs, tree, libcuda)
                    record.update(mode=mode, space=space.name if space.parent.name == "" else
                                  f"{space.parent.name}/{space.name}")
                    found[mode].append(record)
                    print(json.dumps(record), flush=True)
            for mode, records in found.items():
                lead = [r["launcher_s"] - r["first_answer_s"] for r in records if r["launcher_s"] is not None]
                missing = sum(r["launcher_s"] is None for r in records)
                print(f"{mode}: {space.parent.name}/{space.name}: first probe answered "
                      f"{statistics.median(r['first_answer_s'] for r in records):.3f} s, launcher in the cache "
                      + (f"{statistics.median(lead):+.3f} s after it (median of {len(lead)})" if lead else "never")
                      + (f", {missing} run(s) without one" if missing else ""), flush=True)


if __name__ == "__main__":
    main()
