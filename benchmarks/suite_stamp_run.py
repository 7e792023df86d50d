"""Copy a live tune run's JSON, stamped with the kernelrules commit it ran and the date (UTC).

    python3 benchmarks/suite_stamp_run.py RUN.json OUT.json [--variant old|head|head-do_bench]

The commit comes from ``KR_COMMIT`` (``suite_live_tune.sh``), or with ``--variant`` from
``KR_COMMIT_<OLD|HEAD>`` (``suite_live_ab.sh``, which also records the variant); ``unknown`` when unset.
"""

from __future__ import annotations

import argparse
import json
import os
import time


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run")
    parser.add_argument("out")
    parser.add_argument("--variant", default=None)
    args = parser.parse_args()
    with open(args.run) as handle:
        run = json.load(handle)
    if args.variant:
        run["variant"] = args.variant
        commit = os.environ.get("KR_COMMIT_" + args.variant.split("-")[0].upper(), "unknown")
    else:
        commit = os.environ.get("KR_COMMIT", "unknown")
    run.update(kernelrules_commit=commit, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    with open(args.out, "w") as handle:
        json.dump(run, handle)


if __name__ == "__main__":
    main()
