"""Lint six pinned third-party Triton packages at the compiled stage, cold then warm (issue 14).

Each package is installed with ``pip install --no-deps --target DIR/<name> PKG==VER``
(never vendored, torch never pulled), then linted from inside its install directory, so
every path in the output is relative::

    kernelrules lint <package dir> --arch sm_90 --format json --jobs 2 --cache-dir <fresh tmp dir>

once with a fresh compile cache (cold) and once more with the same cache (warm). The
summary of each package goes to ``benchmarks/results/corpus/<name>.json`` and the table
of docs/corpus-results.md is made from those files; the raw lint reports stay in
``DIR/reports/`` (``benchmarks/corpus_cmp001.py`` reads them).

Usage::

    python benchmarks/corpus_lint.py [--dir DIR] [--only liger,torchao] [--arch sm_90] [--jobs 2] [--no-warm]
    python benchmarks/corpus_lint.py --table      # the markdown table from benchmarks/results/corpus/
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "corpus"

#: name -> (requirement, directories linted, relative to the install directory; note)
PACKAGES: dict[str, tuple[str, list[str], str]] = {
    "liger": ("liger-kernel==0.8.5", ["liger_kernel"], ""),
    "torchao": ("torchao==0.18.0", ["torchao"], "the wheel's test/ directory is not linted"),
    "flag_gems": ("flag-gems==5.0.2", ["flag_gems"],
                  "runtime/backend/_<vendor> directories for non-NVIDIA hardware (Ascend, Cambricon, Kunlunxin, "
                  "...) are not linted; runtime/backend/_nvidia is"),
    "unsloth": ("unsloth==2026.10.9", ["unsloth", "studio"], ""),
    "sglang": ("sglang==0.5.23", ["sglang"], ""),
    "fla": ("fla-core==0.6.0", ["fla"], "flash-linear-attention's kernels (PyPI fla-core)"),
}

#: needs-spec message -> reason kind
REASONS = [
    ("needs-another-triton", re.compile(r"needs another Triton")),
    ("tensor-descriptor-arguments", re.compile(r"tensor descriptors? \(")),
    ("runtime-arguments-without-evidence", re.compile(r"no launch signature for")),
    ("guessed-constexprs-do-not-compile", re.compile(r"no config compiles with the guessed constexpr")),
    ("guessed-argument-types-do-not-compile", re.compile(r"no config compiles with the guessed arguments")),
    ("helper-module-not-found", re.compile(r"is imported from .* which kernelrules cannot find")),
    ("name-not-resolved", re.compile(r"is not defined as kernelrules reads|as Triton would at launch")),
]


def lint_paths(name: str, root: Path) -> list[str]:
    """The paths linted for one package, relative to its install directory."""
    _req, dirs, _note = PACKAGES[name]
    if name != "flag_gems":
        return dirs
    backend = root / "flag_gems" / "runtime" / "backend"
    paths = []
    for entry in sorted((root / "flag_gems").iterdir()):
        if entry.name == "runtime":
            for sub in sorted(entry.iterdir()):
                if sub.name == "backend":
                    paths += [str(p.relative_to(root)) for p in sorted(backend.iterdir())
                              if not (p.is_dir() and p.name.startswith("_") and p.name not in ("_nvidia", "__pycache__"))]
                elif sub.name != "__pycache__":
                    paths.append(str(sub.relative_to(root)))
        elif entry.name != "__pycache__" and (entry.is_dir() or entry.suffix == ".py"):
            paths.append(str(entry.relative_to(root)))
    return paths


def install(requirement: str, target: Path) -> None:
    if (target / ".installed").exists():
        return
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--quiet", "--disable-pip-version-check",
                    "--target", str(target), requirement], check=True, timeout=1200)
    (target / ".installed").write_text(requirement)


def kernelrules_cmd() -> list[str]:
    exe = Path(sys.executable).with_name("kernelrules")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "kernelrules"]


def run_lint(root: Path, paths: list[str], arch: str, jobs: int, cache: Path) -> tuple[dict | None, str, int, float]:
    """The lint's JSON report, its stderr, exit code and wall seconds."""
    return timed_lint(root, paths, arch, jobs, cache)[:4]


def children_cpu_seconds() -> float:
    """User + system CPU seconds of the children this process has waited for (the lint and, through it,
    its compile workers)."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_lint(root: Path, paths: list[str], arch: str, jobs: int,
               cache: Path) -> tuple[dict | None, str, int, float, float]:
    """:func:`run_lint` and the CPU seconds the lint used: on a machine shared with other jobs the wall
    time is mostly waiting, the CPU time much less so."""
    cpu = children_cpu_seconds()
    cmd = kernelrules_cmd() + ["lint", *paths, "--arch", arch, "--format", "json", "--jobs", str(jobs),
                               "--cache-dir", str(cache)]
    env = dict(os.environ, KERNELRULES_CACHE_DIR=str(cache))
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=root, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - start
    cpu = children_cpu_seconds() - cpu
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        report = None
    return report, proc.stderr, proc.returncode, seconds, cpu


def reason_kind(message: str) -> str:
    for kind, pattern in REASONS:
        if pattern.search(message or ""):
            return kind
    return "other"


def jit_functions(root: Path, paths: list[str]) -> dict[str, int]:
    """jit functions discovered and how many of them are helpers (read only, nothing imported)."""
    from kernelrules.discover.kernels import discover

    found = discover([root / p for p in paths])
    return {"jit_functions": len(found.kernels), "helpers": sum(bool(k.is_helper) for k in found.kernels),
            "files": len({k.path for k in found.kernels})}


def clean(text: str | None, root: Path) -> str | None:
    """``text`` without this machine's paths: the install directory and Python's prefix."""
    if text is None:
        return None
    for prefix, shown in ((str(root.resolve()) + "/", ""), (str(root) + "/", ""), (sys.prefix, "<python>"),
                          (sys.base_prefix, "<python>"), (tempfile.gettempdir() + "/", "<tmp>/")):
        text = text.replace(prefix, shown)
    return text


def summarize(name: str, report: dict | None, stderr: str, rc: int, root: Path = Path("/")) -> tuple[dict, dict]:
    if report is None:
        return {"exit_code": rc, "error": clean(stderr[-2000:], root)}, {}
    kernels = report["kernels"]
    status = collections.Counter(k["status"] for k in kernels)
    needs = [k for k in kernels if k["status"] == "needs-spec"]
    cmp = [f for f in report["findings"] if f["code"] == "CMP001"]
    summary = {
        "kernels_linted": len(kernels),
        "analyzed_compiled": sum(k["status"] == "analyzed" and any(r.get("stage") == "compiled" for r in k["results"])
                                 for k in kernels),
        "analyzed": status.get("analyzed", 0),
        "analyzed_with_guessed_constexprs": sum(k["status"] == "analyzed" and "guessed constexpr" in (k["message"] or "")
                                                for k in kernels),
        "needs_spec": status.get("needs-spec", 0),
        # Kernels of modules that cannot be imported with the installed Triton (another build's names):
        # not launchable with it, so not counted among the launchable kernels below.
        "for_another_triton": sum(reason_kind(k["message"]) == "needs-another-triton" for k in needs),
        "needs_spec_reasons": dict(collections.Counter(reason_kind(k["message"]) for k in needs).most_common()),
        "kernel_errors": status.get("error", 0),
        "findings_by_code": dict(sorted(collections.Counter(f["code"] for f in report["findings"]).items())),
        "kernels_with_cmp001": len({(f["path"], f["kernel"]) for f in cmp}),
        "tracebacks": stderr.count("Traceback"),
        "exit_code": rc,
    }
    details = {
        "needs_spec": [{"path": k["path"], "kernel": k["name"], "reason": reason_kind(k["message"]),
                        "message": clean(k["message"], root)} for k in needs],
        "errors": [{"path": k["path"], "kernel": k["name"], "message": clean(k["message"], root)}
                   for k in kernels if k["status"] == "error"],
        "cmp001": [{"path": f["path"], "kernel": f["kernel"], "line": f["line"], "arch": f["arch"],
                    "config": f["config"], "message": clean(f["message"], root)} for f in cmp],
    }
    return summary, details


def commit() -> str:
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "kernelrules"], cwd=REPO, capture_output=True,
                               text=True).stdout.strip()
        return head + ("+uncommitted kernelrules/ changes" if dirty else "")
    except OSError:
        return "unknown"


ORDER = list(PACKAGES)


def launchable(doc: dict) -> int:
    """Kernels that can be launched with the installed Triton: all linted but those of modules for another build."""
    return doc["kernels_linted"] - doc.get("for_another_triton", 0)


def table(out: Path) -> str:
    """The markdown table of docs/corpus-results.md, from the committed summaries."""
    docs = [json.loads((out / f"{n}.json").read_text()) for n in ORDER if (out / f"{n}.json").exists()]
    docs = [d for d in docs if "kernels_linted" in d]
    pct = lambda a, b: f"{a} ({100 * a / b:.0f} %)" if b else "0"  # noqa: E731
    rows = [
        ("jit functions found (helpers)", lambda d: f"{d['jit_functions']} ({d['helpers']})"),
        ("kernels linted", lambda d: str(d["kernels_linted"])),
        ("of which in modules for another Triton build", lambda d: str(d.get("for_another_triton", 0))),
        ("**analyzed at the compiled stage, no spec** (share of the launchable)",
         lambda d: f"**{pct(d['analyzed_compiled'], launchable(d))}**"),
        ("of which with guessed constexprs", lambda d: str(d["analyzed_with_guessed_constexprs"])),
        ("needs-spec", lambda d: str(d["needs_spec"])),
        *[(f"needs-spec: {kind}", (lambda k: lambda d: str(d["needs_spec_reasons"].get(k, 0)))(kind))
          for kind, _ in REASONS + [("other", None)]],
        ("kernels with CMP001", lambda d: str(d["kernels_with_cmp001"])),
        ("kernels in status error / tracebacks / exit code",
         lambda d: f"{d['kernel_errors']} / {d['tracebacks']} / {d['exit_code']}"),
        ("findings by code", lambda d: ", ".join(f"{v} {k}" for k, v in d["findings_by_code"].items())),
        ("cold / warm wall time (2 workers)", lambda d: f"{d['cold_seconds']:.0f} s / "
                                                      + ("-" if d["warm_seconds"] is None else f"{d['warm_seconds']:.0f} s")),
    ]
    head = "| | " + " | ".join(d["package"].replace("==", " ") for d in docs) + " | all |"
    lines = [head, "|---" * (len(docs) + 2) + "|"]
    for label, cell in rows:
        total = ""
        if label.startswith(("kernels linted", "needs-spec", "kernels with", "of which")):
            total = str(sum(int(cell(d)) for d in docs))
        elif label.startswith("**analyzed"):
            total = f"**{pct(sum(d['analyzed_compiled'] for d in docs), sum(launchable(d) for d in docs))}**"
        lines.append(f"| {label} | " + " | ".join(cell(d) for d in docs) + f" | {total} |")
    return "\n".join(lines)


def main() -> int:
    if "--table" in sys.argv:
        print(table(RESULTS))
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, help="install directory (kept); default: a temporary one")
    parser.add_argument("--only", default="", help="comma-separated package names: " + ",".join(PACKAGES))
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--no-warm", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args()
    import triton

    base = args.dir or Path(tempfile.mkdtemp(prefix="kr-corpus-"))
    (base / "reports").mkdir(parents=True, exist_ok=True)
    args.out.mkdir(parents=True, exist_ok=True)
    names = [n for n in args.only.split(",") if n] or list(PACKAGES)
    for name in names:
        requirement, _dirs, note = PACKAGES[name]
        root = base / name
        install(requirement, root)
        paths = lint_paths(name, root)
        cache = Path(tempfile.mkdtemp(prefix=f"kr-cache-{name}-"))
        try:
            report, stderr, rc, cold, cold_cpu = timed_lint(root, paths, args.arch, args.jobs, cache)
            (base / "reports" / f"{name}.{args.arch}.json").write_text(json.dumps(report))
            (base / "reports" / f"{name}.{args.arch}.stderr").write_text(stderr)
            warm = warm_cpu = None
            if not args.no_warm and report is not None:
                report2, stderr2, rc2, warm, warm_cpu = timed_lint(root, paths, args.arch, args.jobs, cache)
                if report2 != report:
                    print(f"{name}: the warm report differs from the cold one", file=sys.stderr)
        finally:
            shutil.rmtree(cache, ignore_errors=True)
        summary, details = summarize(name, report, stderr, rc, root)
        document = {
            "package": requirement, "linted": paths if len(paths) <= 8 else f"{len(paths)} paths under flag_gems/",
            "note": note, "date": datetime.date.today().isoformat(), "triton": triton.__version__,
            "kernelrules_commit": commit(), "arch": args.arch, "stage": "compiled", "jobs": args.jobs,
            "cpu_count": os.cpu_count(),
            "command": f"kernelrules lint {' '.join(paths) if len(paths) <= 8 else '<paths>'} --arch {args.arch} "
                       f"--format json --jobs {args.jobs} --cache-dir <fresh tmp dir>",
            **jit_functions(root, paths), **summary,
            "cold_seconds": round(cold, 1), "warm_seconds": None if warm is None else round(warm, 1),
            "cold_cpu_seconds": round(cold_cpu, 1), "warm_cpu_seconds": None if warm_cpu is None else round(warm_cpu, 1),
        }
        (args.out / f"{name}.json").write_text(json.dumps(document, indent=1) + "\n")
        (args.out / f"{name}.details.json").write_text(json.dumps(details, indent=1) + "\n")
        print(json.dumps({k: document.get(k) for k in ("package", "kernels_linted", "analyzed", "needs_spec",
                                                         "kernel_errors", "kernels_with_cmp001", "tracebacks",
                                                         "exit_code", "cold_seconds", "warm_seconds")}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
