"""Smoke-run suite kernels on the CPU: the correctness gate at one config, small sizes.

    TRITON_INTERPRET=1 python benchmarks/suite_smoke.py [FAMILY ...]

Each family folder of ``benchmarks/suite/`` has a ``smoke.yaml``::

    space: small.tune.yaml          # a space file of the family (its problem section)
    sizes: {M: 64, N: 96}           # problem sizes small enough for the interpreter
    config: {BLOCK_M: 32, num_warps: 4, num_stages: 1}   # one config of the space

The kernel is launched through the same runner ``kernelrules tune`` uses (the space's
problem section or its harness), on outputs poisoned with NaN, and compared with the
float64 reference under the problem's tolerances. Prints one line per family and exits
1 when any family fails. ``tests/suite/test_suite.py`` runs it in CI.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SUITE = Path(__file__).resolve().parent / "suite"


def families() -> list[Path]:
    """Every family folder with a smoke.yaml, sorted by name."""
    return sorted(p.parent for p in SUITE.glob("*/smoke.yaml"))


def smoke(folder: Path) -> str:
    """Run one family's smoke check; returns '' when it passed, else why not."""
    from kernelrules.space import load_space
    from kernelrules.tune.correctness import compare, tolerance_for
    from kernelrules.tune.launch import make_runner, poison_outputs
    from kernelrules.tune.problem import load_problem
    from kernelrules.yamlio import load_file

    doc = load_file(folder / "smoke.yaml").data
    space = load_space(folder / doc["space"])
    spec = load_problem(space)
    sizes = {**spec.sizes, **doc.get("sizes", {})}
    config = {**space.fixed, **doc["config"]}
    missing = [k for k in space.space if k not in config]
    if missing:
        return f"the smoke config lacks {', '.join(missing)}"
    runner = make_runner(spec, "cpu")
    tensors = runner.make(sizes, 0)
    ref64 = runner.reference(tensors, sizes, precise=True)
    try:
        lowp = runner.reference(tensors, sizes, precise=False)
    except Exception:  # noqa: BLE001 - the rounding floor is optional
        lowp = {}
    poison_outputs(runner, tensors)
    runner.launch(config, tensors, sizes)
    rtol, atol = tolerance_for(spec.precision_dtype(), spec.tolerance)
    for name in runner.outputs:
        check = compare(name, tensors[name], ref64[name], rtol=rtol, atol=atol, floor=lowp.get(name))
        if not check["ok"]:
            return check["message"]
    return ""


def main(argv: list[str]) -> int:
    if os.environ.get("TRITON_INTERPRET") != "1":
        print("set TRITON_INTERPRET=1 (the smoke runs the kernels on the CPU)", file=sys.stderr)
        return 2
    wanted = set(argv)
    failed = 0
    for folder in families():
        if wanted and folder.name not in wanted:
            continue
        try:
            why = smoke(folder)
        except Exception as exc:  # noqa: BLE001 - report every family, then fail
            why = f"{type(exc).__name__}: {exc}"
        print(f"{folder.name}: {'ok' if not why else 'FAIL ' + why}", flush=True)
        failed += bool(why)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
