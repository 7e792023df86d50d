"""Check every CMP001 of the corpus lint against Triton's own compile at the same specialization.

For each ``CMP001`` finding in the raw reports written by ``benchmarks/corpus_lint.py``
(``DIR/reports/<name>.<arch>.json``), this script **imports** the kernel's module (the
package directory on ``sys.path``; this check, unlike lint, runs corpus code), takes the
real ``JITFunction`` (unwrapping ``@triton.autotune``/``@triton.heuristics``) and calls
``triton.compile(ASTSource(fn, signature, constexprs, attrs), target=GPUTarget("cuda", 90, 32))``
with the signature kernelrules inferred for it (``kernelrules.specify.signatures.infer_signature``,
bf16 where the report says fp16 was retried as bf16), the finding's config and the same
launch options. A finding is *true* when Triton fails too, *false* when Triton compiles
it (a kernelrules false error), *unchecked* when the module cannot be imported.

Dependencies the package imports but that are not installed are replaced by stand-in
modules (every attribute a stand-in) only when the import fails without them; the result
lists them. Each module is checked in its own subprocess.

Usage::

    python benchmarks/corpus_cmp001.py --dir DIR [--only torchao] [--arch sm_90] [--out FILE] [--limit N]
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

_CHILD = r'''
import importlib, importlib.abc, importlib.machinery, json, sys, types
root, module_name, items = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path.insert(0, root)
stubbed = []

class _Stub(types.ModuleType):
    __path__ = []
    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _StubObj()

class _StubObj:
    def __call__(self, *a, **k):
        if len(a) == 1 and callable(a[0]) and not k:
            return a[0]  # a decorator
        return _StubObj()
    def __getattr__(self, name):
        return _StubObj()
    def __mro_entries__(self, bases):
        return (object,)
    def __iter__(self):
        return iter(())
    def __bool__(self):
        return False

def _import(name):
    for _ in range(40):
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as exc:
            missing = exc.name
            if not missing or missing.split(".")[0] == name.split(".")[0]:
                raise
            parts = missing.split(".")
            for i in range(1, len(parts) + 1):
                sub = ".".join(parts[:i])
                if sub not in sys.modules:
                    sys.modules[sub] = _Stub(sub)
            stubbed.append(missing)
            for key in [k for k in sys.modules if k == name or k.startswith(name.split(".")[0] + ".")]:
                if not isinstance(sys.modules[key], _Stub):
                    del sys.modules[key]
    raise ImportError("too many missing modules")

def _bare_parents(name):
    """Register the parent packages as plain modules over their directories (their __init__ not run)."""
    import os
    parts = name.split(".")[:-1]
    for key in [k for k in sys.modules if k == parts[0] or k.startswith(parts[0] + ".")]:
        del sys.modules[key]
    for i in range(1, len(parts) + 1):
        sub = ".".join(parts[:i])
        module = types.ModuleType(sub)
        module.__path__ = [os.path.join(root, *parts[:i])]
        sys.modules[sub] = module
    stubbed.append("__init__ of " + ".".join(parts) + " and its parents not run")

out = []
try:
    module = _import(module_name)
except BaseException as first:
    try:
        _bare_parents(module_name)
        module = _import(module_name)
    except BaseException as exc:
        print(json.dumps({"import_error": f"{type(first).__name__}: {first}; then {type(exc).__name__}: {exc}"[:500],
                          "stubbed": stubbed}))
        raise SystemExit(0)

import triton
from triton.runtime.jit import JITFunction
from kernelrules.compile.compilejob import check_options, launch_options
from kernelrules.compile.specialize import specialize
from triton.backends.compiler import GPUTarget

for item in items:
    fn = getattr(module, item["kernel"], None)
    while fn is not None and not isinstance(fn, JITFunction):
        fn = getattr(fn, "fn", None)
    if fn is None:
        out.append({"verdict": "unchecked", "why": "kernel not found in the imported module"})
        continue
    target = GPUTarget("cuda", item["sm"], 32)
    try:
        spec = specialize(fn, item["signature"], item["constexprs"], target=target)
        options = check_options(target, launch_options(fn, item["options"]))
        triton.compile(spec.ast_source(fn), target=target, options=options)
        out.append({"verdict": "false", "triton": "compiled"})
    except BaseException as exc:
        cause = exc.__cause__ or exc
        lines = [l for l in str(cause).splitlines() if l.strip()]
        out.append({"verdict": "true", "triton": f"{type(cause).__name__}: {lines[-1] if lines else ''}"[:300]})
print(json.dumps({"results": out, "stubbed": stubbed}))
'''

OPTION_KEYS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def module_name(path: str) -> str:
    return path[:-3].replace("/", ".").removesuffix(".__init__")


def signature_of(root: Path, path: str, kernel: str, provenance: dict) -> dict:
    """The runtime signature lint judged ``kernel`` with (no spec in the corpus): inferred, bf16 if retried."""
    from kernelrules.discover.kernels import discover
    from kernelrules.specify.signatures import infer_signature

    found = [k for k in discover([root / path]).kernels if k.name == kernel]
    signature = infer_signature(found[0], spec=None, use_sidecar=False)
    spec = dict(signature.spec)
    for name, source in provenance.items():
        if str(source).startswith("naming (bf16") and spec.get(name) == "*fp16":
            spec[name] = "*bf16"
    return spec


def check(root: Path, report: dict, limit: int | None) -> list[dict]:
    kernels = {(k["path"], k["name"]): k for k in report["kernels"]}
    by_module: dict[str, list[dict]] = collections.defaultdict(list)
    seen = set()
    for f in report["findings"]:
        if f["code"] != "CMP001":
            continue
        key = (f["path"], f["kernel"], json.dumps(f["config"], sort_keys=True), f["arch"])
        if key in seen:
            continue
        seen.add(key)
        config = dict(f["config"] or {})
        item = {"path": f["path"], "kernel": f["kernel"], "arch": f["arch"], "config": f["config"],
                "lint": f["message"][:300], "sm": int(f["arch"].removeprefix("sm_")),
                "options": {k: config.pop(k) for k in OPTION_KEYS if k in config}, "constexprs": config,
                "signature": signature_of(root, f["path"], f["kernel"],
                                          kernels[(f["path"], f["kernel"])]["signature_provenance"])}
        by_module[module_name(f["path"])].append(item)
    checked = []
    for name, items in by_module.items():
        items = items[:limit] if limit else items
        proc = subprocess.run([sys.executable, "-c", _CHILD, str(root), name, json.dumps(items)], cwd=root,
                              capture_output=True, text=True, timeout=1800)
        try:
            answer = json.loads(proc.stdout.strip().splitlines()[-1])
        except (json.JSONDecodeError, IndexError):
            answer = {"import_error": (proc.stderr or "no output")[-300:]}
        for i, item in enumerate(items):
            if "import_error" in answer:
                result = {"verdict": "unchecked", "why": answer["import_error"]}
            else:
                result = answer["results"][i]
            checked.append({**{k: item[k] for k in ("path", "kernel", "arch", "config", "lint", "signature")},
                            **result, "stubbed": answer.get("stubbed", [])})
    return checked


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, required=True, help="the directory corpus_lint.py installed into")
    parser.add_argument("--only", default="")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--limit", type=int, help="at most this many findings per module")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "corpus" / "cmp001_check.json")
    args = parser.parse_args()
    reports = sorted((args.dir / "reports").glob(f"*.{args.arch}.json"))
    names = [n for n in args.only.split(",") if n]
    document = {}
    for path in reports:
        name = path.name.split(".")[0]
        if names and name not in names:
            continue
        report = json.loads(path.read_text())
        if not report:
            continue
        checked = check(args.dir / name, report, args.limit)
        document[name] = {"counts": dict(collections.Counter(c["verdict"] for c in checked)), "findings": checked}
        print(name, document[name]["counts"], flush=True)
    args.out.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
