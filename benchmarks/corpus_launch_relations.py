"""Which corpus kernels' constexpr guesses the launcher relations change, and how their lint ends.

    python benchmarks/corpus_launch_relations.py --dir DIR --only liger,sglang [--out FILE] [--jobs 2]
        [--save-guesses FILE] [--guesses-before FILE]

For each package of ``benchmarks/corpus_lint.py`` (installed under ``DIR/<name>`` as that script
does), resolves every kernel twice without compiling: with the values launchers derive
(:mod:`kernelrules.specify.launch_relations`) and without. Then lints, at the compiled stage for
sm_90 with a fresh cache, only the files holding a kernel whose guesses changed, and compares each
such kernel's status with the package's last full run (``benchmarks/results/corpus/<name>.details.json``):
kernels analyzed there that now need a spec or end in error, kernels with ``CMP001`` or
``CMP002``. Writes one JSON summary per package to ``--out``.

To check a later change to the guesses, save them before it (``--save-guesses`` at the earlier commit)
and compare with them after (``--guesses-before``): only the kernels the change moves are linted.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

import corpus_lint  # noqa: E402


def resolved_guesses(root: Path, paths: list[str]) -> tuple[dict[str, dict | None], dict[str, dict | None]]:
    """Each kernel's constexpr guesses (``"file:kernel"`` -> {name: value}, None where resolving fails),
    with the launchers' derived values and without them."""
    import kernelrules.specify.kernelspec as kernelspec
    from kernelrules.discover.consent import allowing_user_code
    from kernelrules.discover.kernels import discover
    from kernelrules.discover.targetfacts import targeting

    here = os.getcwd()
    os.chdir(root)
    try:
        kernels = [k for k in discover(paths).kernels if not k.is_helper]

        def guesses() -> dict:
            out = {}
            for kernel in kernels:
                try:
                    out[f"{kernel.path}:{kernel.name}"] = dict(kernelspec.resolve(kernel).guessed)
                except Exception:  # noqa: BLE001 - the lint reports it; here only the guesses count
                    out[f"{kernel.path}:{kernel.name}"] = None
            return out

        with allowing_user_code(False), targeting(["nvidia"]):
            new = guesses()
            derive, kernelspec._launch_derived = kernelspec._launch_derived, lambda *a, **k: {}
            try:
                old = guesses()
            finally:
                kernelspec._launch_derived = derive
    finally:
        os.chdir(here)
    return new, old


def guess_changes(new: dict, old: dict) -> dict[tuple[str, str], dict[str, tuple]]:
    """(file, kernel) -> {constexpr: (guess in ``old``, in ``new``)} for kernels whose guesses differ."""
    return {tuple(key.rsplit(":", 1)): {n: (old[key].get(n), v) for n, v in new[key].items() if old[key].get(n) != v}
            for key in new if new[key] is not None and old.get(key) is not None and new[key] != old[key]}


def check(name: str, root: Path, jobs: int, before: dict | None = None, saved: dict | None = None,
          lint: bool = True) -> dict:
    """Lint the files whose kernels' guesses change; compare with the last full run's details.
    ``before``: the guesses an earlier run saved (``--save-guesses``), compared with instead of the guesses
    without derived values; ``saved``: receives this run's guesses."""
    new, old = resolved_guesses(root, corpus_lint.lint_paths(name, root))
    if saved is not None:
        saved[name] = new
    if before is not None:
        new, old = json.loads(json.dumps(new)), before.get(name, {})  # compared as saved (tuples as lists)
    changes = guess_changes(new, old)
    files = sorted({path for path, _ in changes})
    summary: dict = {"package": name, "kernels": len(new), "kernels_changed": len(changes), "files": len(files),
                     # kernels whose guesses could not be resolved (compared neither way): a sign the check broke
                     "unresolved": [sum(v is None for v in new.values()), sum(v is None for v in old.values())],
                     "changes_by_value": collections.Counter(
                         f"{n}: {o} -> {v}" for d in changes.values() for n, (o, v) in d.items()).most_common(12)}
    if not files or not lint:
        return summary
    with tempfile.TemporaryDirectory() as cache:
        start = time.monotonic()
        proc = subprocess.run([*corpus_lint.kernelrules_cmd(), "lint", *files, "--arch", "sm_90", "--format", "json",
                               "--jobs", str(jobs), "--cache-dir", cache], cwd=root, capture_output=True, text=True)
        summary["lint_seconds"] = round(time.monotonic() - start, 1)
    report = json.loads(proc.stdout)
    details = json.loads((REPO / "benchmarks" / "results" / "corpus" / f"{name}.details.json").read_text())
    before_needs = {(k["path"], k["kernel"]) for k in details.get("needs_spec", [])}
    changed = {(path, kernel) for path, kernel in changes}
    kernels = [k for k in report["kernels"] if (k["path"], k["name"]) in changed]
    summary.update({
        "exit_code": proc.returncode, "traceback": "Traceback" in proc.stderr,
        "changed_kernels_linted": len(kernels),
        "statuses": collections.Counter(k["status"] for k in kernels),
        "newly_needs_spec": sorted(f"{k['path']}:{k['name']}: {k['message']}" for k in kernels
                                   if k["status"] == "needs-spec" and (k["path"], k["name"]) not in before_needs),
        "now_analyzed_were_needs_spec": sorted(f"{k['path']}:{k['name']}" for k in kernels if k["status"] == "analyzed"
                                               and (k["path"], k["name"]) in before_needs),
        "errors": sorted(f"{k['path']}:{k['name']}" for k in kernels if k["status"] == "error"),
        "cmp001_findings": sum(1 for f in report["findings"] if f["code"] == "CMP001"),
        "cmp002_findings": sum(1 for f in report["findings"] if f["code"] == "CMP002"),
    })
    return summary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="where corpus_lint.py installs the packages")
    parser.add_argument("--only", default=",".join(corpus_lint.PACKAGES))
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--out", type=Path, default=None, help="write the summaries here as JSON")
    parser.add_argument("--save-guesses", type=Path, default=None,
                        help="write every kernel's guesses here (JSON), for a later run's --guesses-before")
    parser.add_argument("--guesses-before", type=Path, default=None,
                        help="compare with the guesses a run of earlier code saved, not with no derived values")
    parser.add_argument("--no-lint", action="store_true", help="resolve and compare only (with --save-guesses)")
    args = parser.parse_args(argv)
    before = json.loads(args.guesses_before.read_text()) if args.guesses_before else None
    results, saved = [], {}
    for name in args.only.split(","):
        root = args.dir / name
        if not root.exists():
            corpus_lint.install(corpus_lint.PACKAGES[name][0], root)
        results.append(check(name, root, args.jobs, before, saved, not args.no_lint))
        print(json.dumps(results[-1], indent=1), flush=True)
    if args.out:
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    if args.save_guesses:
        args.save_guesses.write_text(json.dumps(saved, indent=0, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
