"""Sweep a matmul space on a real GPU and record what the launches say.

Run on the GPU machine from the repository root (kernelrules installed):

    python benchmarks/h200_sweep.py compile --out DIR [--workers 14] [--timeout 30]
    python benchmarks/h200_sweep.py launch  --out DIR [--bench-ms 10]

``compile`` cross-compiles every config of ``examples/matmul.space.yaml`` for the
GPU's architecture in kernelrules' worker pool (time-limited, one shared Triton
cache), records kernelrules' compiled facts and the compile time, and writes
``DIR/compile.jsonl``. ``launch`` launches every config that compiled through
Triton's own JIT (a Triton cache hit when the specialisation matches), records the
launched kernel's ``metadata.shared``, ``n_regs``, ``n_spills`` or the launch
failure, checks the result against a float32 reference, times it with
``triton.testing.do_bench`` and writes ``DIR/launch.jsonl``; torch.matmul (cuBLAS)
is timed in the same run. Both phases append one JSON line per config, so a run
cut short keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SPACE = REPO / "examples" / "matmul.space.yaml"
FACT_KEYS = ("shared_bytes", "registers", "spill_bytes", "stack_bytes", "local_bytes", "mma_path",
             "accumulator_registers_per_thread", "pipelined", "compile_status", "compile_message")


def load_configs():
    from kernelrules.space import load_space

    space = load_space(SPACE)
    return space, list(space.configs())


def quick_facts(result) -> dict:
    """The facts the comparison needs, without the SASS dump (0.4 s a kernel; cuobjdump's
    resource usage costs 2 ms): shared, registers, spill (STACK) bytes, MMA path, pipelining."""
    from kernelrules.analyzers import sass
    from kernelrules.analyzers.facts_extract import extract

    if not result.ok:
        return {"compile_status": result.error_kind, "compile_message": result.message[:300]}
    facts = extract(result.asm, result.metadata, run_tools=False)
    usage = next(iter(sass.parse_resource_usage(sass.dump_resource_usage(bytes(result.asm["cubin"]))).values()))
    facts.update(registers=usage.registers, spill_bytes=usage.stack + usage.local, stack_bytes=usage.stack,
                 local_bytes=usage.local, compile_status="ok")
    return facts


def compile_phase(args) -> None:
    """Compile every config in the pool; one JSON line per config."""
    from kernelrules.arch import load_arch
    from kernelrules.compile.pool import CompilePool
    from kernelrules.compile.target import KernelTarget

    if args.arch:
        arch = load_arch(args.arch)
    else:
        import torch

        major, minor = torch.cuda.get_device_capability(0)
        arch = load_arch(f"sm_{major}{minor}")
    space, configs = load_configs()
    if args.limit:
        configs = configs[: args.limit]
    target = KernelTarget(space.kernel_path, space.kernel_name, space.signature, space.kernel_info())
    path = Path(args.out) / "compile.jsonl"
    done_keys = set()
    if args.resume and path.exists():
        done_keys = {json.dumps(json.loads(line)["config"], sort_keys=True) for line in open(path)}
    configs = [c for c in configs if json.dumps(c.to_dict(), sort_keys=True) not in done_keys]
    print(f"{len(done_keys)} configs already compiled, {len(configs)} to go", flush=True)
    jobs = [target.job(c, arch, args.timeout) for c in configs]
    index = {id(j): c for j, c in zip(jobs, configs)}
    out = open(path, "a" if args.resume else "w")
    launcher = Launcher(args, open(Path(args.out) / "launch.jsonl", "w")) if args.phase == "all" else None
    start = time.time()
    pool = CompilePool(max_workers=args.workers, timeout=args.timeout, cache=None,
                       triton_cache_dir=os.environ["TRITON_CACHE_DIR"])
    done = 0
    with pool:
        for job, result in pool.run(jobs):
            config = index[id(job)]
            facts = quick_facts(result)
            record = {"config": config.to_dict(), "ok": result.ok, "error_kind": result.error_kind,
                      "compile_seconds": round(result.compile_seconds, 3),
                      "facts": {k: facts[k] for k in FACT_KEYS if k in facts}}
            out.write(json.dumps(record) + "\n")
            out.flush()
            if launcher is not None:  # launch while the pool compiles the next configs
                launcher.launch(record)
            done += 1
            if done % 100 == 0:
                print(f"compiled {done}/{len(jobs)} in {time.time() - start:.0f} s", flush=True)
    print(f"compile phase: {len(jobs)} configs in {time.time() - start:.0f} s on {args.workers} workers", flush=True)


def _count_triton_cache_misses() -> list[int]:
    """Count Triton cache misses in this process: ``ASTSource.make_ir`` runs only when
    ``triton.compile`` finds nothing in the cache (the pool's compiles run elsewhere)."""
    from triton.compiler import compiler

    counter = [0]
    original = compiler.ASTSource.make_ir

    def counting(self, *args, **kwargs):
        counter[0] += 1
        return original(self, *args, **kwargs)

    compiler.ASTSource.make_ir = counting
    return counter


class Launcher:
    """Launches, checks and times configs of the matmul through Triton's JIT on the GPU."""

    def __init__(self, args, out) -> None:
        import torch
        import triton

        sys.path.insert(0, str(REPO / "examples"))
        from matmul import matmul_kernel

        self.torch, self.triton, self.fn, self.args, self.out = torch, triton, matmul_kernel.fn, args, out
        self.misses = _count_triton_cache_misses()
        self.M = self.N = self.K = 4096
        torch.manual_seed(0)
        self.a = torch.randn((self.M, self.K), device="cuda", dtype=torch.float16)
        self.b = torch.randn((self.K, self.N), device="cuda", dtype=torch.float16)
        self.reference = self.a.float() @ self.b.float()
        self.ref_norm = self.reference.norm().item()
        self.c = torch.empty((self.M, self.N), device="cuda", dtype=torch.float16)
        self.flops = 2 * self.M * self.N * self.K
        ms = triton.testing.do_bench(lambda: torch.matmul(self.a, self.b), warmup=25, rep=100)
        out.write(json.dumps({"reference": "torch.matmul", "ms": ms, "tflops": self.flops / ms / 1e9}) + "\n")
        print(f"torch.matmul: {ms:.3f} ms, {self.flops / ms / 1e9:.0f} TFLOP/s", flush=True)

    def launch(self, record: dict) -> None:
        """Launch one compiled config and append its result line."""
        from triton.runtime.errors import OutOfResources

        torch, triton, config = self.torch, self.triton, record["config"]
        result = {"config": config}
        if not record["ok"]:
            result.update(launched=False, skipped=f"compile {record['error_kind']}")
            self.out.write(json.dumps(result) + "\n")
            return
        meta = {k: config[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M")}
        grid = (triton.cdiv(self.M, meta["BLOCK_M"]) * triton.cdiv(self.N, meta["BLOCK_N"]),)
        a, b, c = self.a, self.b, self.c

        def run():
            return self.fn[grid](a, b, c, self.M, self.N, self.K, a.stride(0), a.stride(1), b.stride(0),
                                 b.stride(1), c.stride(0), c.stride(1), **meta, num_warps=config["num_warps"],
                                 num_stages=config["num_stages"])

        c.fill_(float("nan"))
        misses_before = self.misses[0]
        t0 = time.time()
        try:
            kernel = run()
            torch.cuda.synchronize()
        except OutOfResources as exc:
            result.update(launched=False, error=f"OutOfResources: {exc}", jit_seconds=round(time.time() - t0, 3))
            self.out.write(json.dumps(result) + "\n")
            return
        except Exception as exc:  # record every other launch failure with its class
            result.update(launched=False, error=f"{type(exc).__name__}: {str(exc)[:300]}")
            self.out.write(json.dumps(result) + "\n")
            torch.cuda.synchronize()
            return
        jit_seconds = time.time() - t0
        result["triton_cache_hit"] = self.misses[0] == misses_before
        error = ((c.float() - self.reference).norm() / self.ref_norm).item()
        ms = triton.testing.do_bench(run, warmup=self.args.bench_ms / 2, rep=self.args.bench_ms)
        result.update(launched=True, jit_seconds=round(jit_seconds, 3), shared=kernel.metadata.shared,
                      n_regs=kernel.n_regs, n_spills=kernel.n_spills, rel_error=error, ms=ms,
                      tflops=self.flops / ms / 1e9)
        self.out.write(json.dumps(result) + "\n")
        self.out.flush()


def launch_phase(args) -> None:
    """Launch, check and time every config that compile.jsonl says compiled."""
    compiled = [json.loads(line) for line in open(Path(args.out) / "compile.jsonl")]
    launcher = Launcher(args, open(Path(args.out) / "launch.jsonl", "w"))
    start = time.time()
    for record in compiled:
        launcher.launch(record)
    print(f"launch phase: {len(compiled)} configs in {time.time() - start:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("phase", choices=["compile", "launch", "all"])
    parser.add_argument("--resume", action="store_true", help="keep compile.jsonl and compile only what is missing")
    parser.add_argument("--out", required=True)
    parser.add_argument("--workers", type=int, default=14)
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--bench-ms", type=float, default=10.0)
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--arch", default="", help="compile for this arch instead of the GPU's (CPU dry runs)")
    args = parser.parse_args()
    Path(args.out).mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TRITON_CACHE_DIR", str(Path(args.out) / "triton-cache"))
    if args.phase in ("compile", "all"):
        compile_phase(args)
    if args.phase == "launch":
        launch_phase(args)


if __name__ == "__main__":
    main()
