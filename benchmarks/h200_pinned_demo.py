"""Tuned once, pinned everywhere: tune and export in one process, launch with zero benchmarks in another.

    python benchmarks/h200_pinned_demo.py [--out DIR] [--trials 40] [--launches 100]      # on the H200
    python benchmarks/h200_pinned_demo.py --interpret --arch hopper                        # on a CPU (a test)

1. ``kernelrules tune SPACE --export DIR/matmul.pinned.json`` in a subprocess: the example
   matmul (``examples/matmul.tune.yaml``, 4096^3 fp16; under ``--interpret`` the 32^3
   ``tests/fixtures/tune/matmul_small.yaml``) tuned on the current GPU, the winner written
   into a pinned table.
2. A fresh Python process (``--launch``) wraps ``examples/matmul.py``'s kernel in
   ``kernelrules.autotune(configs=..., key=["M", "N", "K"], pinned=TABLE, on_missing="error")``
   with ``KERNELRULES_NO_BENCHMARK=1`` and launches it ``--launches`` times at the space's
   sizes, counting every call of Triton's ``Autotuner._bench`` and ``triton.testing.do_bench``.

It prints one JSON object (also written to ``DIR/pinned_demo.json``): ``benchmark_calls``
(expected 0), ``source`` (``pinned``), the config launched and the table's, whether they
agree, whether the result matches ``a @ b``, the first launch's and the mean later launch's
wall time in ms (synchronised; meaningless under ``--interpret``), and the tune command's
exit code and time. Exit code 0 when no benchmark ran and the pinned config was launched.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def tune_and_export(args: argparse.Namespace, table: Path) -> dict:
    command = [sys.executable, "-m", "kernelrules", "tune", str(args.space), "--export", str(table),
               "--trials", str(args.trials), "--storage", str(table.parent / "study.db"), "-q",
               "--top-k", "2" if args.interpret else "5", "--rounds", "1" if args.interpret else "5"]
    if args.interpret:
        command += ["--interpret", "--stage", "config"]
    if args.arch:
        command += ["--arch", args.arch]
    started = time.monotonic()
    # cwd outside the repository: `python -m kernelrules` from its root would import the source tree
    done = subprocess.run(command, capture_output=True, text=True, env=_env(), timeout=3600, cwd=table.parent)
    return {"command": " ".join(command[1:]), "rc": done.returncode, "seconds": round(time.monotonic() - started, 2),
            "output": done.stdout[-1500:] + done.stderr[-1500:]}


def launch_in_fresh_process(args: argparse.Namespace, table: Path) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--launch", str(table), "--space", str(args.space),
               "--launches", str(args.launches)] + (["--interpret"] if args.interpret else []) + (
               ["--arch", args.arch] if args.arch else [])
    env = {**_env(), "KERNELRULES_NO_BENCHMARK": "1"}
    if args.interpret:
        env["TRITON_INTERPRET"] = "1"
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=3600, cwd=table.parent)
    if done.returncode != 0:
        return {"error": (done.stdout + done.stderr)[-3000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env() -> dict:
    # The installed kernelrules (the repository root is not a package root: analyzers/, rules/ and
    # arch_profiles/ are mapped into the package at install time).
    return dict(os.environ)


def launch(args: argparse.Namespace) -> dict:
    """The second process: launch through a pinned kernelrules.autotune and count benchmarks."""
    import torch
    import triton
    import triton.runtime.autotuner as autotuner
    import triton.testing

    import kernelrules
    from kernelrules.pinned import load_table
    from kernelrules.space import load_space

    calls = {"bench": 0, "do_bench": 0}
    original_bench, original_do_bench = autotuner.Autotuner._bench, triton.testing.do_bench

    def counted_bench(self, *a, **k):
        calls["bench"] += 1
        return original_bench(self, *a, **k)

    def counted_do_bench(*a, **k):
        calls["do_bench"] += 1
        return original_do_bench(*a, **k)

    autotuner.Autotuner._bench = counted_bench
    triton.testing.do_bench = counted_do_bench
    sys.path.insert(0, str(REPO / "examples"))
    from matmul import matmul_kernel

    kernel = kernelrules.autotune(configs=matmul_kernel.configs, key=["M", "N", "K"], pinned=str(args.launch),
                                  on_missing="error", arch=args.arch)(matmul_kernel.fn)
    problem = load_space(args.space).problem
    M, N, K = (int(problem[n]) for n in ("M", "N", "K"))
    device = "cpu" if args.interpret else "cuda"
    torch.manual_seed(0)
    a = torch.randn(M, K, device=device, dtype=torch.float16)
    b = torch.randn(K, N, device=device, dtype=torch.float16)
    c = torch.empty(M, N, device=device, dtype=torch.float16)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731

    def once() -> float:
        started = time.perf_counter()
        kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1))
        if device == "cuda":
            torch.cuda.synchronize()
        return (time.perf_counter() - started) * 1e3

    times = [once() for _ in range(max(1, args.launches))]
    choice = next(iter(kernel.kernelrules_choices.values()))
    entry = load_table(args.launch).entries[0]
    used = {**choice["config"].all_kwargs()}
    pinned = {**entry.config}
    agrees = all(used.get(k) == v for k, v in pinned.items())
    reference = (a.float() @ b.float()).to(torch.float16)
    return {"benchmark_calls": calls["bench"] + calls["do_bench"], "source": choice["source"],
            "config": {k: v for k, v in used.items() if v is not None}, "pinned_config": pinned,
            "agrees_with_table": agrees, "correct": bool(torch.allclose(c.float(), reference.float(), atol=0.1, rtol=0.02)),
            "launches": len(times), "first_launch_ms": round(times[0], 4),
            "later_launch_ms": round(sum(times[1:]) / len(times[1:]), 4) if len(times) > 1 else None,
            "device": "cpu (TRITON_INTERPRET=1)" if args.interpret else torch.cuda.get_device_name(0),
            "arch": entry.arch, "table_gpu": entry.provenance.get("gpu")}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--interpret", action="store_true", help="TRITON_INTERPRET=1 on the CPU (needs --arch)")
    parser.add_argument("--arch", help="architecture (default: the current GPU)")
    parser.add_argument("--space", type=Path, help="space file to tune")
    parser.add_argument("--trials", type=int, help="tune trials (default 40; 3 with --interpret)")
    parser.add_argument("--launches", type=int, help="launches in the second process (default 100; 3 with --interpret)")
    parser.add_argument("--out", type=Path, help="folder for the table, the study and the JSON (default: a new temporary one)")
    parser.add_argument("--launch", type=Path, help=argparse.SUPPRESS)  # the second process
    args = parser.parse_args()
    if args.space is None:
        args.space = REPO / ("tests/fixtures/tune/matmul_small.yaml" if args.interpret else "examples/matmul.tune.yaml")
    if args.launches is None:
        args.launches = 3 if args.interpret else 100
    if args.launch is not None:
        print(json.dumps(launch(args)))
        return 0
    if args.interpret and not args.arch:
        parser.error("--interpret needs --arch")
    if args.trials is None:
        args.trials = 3 if args.interpret else 40
    out = args.out or Path(tempfile.mkdtemp(prefix="pinned-demo-"))
    out.mkdir(parents=True, exist_ok=True)
    table = out / "matmul.pinned.json"
    tuned = tune_and_export(args, table)
    result = {"tune": tuned, "table": str(table)}
    if tuned["rc"] == 0 and table.is_file():
        result.update(launch_in_fresh_process(args, table))
    # recorded results hold no path of the machine: the repository root and the output folder are named
    text = json.dumps(result, indent=2).replace(str(REPO) + "/", "").replace(str(out.resolve()) + "/", "OUT/")
    (out / "pinned_demo.json").write_text(text.replace(str(out) + "/", "OUT/") + "\n")
    print(text)
    ok = result.get("benchmark_calls") == 0 and result.get("source") == "pinned" and result.get("agrees_with_table")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
