"""Fold a device run's ``.suite-work`` into the committed truth, ``benchmarks/results/suite/``.

    python benchmarks/suite_merge.py suite-work.tgz      # the archive benchmarks/suite_device.sh wrote

Per problem, ``config`` lines already in the results are kept and new ones appended
(a config measured twice keeps its first record); ``pending`` lines whose config was
later recorded are dropped; ``problem`` and ``run`` lines are appended as they are.
Prints what it added per problem.
"""

from __future__ import annotations

import io
import json
import sys
import tarfile
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "suite"


def parse(text: str) -> list[dict]:
    out = []
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return out


def merge(name: str, new: list[dict]) -> int:
    """Append the new lines of one file; returns how many config lines were added."""
    path = RESULTS / name
    old = parse(path.read_text()) if path.exists() else []
    key = lambda r: json.dumps(r.get("config"), sort_keys=True)  # noqa: E731
    seen = {key(r) for r in old if r.get("kind") == "config"}
    finished = seen | {key(r) for r in new if r.get("kind") == "config"}
    added, lines = 0, []
    for record in new:
        kind = record.get("kind")
        if kind == "config":
            if key(record) in seen:
                continue
            seen.add(key(record))
            added += 1
        elif kind == "pending" and key(record) in finished:
            continue
        lines.append(record)
    kept = [r for r in old if not (r.get("kind") == "pending" and key(r) in finished)]
    RESULTS.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in kept + lines))
    tmp.replace(path)
    return added


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    with tarfile.open(argv[0]) as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.endswith(".jsonl"):
                continue
            text = tar.extractfile(member).read().decode()
            name = Path(member.name).name
            added = merge(name, parse(io.StringIO(text).getvalue()))
            print(f"{name}: {added} configs added")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
