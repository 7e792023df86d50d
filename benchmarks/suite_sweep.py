"""Measure every config of every suite problem on a GPU: the suite's truth.

Run on the GPU machine from the repository root (kernelrules importable):

    python benchmarks/suite_sweep.py --until EPOCH [--families gemm,softmax] [--workers 15]

For each problem (a ``benchmarks/suite/<family>/<shape>.tune.yaml``) and each config of
its space it records, one JSON line per config in ``.suite-work/<family>__<shape>.jsonl``:

* the compile by kernelrules' own compile pool (the code of a CPU cross-compile) for
  the GPU's architecture: status and seconds under a 30 s cap, the compiled facts
  (shared memory, registers, spills, MMA path, ...), and the compiled-stage verdict of
  kernelrules' rules on those facts (codes and verdict);
* the launch through Triton's own JIT, as a user's launch: whether it hit Triton's cache
  (the pool and the JIT share one cache, so a hit means the launched binary is the one
  kernelrules compiled), the launched kernel's ``metadata.shared``, ``n_regs``,
  ``n_spills``, or the launch failure and its class;
* correctness against the problem's float64 reference on NaN-poisoned outputs (the
  gates of ``kernelrules tune``), and the time: ``triton.testing.do_bench`` median with
  the 20th and 80th percentiles (L2 flushed before every repetition).

Resumable: configs already recorded in ``benchmarks/results/suite/`` (committed) or in
``.suite-work/`` are skipped. A ``pending`` line is written before every launch; a run
that dies (a launch that loses the CUDA context) is restarted by the caller and records
that config as ``crashed``. ``--until`` is an absolute deadline (seconds since the
epoch): no launch starts after it. Every run also appends a ``run`` line (date, GPU,
Triton, torch, kernelrules commit, device-to-device copy bandwidth) and, per problem,
a ``problem`` line with the baseline's time, both measured in the same run.

``python benchmarks/suite_merge.py`` folds ``.suite-work`` (as fetched back from the
device) into ``benchmarks/results/suite/``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "benchmarks" / "suite"
RESULTS = REPO / "benchmarks" / "results" / "suite"
WORK = REPO / ".suite-work"
COMPILE_TIMEOUT = 30.0
SCALAR = (int, float, str, bool)


def problem_name(space_path: Path) -> str:
    """``<family>__<shape>`` for ``benchmarks/suite/<family>/<shape>.tune.yaml``."""
    return f"{space_path.parent.name}__{space_path.name[: -len('.tune.yaml')]}"


def problems(chosen: list[str] | set[str]) -> list[Path]:
    """Every space file of the suite, sorted; with ``chosen``, those of these families or problem names, in that order."""
    found = sorted(SUITE.glob("*/*.tune.yaml"))
    if not chosen:
        return found
    order = list(chosen)
    picked = [p for p in found if p.parent.name in order or problem_name(p) in order]
    rank = lambda p: order.index(p.parent.name) if p.parent.name in order else order.index(problem_name(p))  # noqa: E731
    return sorted(picked, key=rank)


def config_key(config: dict) -> str:
    return json.dumps(config, sort_keys=True)


def read_lines(path: Path) -> list[dict]:
    """The JSON lines of a file; a torn last line (a killed run) is skipped."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def recorded(name: str) -> tuple[set[str], list[dict]]:
    """Config keys already measured for a problem, and pending launches that never finished."""
    lines = read_lines(RESULTS / f"{name}.jsonl") + read_lines(WORK / f"{name}.jsonl")
    done = {config_key(r["config"]) for r in lines if r.get("kind") == "config"}
    pending = [r for r in lines if r.get("kind") == "pending" and config_key(r["config"]) not in done]
    return done, pending


class Out:
    """Appends JSON lines to one problem's work file, flushed line by line."""

    def __init__(self, name: str) -> None:
        WORK.mkdir(exist_ok=True)
        self.file = open(WORK / f"{name}.jsonl", "a")

    def write(self, record: dict) -> None:
        self.file.write(json.dumps(record, default=repr) + "\n")
        self.file.flush()


def flat_facts(facts: dict) -> dict:
    """The scalar compiled facts (lists and layouts left out: they are large and re-derivable)."""
    return {k: v for k, v in facts.items() if isinstance(v, SCALAR) and not k.startswith("compile_message")}


class Problem:
    """One space file: its configs, compile jobs, rules and (lazily) its GPU runner."""

    def __init__(self, path: Path, arch, engine) -> None:
        from kernelrules.compile.target import KernelTarget
        from kernelrules.space import load_space
        from kernelrules.tune.problem import load_problem

        self.path, self.name, self.arch, self.engine = path, problem_name(path), arch, engine
        self.space = load_space(path)
        self.spec = load_problem(self.space)
        self.target = KernelTarget(self.space.kernel_path, self.space.kernel_name, self.space.signature,
                                   self.space.kernel_info(), frozenset(self.space.fixed))
        self.configs = list(self.space.configs())
        self.out = Out(self.name)
        self.runner = None
        self.tensors = None
        self.remaining = 0

    def compiled_verdict(self, config, result) -> dict:
        """kernelrules' compiled-stage judgement of one compile result, and its scalar facts."""
        from kernelrules.judge.facts import compiled_facts

        facts = compiled_facts(result, self.arch, num_warps=config.num_warps or 4, timeout=COMPILE_TIMEOUT)
        verdict = self.engine.check(config, self.arch, kernel=dict(self.target.kernel_info), facts=facts,
                                    problem=self.space.problem, stage="compiled")
        codes = sorted({d.code for d in verdict.diagnostics})
        return {"verdict": verdict.verdict, "codes": codes, "facts": flat_facts(facts)}

    def start(self, torch) -> dict:
        """Build the runner and the inputs on the GPU; time the baseline. Returns the ``problem`` line."""
        from kernelrules.tune.launch import make_runner

        self.runner = make_runner(self.spec, "cpu" if INTERPRET else "cuda")
        self.tensors = self.runner.make(self.spec.sizes, 0)
        self.ref64 = self.runner.reference(self.tensors, self.spec.sizes, precise=True)
        try:
            self.lowp = self.runner.reference(self.tensors, self.spec.sizes, precise=False)
        except Exception:  # noqa: BLE001 - the rounding floor is optional
            self.lowp = {}
        sync(torch)
        line = {"kind": "problem", "sizes": self.spec.sizes, "flops": self.spec.flop_count(),
                "bytes": self.spec.byte_count(), "configs": len(self.configs)}
        try:
            baseline = self.runner.baseline(self.tensors, self.spec.sizes)
            line["baseline_ms"] = bench(baseline)
        except Exception as exc:  # noqa: BLE001 - recorded, the configs are still measured
            line["baseline_error"] = f"{type(exc).__name__}: {exc}"[:300]
        self.out.write(line)
        return line

    def stop(self, torch) -> None:
        self.runner = self.tensors = self.ref64 = self.lowp = None
        if not INTERPRET:
            torch.cuda.empty_cache()


INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"  # a CPU dry run (--interpret): timings mean nothing


def sync(torch) -> None:
    if not INTERPRET:
        torch.cuda.synchronize()


def bench(fn) -> dict:
    """do_bench median and spread, in milliseconds (L2 flushed before each repetition)."""
    if INTERPRET:
        start = time.perf_counter()
        fn()
        ms = (time.perf_counter() - start) * 1e3
        return {"ms": ms, "ms_p20": ms, "ms_p80": ms}
    import triton

    q20, q50, q80 = triton.testing.do_bench(fn, warmup=10, rep=40, quantiles=[0.2, 0.5, 0.8])
    return {"ms": q50, "ms_p20": q20, "ms_p80": q80}


def count_jit_compiles() -> list[int]:
    """Count Triton cache misses in this process (``ASTSource.make_ir`` runs only on a miss)."""
    from triton.compiler import compiler

    counter = [0]
    original = compiler.ASTSource.make_ir

    def counting(self, *args, **kwargs):
        counter[0] += 1
        return original(self, *args, **kwargs)

    compiler.ASTSource.make_ir = counting
    return counter


def launch_facts(compiled) -> dict:
    """shared, n_regs, n_spills of the kernel Triton launched (None where it did not say)."""
    if compiled is None:
        return {}
    shared = getattr(getattr(compiled, "metadata", None), "shared", None)
    return {"shared": shared, "n_regs": getattr(compiled, "n_regs", None), "n_spills": getattr(compiled, "n_spills", None)}


def classify(exc: BaseException) -> str:
    from kernelrules.tune.feedback import classify_exception

    return classify_exception(exc, "launch")


def measure(problem: Problem, config, compile_record: dict, torch, misses: list[int]) -> dict:
    """Launch, check and time one config; the ``config`` line."""
    from kernelrules.tune.correctness import compare, tolerance_for
    from kernelrules.tune.launch import poison_outputs

    record = {"kind": "config", "config": config.to_dict(), "compile": compile_record}
    if compile_record["status"] != "ok":
        record["launch"] = {"status": "skipped"}
        return record
    flat = {**problem.space.fixed, **config.to_dict()}
    tensors, sizes = problem.tensors, problem.spec.sizes
    problem.out.write({"kind": "pending", "config": config.to_dict()})
    poison_outputs(problem.runner, tensors)
    before, start = misses[0], time.perf_counter()
    try:
        compiled = problem.runner.launch(flat, tensors, sizes)
        sync(torch)
    except Exception as exc:  # noqa: BLE001 - every launch failure is a result
        record["launch"] = {"status": classify(exc), "error": f"{type(exc).__name__}: {exc}"[:300]}
        return record
    launch = {"status": "ok", "jit_seconds": round(time.perf_counter() - start, 3),
              "triton_cache_hit": misses[0] == before, **launch_facts(compiled)}
    record["launch"] = launch
    rtol, atol = tolerance_for(problem.spec.precision_dtype(), problem.spec.tolerance)
    errors = []
    for name in problem.runner.outputs:
        check = compare(name, tensors[name], problem.ref64[name], rtol=rtol, atol=atol,
                        floor=problem.lowp.get(name))
        if not check["ok"]:
            errors.append(check["message"][:300])
    record["correct"] = not errors
    if errors:
        record["check_error"] = errors[0]
    try:
        record["timing"] = bench(problem.runner.prepare(flat, tensors, sizes))
    except Exception as exc:  # noqa: BLE001
        record["timing_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return record


def copy_bandwidth(torch) -> dict:
    """A 1 GiB device-to-device copy: bytes read plus written per second (the practical limit)."""
    src = torch.empty(1 << (20 if INTERPRET else 30), dtype=torch.uint8, device="cpu" if INTERPRET else "cuda")
    src.random_()
    dst = torch.empty_like(src)
    timing = bench(lambda: dst.copy_(src))
    return {"copy_bytes": 2 * src.numel(), "copy_ms": timing["ms"], "copy_tb_per_s": 2 * src.numel() / timing["ms"] / 1e9}


def run_line(torch, args) -> dict:
    import platform

    import triton

    if INTERPRET:
        gpu, sms = "cpu (TRITON_INTERPRET=1)", 0
    else:
        gpu, sms = torch.cuda.get_device_name(0), torch.cuda.get_device_properties(0).multi_processor_count
    return {"kind": "run", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "gpu": gpu, "sms": sms,
            "triton": triton.__version__, "torch": torch.__version__, "python": platform.python_version(),
            "kernelrules_commit": os.environ.get("KR_COMMIT", "unknown"), "workers": args.workers,
            "compile_timeout_s": COMPILE_TIMEOUT}


def sweep(args) -> None:
    global INTERPRET, WORK
    WORK = Path(args.work).resolve()
    if args.interpret:
        INTERPRET = True
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton is imported; the compile pool's workers start without it
    import torch

    from kernelrules.arch import load_arch
    from kernelrules.compile.cache import ResultCache
    from kernelrules.judge.engine import default_engine
    from kernelrules.compile.pool import CompilePool

    os.environ.setdefault("TRITON_CACHE_DIR", str(WORK / "triton-cache"))
    arch = load_arch(args.arch)
    engine = default_engine()
    misses = count_jit_compiles()
    info = {**run_line(torch, args), **copy_bandwidth(torch)}
    WORK.mkdir(exist_ok=True)
    with open(WORK / "runs.jsonl", "a") as f:
        f.write(json.dumps(info) + "\n")
    print(f"{info['gpu']}, Triton {info['triton']}, torch {info['torch']}: copy {info['copy_tb_per_s']:.2f} TB/s",
          flush=True)
    jobs, index = [], {}
    chosen = []
    for path in problems([name for name in args.families.split(",") if name]):
        try:
            chosen.append(Problem(path, arch, engine))
        except Exception as exc:  # noqa: BLE001 - a space that does not load is reported, the rest are measured
            print(f"{problem_name(path)}: cannot load: {type(exc).__name__}: {exc}", flush=True)
    for problem in chosen:
        done, pending = recorded(problem.name)
        for stale in pending:  # a launch that killed the last run
            problem.out.write({"kind": "config", "config": stale["config"], "compile": {"status": "ok"},
                               "launch": {"status": "crashed", "error": "the process died during this launch"}})
            done.add(config_key(stale["config"]))
        todo = [c for c in problem.configs if config_key(c.to_dict()) not in done]
        if args.limit:
            todo = todo[: args.limit]
        problem.remaining = len(todo)
        for config in todo:
            job = problem.target.job(config, arch, COMPILE_TIMEOUT)
            jobs.append(job)
            index[id(job)] = (problem, config)
        print(f"{problem.name}: {len(problem.configs)} configs, {len(todo)} to measure", flush=True)
    started, measured = time.time(), 0
    pool = CompilePool(max_workers=args.workers, timeout=COMPILE_TIMEOUT, cache=ResultCache(WORK / "krcache"),
                       triton_cache_dir=os.environ["TRITON_CACHE_DIR"])
    with pool:
        os.environ.pop("TRITON_INTERPRET", None)
        pool.start(min(args.workers, max(1, len(jobs))))
        if args.interpret:
            os.environ["TRITON_INTERPRET"] = "1"
        for job, result in pool.run(jobs):
            if time.time() > args.until:
                print("deadline reached", flush=True)
                break
            problem, config = index[id(job)]
            judged = problem.compiled_verdict(config, result)
            compile_record = {"status": "ok" if result.ok else (result.error_kind or "error"),
                              "seconds": round(float(result.compile_seconds or 0.0), 3),
                              "from_cache": bool(result.from_cache), **judged}
            if not result.ok:
                compile_record["message"] = (result.message or "")[:300]
            if problem.runner is None:
                try:
                    line = problem.start(torch)
                    print(f"{problem.name}: baseline {line.get('baseline_ms', line.get('baseline_error'))}",
                          flush=True)
                except Exception as exc:  # noqa: BLE001 - a problem that cannot run is recorded and skipped
                    problem.out.write({"kind": "problem_error", "error": f"{type(exc).__name__}: {exc}"[:500]})
                    print(f"{problem.name}: cannot run: {exc}", flush=True)
                    problem.remaining = -1
            if problem.remaining < 0:
                continue
            problem.out.write(measure(problem, config, compile_record, torch, misses))
            measured += 1
            problem.remaining -= 1
            if problem.remaining == 0:
                problem.stop(torch)
                print(f"{problem.name}: done ({time.time() - started:.0f} s)", flush=True)
    print(f"measured {measured} of {len(jobs)} configs in {time.time() - started:.0f} s", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--until", type=float, default=time.time() + 540, help="absolute deadline (epoch seconds)")
    parser.add_argument("--families", default="", help="comma-separated family or <family>__<shape> names (default: all)")
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    parser.add_argument("--arch", default="h200")
    parser.add_argument("--interpret", action="store_true",
                        help="CPU dry run: compile as usual, launch under TRITON_INTERPRET=1 (timings mean nothing)")
    parser.add_argument("--work", default=str(WORK), help="where the records go (default: .suite-work)")
    parser.add_argument("--limit", type=int, default=0, help="at most this many configs per problem (dry runs)")
    args = parser.parse_args()

    sweep(args)


if __name__ == "__main__":
    main()
