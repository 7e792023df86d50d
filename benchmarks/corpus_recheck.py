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


def main() -> int:
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
