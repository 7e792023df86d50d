"""Speed of config-stage judging: 100,000 configs with every config-stage rule, one core.

Target (issue 2): under 2 seconds for 100,000 configs. Prints configs per second, and
the ratio to a baseline measured in the same run: the cost of merely building each
config's namespace (the floor any rule evaluation sits on).

    python benchmarks/bench_config_stage.py [N]
"""

from __future__ import annotations

import itertools
import sys
import time

from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.judge.engine import Engine


def configs(n: int) -> list[KernelConfig]:
    """A realistic mixed space: tile sizes (a few not powers of two), warps, stages, options."""
    space = itertools.product(
        [16, 32, 48, 64, 96, 128, 256],  # BLOCK_M
        [16, 32, 64, 128, 256],  # BLOCK_N
        [16, 32, 64, 128],  # BLOCK_K
        [1, 2, 3, 4, 8, 16, 64],  # num_warps
        [1, 2, 3, 4, 5],  # num_stages
        [1, 2],  # num_ctas
        [None, 2],  # waves_per_eu
    )
    out = []
    for bm, bn, bk, warps, stages, ctas, wpe in itertools.islice(itertools.cycle(space), n):
        values = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 8,
                  "num_warps": warps, "num_stages": stages, "num_ctas": ctas}
        if wpe is not None:
            values["waves_per_eu"] = wpe
        out.append(KernelConfig.from_dict(values))
    return out


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    batch = configs(n)
    engine = Engine()
    kernel = {"dtypes": ["fp16", "fp16", "fp32"]}
    print(f"{n} configs, {sum(r.stage == 'config' for r in engine.rules)} config-stage rules")
    for arch_name in ("ada", "hopper"):
        arch = load_arch(arch_name)
        engine.judge_many(batch[:1000], arch, kernel=kernel)  # warm caches
        start = time.perf_counter()
        for config in batch:
            config.namespace(arch.vendor)
        baseline = time.perf_counter() - start
        start = time.perf_counter()
        verdicts = engine.judge_many(batch, arch, kernel=kernel)
        elapsed = time.perf_counter() - start
        rejected = sum(v.rejected for v in verdicts)
        print(f"{arch.name}: {elapsed:.3f} s, {n / elapsed:,.0f} configs/s, {rejected} rejected; "
              f"namespace-only baseline {baseline:.3f} s (judging = {elapsed / baseline:.1f}x baseline); "
              f"target < 2 s: {'met' if elapsed < 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
