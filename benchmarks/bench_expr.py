"""Micro benchmark of compiled rule conditions against hand-written Python.

Times ``compile_expr`` evaluators of a few typical conditions over 100,000
environments (varied configs on two architectures) and, in the same run, a
plain Python function computing the same thing, then prints evaluations per
second and the ratio. Not a test: numbers depend on the machine.

    python benchmarks/bench_expr.py [--envs N] [--repeat R]
"""

from __future__ import annotations

import argparse
import random
import time
from typing import Any, Callable, Mapping

from kernelrules.expr import FUNCTIONS, compile_expr, parse

Env = Mapping[str, Any]
is_pow2 = FUNCTIONS["is_pow2"].impl
non_pow2 = FUNCTIONS["non_pow2"].impl

#: (name, condition, equivalent plain Python)
CASES: list[tuple[str, str, Callable[[Env], Any]]] = [
    (
        "warps/ctas",
        "config.num_warps not in [1, 2, 4, 8, 16, 32] or config.num_ctas > 1 and arch.sm < 90",
        lambda e: e["config"]["num_warps"] not in (1, 2, 4, 8, 16, 32)
        or e["config"]["num_ctas"] > 1
        and e["arch"]["sm"] < 90,
    ),
    (
        "threads",
        "config.num_warps * arch.warp_size > arch.max_threads_per_block",
        lambda e: e["config"]["num_warps"] * e["arch"]["warp_size"] > e["arch"]["max_threads_per_block"],
    ),
    (
        "smem",
        "(config.BLOCK_M + config.BLOCK_N) * config.BLOCK_K * 2 * config.num_stages > arch.smem_per_block",
        lambda e: (e["config"]["BLOCK_M"] + e["config"]["BLOCK_N"])
        * e["config"]["BLOCK_K"]
        * 2
        * e["config"]["num_stages"]
        > e["arch"]["smem_per_block"],
    ),
    (
        "pow2 call",
        "not is_pow2(config.num_warps)",
        lambda e: not is_pow2(e["config"]["num_warps"]),
    ),
    (
        "non_pow2",
        "len(non_pow2(config.blocks)) > 0",
        lambda e: len(non_pow2(e["config"]["blocks"])) > 0,
    ),
]

ARCHS = [
    {"sm": 80, "warp_size": 32, "max_threads_per_block": 1024, "smem_per_block": 166912},
    {"sm": 90, "warp_size": 32, "max_threads_per_block": 1024, "smem_per_block": 232448},
]


def make_envs(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` environments with varied configs over the two architectures."""
    rng = random.Random(seed)
    envs = []
    for _ in range(count):
        blocks = {name: rng.choice([16, 32, 48, 64, 96, 128, 256]) for name in ("BLOCK_M", "BLOCK_N", "BLOCK_K")}
        config = {
            **blocks,
            "blocks": blocks,
            "num_warps": rng.choice([1, 2, 3, 4, 8, 16, 32, 64]),
            "num_ctas": rng.choice([1, 1, 1, 2]),
            "num_stages": rng.choice([1, 2, 3, 4, 5]),
        }
        envs.append({"config": config, "arch": rng.choice(ARCHS), "facts": {}, "problem": {}, "kernel": {}})
    return envs


def rate(run: Callable[[Env], Any], envs: list[dict[str, Any]], repeat: int) -> float:
    """Best evaluations per second over ``repeat`` passes."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        for env in envs:
            run(env)
        best = min(best, time.perf_counter() - start)
    return len(envs) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    envs = make_envs(args.envs)
    print(f"{args.envs} environments, best of {args.repeat}")
    print("ratio = plain Python rate / compiled rate (how many times slower the compiled condition is)")
    print(f"{'case':<12} {'compiled/s':>12} {'python/s':>12} {'ratio':>6} {'ns/eval':>8}  condition")
    for name, text, baseline in CASES:
        run = compile_expr(parse(text))
        assert all(run(env) == baseline(env) for env in envs[:1000]), name
        ours, theirs = rate(run, envs, args.repeat), rate(baseline, envs, args.repeat)
        print(f"{name:<12} {ours:>12,.0f} {theirs:>12,.0f} {theirs / ours:>6.2f} {1e9 / ours:>8.0f}  {text}")


if __name__ == "__main__":
    main()
