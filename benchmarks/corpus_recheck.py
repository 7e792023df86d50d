"""Lint again only the corpus kernels that were not analyzed (issue 14's fast loop).

The full corpus run (``benchmarks/corpus_lint.py``) takes about two hours on 2 cores. Work on
the needs-spec reasons only needs the files that hold those kernels: this script reads
``benchmarks/results/corpus/<name>.details.json``, lints each such file again from its
package's install directory (same command as the full run, at the compiled stage), and
prints, per kernel, the status before and now. Kernels analyzed before are not re-checked
here (the full run and the corpus tests cover them).

Usage::

    python benchmarks/corpus_recheck.py --dir DIR [--only sglang,fla] [--reason guessed-constexprs-do-not-compile]
                                        [--jobs 2] [--out FILE.json]

``DIR`` is the install directory of ``corpus_lint.py --dir`` (packages are installed there if
missing). The summary line counts kernels now analyzed, still needs-spec (by reason), in
error, and with CMP001.

    python benchmarks/corpus_recheck.py --table RESULTS_DIR

prints the table of docs/corpus-results.md's re-check from the committed rows in
``RESULTS_DIR/<package>.json`` (one ``--out`` file per package) and the committed full run:
the kernels the full run analyzed are counted as analyzed still (this script does not
re-lint them).
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_lint  # noqa: E402  (a sibling script)


def previous(name: str) -> list[dict]:
    """The kernels of ``name`` that were not analyzed in the committed full run."""
    details = json.loads((corpus_lint.RESULTS / f"{name}.details.json").read_text())
    return details["needs_spec"] + [dict(e, reason="error") for e in details["errors"]]


def recheck(name: str, base: Path, reasons: set[str], arch: str, jobs: int) -> list[dict]:
    """Lint the files of the not-analyzed kernels of ``name`` again; one row per kernel."""
    requirement, _dirs, _note = corpus_lint.PACKAGES[name]
    root = base / name
    corpus_lint.install(requirement, root)
    before = [k for k in previous(name) if not reasons or k["reason"] in reasons]
    paths = sorted({k["path"] for k in before if (root / k["path"]).exists()})
    if not paths:
        return []
    cache = Path(tempfile.mkdtemp(prefix=f"kr-recheck-{name}-"))
    try:
        report, stderr, rc, seconds = corpus_lint.run_lint(root, paths, arch, jobs, cache)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    if report is None:
        print(f"{name}: no report (exit {rc}): {stderr[-500:]}", file=sys.stderr)
        return []
    now = {(k["path"], k["name"]): k for k in report["kernels"]}
    cmp001 = {(f["path"], f["kernel"]) for f in report["findings"] if f["code"] == "CMP001"}
    rows = []
    for k in before:
        new = now.get((k["path"], k["kernel"]))
        status = new["status"] if new else "missing"
        rows.append({"package": name, "path": k["path"], "kernel": k["kernel"], "before": k["reason"],
                     "status": status,
                     "reason": corpus_lint.reason_kind(new["message"]) if status == "needs-spec" else None,
                     "message": corpus_lint.clean(new["message"], root) if new and status != "analyzed" else None,
                     "cmp001": (k["path"], k["kernel"]) in cmp001})
    print(f"{name}: {len(paths)} files, {seconds:.0f} s, exit {rc}, tracebacks {stderr.count('Traceback')}",
          file=sys.stderr)
    return rows


def table(results: Path) -> str:
    """Per package: launchable kernels, analyzed in the full run, analyzed now, what still needs a spec."""
    lines = ["| package | launchable | analyzed, full run | of the rest, analyzed now | analyzed now (share) "
             "| still needs-spec (launchable), by reason | CMP001 / errors |", "|---|---|---|---|---|---|---|"]
    totals = collections.Counter()
    for name in corpus_lint.ORDER:
        full = json.loads((corpus_lint.RESULTS / f"{name}.json").read_text())
        rows_path = results / f"{name}.json"
        if not rows_path.exists():
            continue
        rows = json.loads(rows_path.read_text())
        launchable = corpus_lint.launchable(full)
        before = full["analyzed_compiled"]
        gained = sum(r["status"] == "analyzed" for r in rows)
        still = collections.Counter(r["reason"] for r in rows
                                    if r["status"] == "needs-spec" and r["reason"] != "needs-another-triton")
        bad = f"{sum(r['cmp001'] for r in rows)} / {sum(r['status'] == 'error' for r in rows)}"
        totals.update(launchable=launchable, before=before, gained=gained, still=sum(still.values()))
        reasons = ", ".join(f"{v} {k}" for k, v in still.most_common())
        lines.append(f"| {full['package']} | {launchable} | {before} | {gained} | {before + gained} "
                     f"({100 * (before + gained) / launchable:.1f} %) | {sum(still.values())}: {reasons} | {bad} |")
    now = totals["before"] + totals["gained"]
    lines.append(f"| **all** | {totals['launchable']} | {totals['before']} | {totals['gained']} | **{now} "
                 f"({100 * now / max(1, totals['launchable']):.1f} %)** | {totals['still']} | |")
    return "\n".join(lines)


def main() -> int:
    if len(sys.argv) == 3 and sys.argv[1] == "--table":
        print(table(Path(sys.argv[2])))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="install directory of corpus_lint.py --dir")
    parser.add_argument("--only", default="", help="comma-separated package names: " + ",".join(corpus_lint.PACKAGES))
    parser.add_argument("--reason", default="", help="comma-separated needs-spec reasons to re-check (default: all)")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, help="write the rows as JSON here")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(corpus_lint.PACKAGES)
    reasons = {r for r in args.reason.split(",") if r}
    rows = []
    for name in names:
        rows += recheck(name, args.dir, reasons, args.arch, args.jobs)
    for row in rows:
        if row["status"] != "analyzed":
            print(f"{row['package']} {row['path']}:{row['kernel']}: {row['status']} ({row['reason']}) "
                  f"{(row['message'] or '')[:300]}")
    counts = collections.Counter(r["status"] for r in rows)
    still = collections.Counter(r["reason"] for r in rows if r["status"] == "needs-spec")
    print(json.dumps({"rechecked": len(rows), "analyzed_now": counts.get("analyzed", 0),
                      "needs_spec_now": counts.get("needs-spec", 0), "errors_now": counts.get("error", 0),
                      "cmp001_now": sum(r["cmp001"] for r in rows), "needs_spec_reasons": dict(still.most_common()),
                      "commit": corpus_lint.commit()}))
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
