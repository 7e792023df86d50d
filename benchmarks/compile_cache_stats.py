"""Where a cold lint's compile work went, read back from its compile cache (issue 14).

    kernelrules lint PKG --arch sm_90 --format json --jobs 2 --cache-dir DIR     # cold, a fresh DIR
    python benchmarks/compile_cache_stats.py DIR [--json OUT]

Every cache entry holds one compile's result: its artifacts, Triton's metadata, the worker's
compile and analysis seconds, and the file's time of writing. From them this prints:

- entries, compile and analysis worker-seconds, and the ptxas share (``Compile time`` in the
  ptxas logs);
- **stage twins**: configs of a loop-free kernel (no ``scf.for``/``scf.while`` in the TTIR) that
  differ only in ``num_stages``, grouped by kernel, warps and TTIR; whether each group's PTX,
  cubin and facts are identical (:mod:`kernelrules.compile.stage_twins` relies on it);
- **duplicate cubins**: the worker-seconds spent on entries whose cubin another entry has;
- **the LDL/STL reader**: :func:`kernelrules.analyzers.cubin.local_memory_access` against the
  facts of every successful entry (the disassembly's figures, in a cache made before the reader);
- **busy workers**: per minute of the run, how many compiles were running on average (from each
  entry's time of writing back over its compile and analysis seconds). Timeouts are never
  cached, so they do not show; stage-twin answers are written with their twin's seconds, so
  they overcount a run made with stage twins.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import re
import sys
from pathlib import Path

from kernelrules.analyzers import cubin
from kernelrules.compile.cache import _decode

LOOP = re.compile(r"\bscf\.(?:for|while)\b")
PTXAS_TIME = re.compile(r"Compile time = ([\d.]+) ms")


def entries(directory: Path) -> list[tuple[float, object]]:
    """(time of writing, result) of every readable entry."""
    found = []
    for path in directory.rglob("*.krc"):
        try:
            found.append((path.stat().st_mtime, _decode(path.read_bytes())))
        except (OSError, ValueError):
            continue
    return sorted(found, key=lambda item: item[0])


def twin_groups(results: list) -> dict:
    """Loop-free stage-twin groups: how many, how many identical, the kernels and their worker-seconds."""
    groups = collections.defaultdict(list)
    for r in results:
        if r.ok and "ttir" in r.asm and not LOOP.search(r.asm["ttir"]):
            ttir = re.sub(r"#loc\d*.*", "", r.asm["ttir"])
            groups[(r.metadata.get("name"), r.metadata.get("num_warps"), hashlib.sha1(ttir.encode()).hexdigest())].append(r)
    twins = {k: v for k, v in groups.items() if len({r.metadata.get("num_stages") for r in v}) > 1}
    identical = 0
    for members in twins.values():
        digests = {(hashlib.sha1(r.asm["ptx"].encode()).hexdigest(), hashlib.sha1(r.asm.get("cubin", b"")).hexdigest(),
                    json.dumps(r.facts, sort_keys=True, default=str)) for r in members}
        identical += len(digests) == 1
    return {"groups": len(twins), "identical": identical, "kernels": len({k[0] for k in twins}),
            "entries": sum(len(v) for v in twins.values()),
            "seconds_beyond_one_per_group": round(sum(r.compile_seconds + r.analysis_seconds
                                                      for v in twins.values() for r in v[1:]), 1)}


def duplicate_cubins(results: list) -> dict:
    """Entries whose cubin an earlier entry has, and the worker-seconds they took."""
    seen, count, seconds = set(), 0, 0.0
    for r in results:
        if not r.ok or "cubin" not in r.asm:
            continue
        digest = hashlib.sha1(r.asm["cubin"]).hexdigest()
        if digest in seen:
            count += 1
            seconds += r.compile_seconds + r.analysis_seconds
        seen.add(digest)
    return {"entries": count, "seconds": round(seconds, 1)}


def ldl_reader(results: list) -> dict:
    """The cubin reader against the entries' facts: agreements, disagreements, cubins it declined."""
    agree = disagree = declined = 0
    for r in results:
        if not r.ok or "cubin" not in r.asm or "local_memory_ops" not in r.facts:
            continue
        got = cubin.local_memory_access(r.asm["cubin"])
        want = (r.facts["local_memory_ops"], r.facts.get("spill_stores"), r.facts.get("spill_loads"))
        if got is None:
            declined += 1
        elif got == want:
            agree += 1
        else:
            disagree += 1
    return {"agree": agree, "disagree": disagree, "declined": declined}


def busy_by_minute(timed: list[tuple[float, object]]) -> list[float]:
    """Average compiles running per minute of the run."""
    spans = [(end - r.compile_seconds - r.analysis_seconds, end) for end, r in timed]
    start = min(s for s, _ in spans)
    seconds = [0.0] * (int(max(e for _, e in spans) - start) + 1)
    for s, e in spans:
        s, e = s - start, e - start
        for i in range(int(s), min(int(e) + 1, len(seconds))):
            seconds[i] += max(0.0, min(e, i + 1) - max(s, i))
    return [round(sum(seconds[m:m + 60]) / len(seconds[m:m + 60]), 2) for m in range(0, len(seconds), 60)]


def stats(directory: Path) -> dict:
    timed = entries(directory)
    results = [r for _, r in timed]
    ptxas = sum(float(m.group(1)) / 1000 for r in results if r.ok
                for m in [PTXAS_TIME.search(r.asm.get("ptxas_log", ""))] if m)
    return {"entries": len(results), "ok": sum(r.ok for r in results),
            "compile_seconds": round(sum(r.compile_seconds for r in results), 1),
            "analysis_seconds": round(sum(r.analysis_seconds for r in results), 1),
            "ptxas_seconds": round(ptxas, 1), "stage_twins": twin_groups(results),
            "duplicate_cubins": duplicate_cubins(results), "ldl_stl_reader": ldl_reader(results),
            "busy_workers_by_minute": busy_by_minute(timed) if timed else []}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args(argv)
    figures = stats(args.cache)
    text = json.dumps(figures, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
