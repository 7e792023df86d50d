"""How often `tune`'s first guesses (perf model on the configs' values alone) hold the seeds judged after the probes.

    python benchmarks/suite_first_guesses.py [--guesses 8] [--seeds 4] [--arch h200]

For every suite problem: the configs no rule rejects without predictions, ranked by the perf model with no
resource model (the ranking `Tuner._compile_first_guesses` uses: what `kernelrules tune` compiles ahead while
the space is judged, on a machine with compile workers to spare), against the seeds it queues after the probe
compiles (the configs the config stage passes, ranked with the learned resource model). Prints, per problem,
whether the first seed is among the guesses and how many of the first ``--seeds`` seeds are; CPU only (probe
compiles for ``--arch``, no GPU).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from kernelrules.arch import load_arch  # noqa: E402
from kernelrules.space import load_space  # noqa: E402
from kernelrules.tune.gate import Gate  # noqa: E402
from kernelrules.tune.options import perf_model_seeds  # noqa: E402


def compare(path: Path, arch, guesses: int, seeds: int) -> tuple[bool, int]:
    """(first seed among the guesses, how many of the first ``seeds`` seeds are) for one space file."""
    space = load_space(path)
    configs = list(space.configs())
    gate = Gate(space, arch, stage="compiled", jobs=2, timeout=30)
    try:
        early = perf_model_seeds(gate.plain_survivors(configs), arch, dict(space.problem), guesses)
        judged = gate.prejudge(configs)
        passing = [c for c in configs if judged[c.key()].passed]
        real = perf_model_seeds(passing, arch, dict(space.problem), seeds, model=gate.model)
    finally:
        gate.close()
    guessed = {c.key() for c in early}
    return bool(real) and real[0].key() in guessed, sum(c.key() in guessed for c in real)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--guesses", type=int, default=8)
    parser.add_argument("--seeds", type=int, default=4)
    parser.add_argument("--arch", default="h200")
    args = parser.parse_args()
    arch = load_arch(args.arch)
    firsts = held = count = 0
    for path in sorted((REPO / "benchmarks" / "suite").glob("*/*.tune.yaml")):
        first, among = compare(path, arch, args.guesses, args.seeds)
        firsts, held, count = firsts + first, held + among, count + 1
        print(f"{path.parent.name}__{path.name.split('.')[0]}: first seed guessed {'yes' if first else 'no'}, "
              f"{among} of the first {args.seeds} seeds", flush=True)
    print(f"{count} problems, {args.guesses} guesses: the first seed guessed in {firsts}; "
          f"{held} of the first {args.seeds * count} seeds")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
