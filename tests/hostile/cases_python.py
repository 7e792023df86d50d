"""Hostile Python kernel files for ``lint``, ``spec``, ``check-config --kernel`` and ``prune``.

A file that cannot be read or parsed (bad bytes, a wrong coding cookie, NUL bytes, syntax
errors, nesting Python's parser refuses) must be one ``LNT004`` finding for that file while
the good file beside it is still judged; an autotune list kernelrules will not evaluate
(huge values, recursion, calls it does not know, wrong types) must be a finding (``LNT002``)
or a judged config, never an internal error, a hang or gigabytes of memory.
"""

from __future__ import annotations

from . import inputs
from .model import DIRECTORY, FIFO, JUDGED, REFUSED, Case, symlink

LINT = ("lint", ".", "--arch", "hopper", "--stage", "config", "--format", "json")


def _configs(configs: str, header: str = "") -> str:
    return inputs.KERNEL_WITH_CONFIGS.format(configs=configs, header=header)


def _unreadable() -> list[tuple[str, object]]:
    """Files that are not Python kernelrules can parse: each must be LNT004 (file-error)."""
    deep_parens = "x = " + "(" * 300 + "1" + ")" * 300 + "\n"  # past the parser's 200-level limit
    # A file that never says "triton" is not parsed (discover.py), so each text variant imports it.
    return [(name, "import triton\n" + content if isinstance(content, str) else content) for name, content in [
        ("syntax-error", "def k(:\n    pass\n"),
        ("unterminated-string", "x = 'no end\n"),
        ("bad-indent", "def f():\nreturn 1\n"),
        ("undecodable", b"x = '\xff\xfe'\n"),
        ("latin1-no-cookie", inputs.KERNEL.encode() + "# caf\xe9\n".encode("latin-1")),
        ("unknown-cookie", b"# -*- coding: no-such-codec -*-\n" + inputs.KERNEL.encode()),
        ("bom-and-latin1-cookie", b"\xef\xbb\xbf# -*- coding: latin-1 -*-\n" + inputs.KERNEL.encode()),
        ("nul-byte", inputs.KERNEL.encode() + b"x = 1\x00\n"),
        ("utf16", inputs.KERNEL.encode("utf-16")),
        ("deep-parens", deep_parens),
        ("deep-unary", "x = " + "-" * 200000 + "1\n"),
        ("deep-list", "x = " + "[" * 100000 + "]" * 100000 + "\n"),
        ("deep-binop", "x = " + "+".join(["1"] * 200000) + "\n"),
        ("deep-call", "x = " + "f(" * 100000 + ")" * 100000 + "\n"),
        ("binary-garbage", bytes((i * 151 + 7) % 256 for i in range(8192))),
        ("fifo", FIFO),
        ("symlink-loop", symlink("bad.py")),
    ]]


def _judged() -> list[tuple[str, str, str]]:
    """(variant, file content, finding) for files kernelrules reads and judges: valid but odd or huge
    Python, and autotune lists it must refuse to evaluate (LNT002) or judge."""
    constants = "".join(f"C{i} = {i * 7919}\n" for i in range(60000))  # ~1 MB of module constants
    return [
        ("latin1-with-cookie", b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + inputs.KERNEL.encode(), ""),
        ("utf8-bom", b"\xef\xbb\xbf" + inputs.KERNEL.encode(), ""),
        ("crlf", inputs.KERNEL.replace("\n", "\r\n"), ""),
        ("cr-only", inputs.KERNEL.replace("\n", "\r"), ""),
        ("empty-file", "", ""),
        ("deep-blocks", "import triton\n" + "".join(" " * i + "if x:\n" for i in range(120)) + " " * 120 + "pass\n", ""),
        ("huge-line", inputs.KERNEL + "S = '" + "x" * 900000 + "'\n", ""),
        ("megabyte-of-constants", constants + inputs.KERNEL, ""),
        ("huge-comment-block", inputs.KERNEL + ("# " + "z" * 78 + "\n") * 12000, ""),
        ("huge-int-block", _configs('[triton.Config({"BLOCK": 10 ** 100})]'), ""),
        ("int-past-bounds", _configs('[triton.Config({"BLOCK": 2 ** 100000})]'), "LNT002"),
        ("power-chain", _configs('[triton.Config({"BLOCK": A})]', "A = 10 ** 64\nB = A ** 64\nC = B ** 64\n"), ""),
        ("power-tower", _configs('[triton.Config({"BLOCK": 2 ** 2 ** 2 ** 2 ** 2 ** 2})]'), "LNT002"),
        ("string-repetition", _configs('[triton.Config({"BLOCK": 64, "S": "x" * 3_000_000_000})]'), "LNT002"),
        ("list-repetition", _configs('[triton.Config({"BLOCK": 64})] * 10 ** 9'), "LNT002"),
        ("huge-range", _configs('[triton.Config({"BLOCK": b}) for b in range(10 ** 9)]'), "LNT002"),
        ("nested-comprehension",
         _configs('[triton.Config({"BLOCK": b}) for a in range(10 ** 5) for b in range(10 ** 5)]'), "LNT002"),
        ("recursion", _configs("make(1)", "def make(n):\n    return make(n + 1)\n"), ""),
        ("non-literal-call", _configs("load_configs()", "from mypkg import load_configs\n"), ""),
        ("configs-a-dict", _configs('{"BLOCK": 64}'), ""),
        ("configs-a-string", _configs('"BLOCK=64"'), ""),
        ("configs-none", _configs("None"), ""),
        ("configs-empty", _configs("[]"), ""),
        ("config-not-a-dict", _configs('[triton.Config(64)]'), ""),
        ("true-block", _configs('[triton.Config({"BLOCK": True})]'), ""),
        ("negative-block", _configs('[triton.Config({"BLOCK": -64})]'), ""),
        ("zero-block", _configs('[triton.Config({"BLOCK": 0})]'), ""),
        ("nan-block", _configs('[triton.Config({"BLOCK": float("nan")})]'), ""),
        ("inf-block", _configs('[triton.Config({"BLOCK": float("inf")})]'), ""),
        ("string-block", _configs('[triton.Config({"BLOCK": "64"})]'), ""),
        ("none-block", _configs('[triton.Config({"BLOCK": None})]'), ""),
        ("list-block", _configs('[triton.Config({"BLOCK": [64]})]'), ""),
        ("negative-warps", _configs('[triton.Config({"BLOCK": 64}, num_warps=-4)]'), ""),
        ("odd-warps", _configs('[triton.Config({"BLOCK": 64}, num_warps=3)]'), ""),
        ("huge-warps", _configs('[triton.Config({"BLOCK": 64}, num_warps=2 ** 40)]'), ""),
        ("negative-stages", _configs('[triton.Config({"BLOCK": 64}, num_stages=-1)]'), ""),
        ("huge-maxnreg", _configs('[triton.Config({"BLOCK": 64}, maxnreg=10 ** 12)]'), ""),
        ("unknown-kwarg", _configs('[triton.Config({"BLOCK": 64}, bogus=1)]'), ""),
        ("division-by-zero", _configs('[triton.Config({"BLOCK": 64 // 0})]'), ""),
        ("many-configs", _configs('[triton.Config({"BLOCK": 2 ** (b % 8 + 4)}, num_warps=4) for b in range(5000)]'),
         ""),
        ("huge-heuristic", inputs.KERNEL.replace("@triton.jit", '@triton.heuristics({"BLOCK": lambda a: 2 ** 10 ** 10})'
                                                               "\n@triton.jit"), ""),
        ("hostile-prune", inputs.KERNEL.replace('key=["n"])', 'key=["n"], prune_configs_by={"early_config_prune": '
                                                              'lambda c, n, **kw: [x for x in c] * 10 ** 9})'), ""),
        ("hostile-key", inputs.KERNEL.replace('key=["n"]', 'key="n" * 10 ** 9'), ""),
        ("hostile-default", inputs.KERNEL.replace("BLOCK: tl.constexpr)", "BLOCK: tl.constexpr = 'x' * 10 ** 10)"), ""),
    ]


def python_cases() -> list[Case]:
    found = []
    for variant, content in _unreadable():
        found.append(Case(name=f"python/lint/{variant}", argv=LINT, files={"bad.py": content, "k.py": inputs.KERNEL},
                          expect=JUDGED, exits=(1,), finding="LNT004", message='"status": "analyzed"',
                          group="python:lint"))
        if variant not in ("fifo", "symlink-loop"):
            found.append(Case(name=f"python/spec/{variant}", argv=("spec", "bad.py", "-o", "out.yaml"),
                              files={"bad.py": content}, message="bad.py", group="python:spec"))
            found.append(Case(name=f"python/check-kernel/{variant}",
                              argv=("check-config", "--arch", "hopper", "--kernel", "bad.py", "--no-compile",
                                    "BLOCK=64"), files={"bad.py": content}, message="bad.py",
                              group="python:check-config"))
    for variant, content, finding in _judged():
        found.append(Case(name=f"python/lint/{variant}", argv=LINT, files={"k.py": content}, expect=JUDGED,
                          finding=finding, group="python:lint"))
    for variant in ("huge-line", "megabyte-of-constants", "power-chain", "recursion", "many-configs"):
        content = dict((v, c) for v, c, _ in _judged())[variant]
        found.append(Case(name=f"python/spec/{variant}", argv=("spec", "k.py", "-o", "-"), files={"k.py": content},
                          expect=JUDGED, exits=(0,), message="kernels:", group="python:spec"))
    space = inputs.SPACE
    for variant, content in _unreadable()[:6]:
        found.append(Case(name=f"python/prune-kernel/{variant}", argv=("prune", "s.yaml", "--arch", "hopper"),
                          files={"s.yaml": space, "k.py": content}, message="k.py", group="python:prune"))
    found += [
        Case(name="python/lint/missing-path", argv=("lint", "nowhere.py", "--arch", "hopper", "--stage", "config"),
             message="nowhere.py: no such file", group="python:lint"),
        Case(name="python/lint/directory-of-bad-files", argv=LINT, files={f"d/bad{i}.py": c for i, (_, c) in
             enumerate(_unreadable()[:12])}, expect=JUDGED, exits=(1,), finding="LNT004", group="python:lint"),
        Case(name="python/lint/not-python-suffix", argv=("lint", "k.txt", "--arch", "hopper", "--stage", "config"),
             files={"k.txt": inputs.KERNEL}, expect=JUDGED, group="python:lint"),
        Case(name="python/lint/fifo-named-explicitly", argv=LINT[:1] + ("f.py",) + LINT[2:],
             files={"f.py": FIFO}, expect=JUDGED, exits=(1,), finding="LNT004", group="python:lint"),
        Case(name="python/spec/directory", argv=("spec", "d"), files={"d": DIRECTORY}, message="d: no such file",
             group="python:spec"),
        Case(name="python/spec/no-kernels", argv=("spec", "k.py", "-o", "out.yaml"), files={"k.py": "x = 1\n"},
             message="no @triton.jit kernels", group="python:spec"),
        Case(name="python/spec/refuses-overwrite", argv=("spec", "k.py", "-o", "out.yaml"),
             files={"k.py": inputs.KERNEL, "out.yaml": "mine\n"}, message="not overwriting", group="python:spec"),
        Case(name="python/spec/output-in-missing-dir", argv=("spec", "k.py", "-o", "no/such/dir/out.yaml"),
             files={"k.py": inputs.KERNEL}, message="out.yaml", group="python:spec"),
        Case(name="python/spec/output-is-a-directory", argv=("spec", "k.py", "-o", "d", "--force"),
             files={"k.py": inputs.KERNEL, "d": DIRECTORY}, message="d", group="python:spec"),
        Case(name="python/check-kernel/no-such-function",
             argv=("check-config", "--arch", "hopper", "--kernel", "k.py:nope", "--no-compile", "BLOCK=64"),
             files={"k.py": inputs.KERNEL}, message="nope", group="python:check-config"),
    ]
    return found
