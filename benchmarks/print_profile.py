"""Print the heaviest entries of a cProfile dump (for profiles taken on the GPU machine).

    python benchmarks/print_profile.py FILE [--sort cumulative|tottime] [--limit 40] [--match kernelrules]
"""

from __future__ import annotations

import argparse
import pstats


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file")
    parser.add_argument("--sort", default="cumulative")
    parser.add_argument("--limit", type=int, default=40)
    parser.add_argument("--match", default="", help="only entries whose file or function name holds this")
    args = parser.parse_args()
    stats = pstats.Stats(args.file)
    stats.sort_stats(args.sort)
    restrictions = [args.match, args.limit] if args.match else [args.limit]
    stats.print_stats(*restrictions)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
