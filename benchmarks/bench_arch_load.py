"""Time to load every built-in architecture profile (cold, caches cleared), against a baseline measured in
the same run: reading the same files and parsing them with PyYAML's C loader, without validation or
resolution.

    python benchmarks/bench_arch_load.py [ROUNDS]

Prints the best of ROUNDS (default 5) for both and their ratio. Target (issue 2): under 100 ms on 2 cores.
"""

from __future__ import annotations

import sys
import time

import yaml

import kernelrules.arch as arch_module
from kernelrules.arch import list_archs


def best_of(rounds: int, func) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        func()
        best = min(best, time.perf_counter() - start)
    return best


def load_all() -> None:
    for cached in (arch_module._registry, arch_module._parsed, arch_module._located, arch_module._builtin_sources):
        cached.cache_clear()
    list_archs()


def parse_only() -> None:
    """The same profile files, read and parsed by PyYAML's C loader, nothing else."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    arch_module._builtin_sources.cache_clear()
    for source in arch_module._builtin_sources():
        yaml.load(source.text, Loader=loader)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    profiles, baseline = best_of(rounds, load_all), best_of(rounds, parse_only)
    print(f"load all profiles: {profiles * 1000:.1f} ms; read + parse the YAML only: {baseline * 1000:.1f} ms; "
          f"ratio {profiles / baseline:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
