"""Static kernel discovery: kernels, params, autotune configs, problems — without running files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kernelrules.discover.autotune_eval import ConfigEvaluator, ModuleScope, Unsupported
from kernelrules.discover.kernels import discover, iter_python_files

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.py"

MATMUL_SHAPES = [
    (128, 256, 64, 3, 8), (64, 256, 32, 4, 4), (128, 128, 32, 4, 4), (128, 64, 32, 4, 4),
    (64, 128, 32, 4, 4), (128, 32, 32, 4, 4), (64, 32, 32, 5, 2), (32, 64, 32, 5, 2),
    (128, 256, 64, 4, 8), (256, 128, 64, 4, 8), (256, 64, 64, 4, 4), (64, 256, 64, 4, 4),
    (128, 128, 64, 4, 4), (128, 64, 64, 4, 4), (256, 256, 64, 3, 8), (128, 128, 128, 5, 8),
]


def write(tmp_path: Path, body: str, name: str = "k.py") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


def only_kernel(path: Path):
    result = discover([path])
    assert len(result.kernels) == 1, result
    return result.kernels[0], result.problems


HEADER = "import triton\nimport triton.language as tl\n"
KERNEL = """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
"""


def autotuned(configs: str, prelude: str = "") -> str:
    return HEADER + prelude + f"\n@triton.autotune(configs={configs}, key=['n'])" + KERNEL


# --------------------------------------------------------------------------- examples/matmul.py


def test_matmul_example():
    kernel, problems = only_kernel(MATMUL)
    assert problems == []
    assert (kernel.name, kernel.line, kernel.column, kernel.decorator_line) == ("matmul_kernel", 42, 0, 40)
    assert [p.name for p in kernel.params[:3]] == ["a_ptr", "b_ptr", "c_ptr"]
    assert [p.name for p in kernel.params if p.constexpr] == ["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_SIZE_M"]
    assert [p.position for p in kernel.params] == list(range(16))
    assert kernel.params[-1].annotation == "tl.constexpr"
    tune = kernel.autotune
    assert tune is not None and tune.configs_error is None and tune.prune_configs_by is None
    assert tune.key == ["M", "N", "K"] and tune.line == 40
    got = [
        (s.config.constexprs["BLOCK_M"], s.config.constexprs["BLOCK_N"], s.config.constexprs["BLOCK_K"],
         s.config.num_stages, s.config.num_warps)
        for s in tune.configs
    ]
    assert got == MATMUL_SHAPES
    assert all(s.config.constexprs["GROUP_SIZE_M"] == 8 for s in tune.configs)
    assert {(s.line, s.column) for s in tune.configs} == {(35, 8)}
    assert kernel.heuristics == {} and kernel.helpers == [] and kernel.do_not_specialize == []


# --------------------------------------------------------------------------- configs


def configs_of(tmp_path: Path, source: str):
    kernel, problems = only_kernel(write(tmp_path, source))
    assert kernel.autotune is not None
    assert kernel.autotune.configs_error is None, kernel.autotune.configs_error
    assert problems == []
    return [s.config.to_dict() for s in kernel.autotune.configs], kernel.autotune.configs


def test_literal_configs(tmp_path):
    configs, sites = configs_of(tmp_path, autotuned(
        "[\n    triton.Config({'BLOCK': 64}, num_warps=2),\n"
        "    triton.Config(kwargs={'BLOCK': 128}, num_warps=4, num_stages=2),\n"
        "    triton.Config({'BLOCK': 256, 'waves_per_eu': 2}, 8),\n]"))
    assert configs == [{"BLOCK": 64, "num_warps": 2}, {"BLOCK": 128, "num_warps": 4, "num_stages": 2},
                       {"BLOCK": 256, "num_warps": 8, "waves_per_eu": 2}]
    assert sites[2].config.backend_options == {"waves_per_eu": 2}
    assert [(s.line, s.column) for s in sites] == [(5, 4), (6, 4), (7, 4)]


def test_comprehension_configs_nested_with_if_and_constants(tmp_path):
    configs, _ = configs_of(tmp_path, autotuned(
        "[triton.Config({'BLOCK': b * SCALE}, num_warps=w) for b in range(1, 3) for w in WARPS if b * w <= 4]",
        prelude="SCALE = 2 ** 6\nWARPS = (2, 4)\n"))
    assert configs == [{"BLOCK": 64, "num_warps": 2}, {"BLOCK": 64, "num_warps": 4}, {"BLOCK": 128, "num_warps": 2}]


def test_helper_function_configs_with_tuple_unpacking(tmp_path):
    configs, _ = configs_of(tmp_path, autotuned("get_configs()", prelude=(
        "def get_configs(extra=1):\n"
        "    return [triton.Config({'BLOCK': b}, num_warps=w, num_stages=s + extra)\n"
        "            for (b, w), s in itertools.product([(64, 2), (128, 4)], [2])]\n"
        "import itertools\n")))
    assert configs == [{"BLOCK": 64, "num_warps": 2, "num_stages": 3}, {"BLOCK": 128, "num_warps": 4, "num_stages": 3}]


def test_loop_append_helper_and_filter(tmp_path):
    configs, _ = configs_of(tmp_path, autotuned("[c for c in make() if keep(c)]", prelude=(
        "def make():\n"
        "    out = []\n"
        "    for b in [32, 64, 128]:\n"
        "        if b == 32:\n"
        "            continue_ = True\n"
        "        out.append(triton.Config({'BLOCK': b}, num_warps=4))\n"
        "    out += [triton.Config({'BLOCK': 256}, num_warps=8)]\n"
        "    return out\n"
        "def keep(conf):\n"
        "    return conf.kwargs['BLOCK'] >= 64 and conf.num_warps <= 8\n")))
    assert configs == [{"BLOCK": 64, "num_warps": 4}, {"BLOCK": 128, "num_warps": 4}, {"BLOCK": 256, "num_warps": 8}]


def test_unparseable_configs_keep_the_kernel(tmp_path):
    source = autotuned(
        "[triton.Config({'BLOCK': 64}, num_warps=4)] if torch.cuda.get_device_capability()[0] >= 9 else []",
        prelude="import torch\n")
    kernel, problems = only_kernel(write(tmp_path, source))
    assert kernel.name == "k" and kernel.autotune.configs == []
    assert "torch.cuda.get_device_capability()" in kernel.autotune.configs_error
    assert "spec file" in kernel.autotune.configs_error
    assert [p.kind for p in problems] == ["unparseable-autotune"]
    assert problems[0].line == 5


def test_step_limit_stops_runaway_helpers():
    import ast

    tree = ast.parse("def f():\n    out = []\n    for i in range(10**5):\n        out.append(i)\n    return out\n")
    scope = ModuleScope({}, {"f": tree.body[0]}, lambda d: d)
    with pytest.raises(Unsupported, match="steps"):
        ConfigEvaluator(scope, step_limit=1000).configs(ast.parse("f()", mode="eval").body)


def test_evaluator_rejects_unknown_calls_and_attributes():
    import ast

    scope = ModuleScope({}, {}, lambda d: d)
    for text, message in [("os.system('x')", "os.system"), ("[x.y for x in [1]]", "attribute"), ("open('f')", "open")]:
        with pytest.raises(Unsupported, match=message):
            ConfigEvaluator(scope).configs(ast.parse(text, mode="eval").body)


# --------------------------------------------------------------------------- decorators and aliases


def test_heuristics_prune_and_order(tmp_path):
    source = HEADER + (
        "\n@triton.heuristics({'EVEN': lambda args: args['n'] % args['BLOCK'] == 0})"
        "\n@triton.autotune(configs=[triton.Config({'BLOCK': 64})], key=['n'], prune_configs_by={'early_config_prune': f})"
        "\n@triton.jit"
        "\ndef k(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):\n    pass\n")
    kernel, problems = only_kernel(write(tmp_path, source))
    assert problems == []
    assert kernel.heuristics == {"EVEN": "lambda args: args['n'] % args['BLOCK'] == 0"}
    assert kernel.autotune.prune_configs_by == "{'early_config_prune': f}"
    assert kernel.decorator_line == 4 and kernel.line == 7


def test_do_not_specialize_by_name_and_index(tmp_path):
    source = HEADER + (
        "@triton.jit(do_not_specialize=['n'])\ndef a(x_ptr, n, m):\n    pass\n"
        "@triton.jit(do_not_specialize=[2, 0])\ndef b(x_ptr, n, m):\n    pass\n")
    result = discover([write(tmp_path, source)])
    assert [(k.name, k.do_not_specialize) for k in result.kernels] == [("a", ["n"]), ("b", ["m", "x_ptr"])]


def test_aliases(tmp_path):
    source = (
        "import triton as tt\nfrom triton import jit, autotune, Config\n"
        "from triton.language import constexpr\nimport triton.language as language\n"
        "@autotune([Config({'B': 16}, num_warps=1)], ['n'])\n@jit\n"
        "def a(x, n, B: constexpr, C: 'tl.constexpr', D: language.constexpr):\n    pass\n"
        "@tt.autotune(configs=[tt.Config({'B': 32})], key=[])\n@tt.jit()\n"
        "def b(x, B: tt.language.constexpr):\n    pass\n")
    result = discover([write(tmp_path, source)])
    a, b = result.kernels
    assert result.problems == []
    assert [p.name for p in a.params if p.constexpr] == ["B", "C", "D"]
    assert a.autotune.configs[0].config.to_dict() == {"B": 16, "num_warps": 1} and a.autotune.key == ["n"]
    assert [p.constexpr for p in b.params] == [False, True]
    assert b.autotune.configs[0].config.to_dict() == {"B": 32}


def test_helpers_and_constexpr_globals(tmp_path):
    source = HEADER + (
        "SCALE = tl.constexpr(4)\nLIMIT = 2 * 8\nUNUSED = 1\nOBJ = object()\n"
        "@triton.jit\ndef inner(x):\n    return x * LIMIT\n"
        "@triton.jit\ndef middle(x):\n    return inner(x) + OBJ\n"
        "@triton.jit\ndef k(x_ptr):\n    tl.store(x_ptr, middle(tl.load(x_ptr)) * SCALE)\n")
    result = discover([write(tmp_path, source)])
    kernel = result.by_name("k")[0]
    assert kernel.helpers == ["middle", "inner"]
    assert kernel.constexpr_globals == {"LIMIT": 16, "SCALE": 4}


def test_non_jit_functions_are_not_kernels(tmp_path):
    source = "import numba\nfrom numba import jit\n@jit\ndef f(x):\n    return x\n@numba.jit\ndef g(x):\n    return x\n"
    result = discover([write(tmp_path, source)])
    assert result.kernels == [] and result.problems == []


# --------------------------------------------------------------------------- files


def test_syntax_error_is_a_problem(tmp_path):
    write(tmp_path, "import triton\n@triton.jit\ndef k(:\n", name="bad.py")
    write(tmp_path, HEADER + KERNEL, name="good.py")
    result = discover([tmp_path])
    assert [k.name for k in result.kernels] == ["k"]
    assert len(result.problems) == 1
    problem = result.problems[0]
    assert problem.kind == "syntax-error" and problem.path.name == "bad.py" and problem.line == 3
    assert "bad.py:3" in str(problem)


def test_directory_walk_is_sorted_and_skips_hidden(tmp_path):
    for rel in ["b.py", "a/z.py", "a/y.py", ".hidden/h.py", "__pycache__/c.py", ".venv/v.py", "notes.txt"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(HEADER + KERNEL)
    files = [p.relative_to(tmp_path).as_posix() for p in iter_python_files([tmp_path, tmp_path / "b.py"])]
    assert files == ["a/y.py", "a/z.py", "b.py"]
    assert len(discover([tmp_path]).kernels) == 3


# --------------------------------------------------------------------------- corpus hardening


def test_environment_reads_take_their_default(tmp_path):
    source = HEADER + """
import os
_OFF = os.environ.get("MY_AUTOTUNE", "1").lower() in ("0", "false")
_W = int(os.getenv("MY_WARPS", "4"))
configs = [triton.Config({"BLOCK": 64}, num_warps=_W)] if _OFF else [
    triton.Config({"BLOCK": b}, num_warps=_W) for b in (64, 128)]

@triton.autotune(configs=configs, key=["n"])
""" + KERNEL
    kernel, problems = only_kernel(write(tmp_path, source))
    assert problems == []
    assert [(s.config.constexprs["BLOCK"], s.config.num_warps) for s in kernel.autotune.configs] == [(64, 4), (128, 4)]


def test_constant_that_reads_its_own_earlier_assignment(tmp_path):
    source = HEADER + """
configs = [(64, 32, 4), (128, 64, 8)]
configs = [triton.Config(dict(BLOCK=b, BLOCK_K=k), num_warps=w) for b, k, w in configs]

@triton.autotune(configs=configs, key=["n"])
""" + KERNEL
    kernel, problems = only_kernel(write(tmp_path, source))
    assert problems == []
    assert [s.config.constexprs["BLOCK"] for s in kernel.autotune.configs] == [64, 128]
    assert {s.line for s in kernel.autotune.configs} == {5}


def test_configs_imported_from_the_same_package(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "common.py").write_text(textwrap.dedent("""
        import triton
        def make(warps):
            return [triton.Config({"BLOCK": b}, num_warps=w) for b in (32, 64) for w in warps]
        shared = [triton.Config({"BLOCK": 256}, num_warps=8)]
    """))
    absolute = HEADER + "from pkg.common import make\n@triton.autotune(configs=make([4]), key=['n'])\n" + KERNEL
    relative = HEADER + "from ..common import shared as cfgs\n@triton.autotune(configs=cfgs, key=['n'])\n" + KERNEL
    a, problems_a = only_kernel(write(pkg / "sub", absolute, name="a.py"))
    b, problems_b = only_kernel(write(pkg / "sub", relative, name="b.py"))
    assert problems_a == [] and problems_b == []
    assert [s.config.constexprs["BLOCK"] for s in a.autotune.configs] == [32, 64]
    assert [s.config.constexprs["BLOCK"] for s in b.autotune.configs] == [256]
    # configs that live in another file are reported where this file uses them
    assert {s.line for s in a.autotune.configs} == {4} and {s.line for s in b.autotune.configs} == {4}


def test_unknown_import_still_unparseable(tmp_path):
    source = HEADER + "from elsewhere import cfgs\n@triton.autotune(configs=cfgs, key=['n'])\n" + KERNEL
    kernel, problems = only_kernel(write(tmp_path, source))
    assert kernel.autotune.configs_error and [p.kind for p in problems] == ["unparseable-autotune"]


def test_jit_function_passed_as_combine_fn_is_a_helper(tmp_path):
    source = HEADER + """
@triton.jit
def _add(a, b):
    return a + b

@triton.jit
def scan_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, tl.associative_scan(x, 0, _add), mask=offs < n)
"""
    result = discover([write(tmp_path, source)])
    kernels = {k.name: k for k in result.kernels}
    assert kernels["scan_kernel"].helpers == ["_add"]
    assert kernels["_add"].is_helper and kernels["_add"].called_by == ["k.py:scan_kernel"]
    assert not kernels["scan_kernel"].is_helper


def test_jit_helper_imported_from_another_file_is_a_helper(tmp_path):
    write(tmp_path, HEADER + "@triton.jit\ndef element_mul(p, n):\n    tl.store(p, tl.load(p) * n)\n", name="utils.py")
    write(tmp_path, HEADER + "from .utils import element_mul\n" + """
@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    element_mul(x_ptr + tl.program_id(0), n)
""", name="ops.py")
    result = discover([tmp_path])
    kernels = {k.name: k for k in result.kernels}
    assert kernels["k"].helpers == ["element_mul"]
    assert kernels["element_mul"].is_helper and kernels["element_mul"].called_by == ["ops.py:k"]


def test_source_segments_of_params_and_heuristics(tmp_path):
    source = HEADER + """
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def k(x_ptr, n, BLOCK: "tl.constexpr" = 128, EVEN: tl.constexpr = False):
    pass
"""
    kernel, problems = only_kernel(write(tmp_path, source))
    assert kernel.heuristics == {"EVEN": 'lambda args: args["n"] % args["BLOCK"] == 0'}
    assert kernel.param("BLOCK").annotation == '"tl.constexpr"' and kernel.param("BLOCK").default == 128


# --------------------------------------------------------------------------- jit functions made by calls


CALL_FORMS = HEADER + """
def _twice(x):
    return x * 2
_twice = triton.jit(_twice)


def _forward(x_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, _twice(tl.load(x_ptr + offs)))
_forward = triton.jit(_forward, do_not_specialize=("n",))
_forward = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(_forward)


def _impl(x_ptr, n, m, BLOCK: tl.constexpr):
    pass
kernel = triton.jit(do_not_specialize=[2])(_impl)
tuned = triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2)], key=["n"])(
    triton.jit(_impl))


@triton.jit
def decorated(x_ptr, n, BLOCK: tl.constexpr):
    pass
decorated_tuned = triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])(decorated)
"""


def test_call_forms_are_kernels_under_the_names_launches_use(tmp_path):
    result = discover([write(tmp_path, CALL_FORMS)])
    assert result.problems == []
    kernels = {k.name: k for k in result.kernels}
    # the def each name is made from gives its line and params; `_impl` itself is a plain function
    assert [(k.name, k.line) for k in result.kernels] == [
        ("_twice", 4), ("_forward", 9), ("kernel", 16), ("tuned", 16), ("decorated", 24), ("decorated_tuned", 24)]
    forward = kernels["_forward"]
    assert [p.name for p in forward.params] == ["x_ptr", "n", "BLOCK", "EVEN"]
    assert [p.name for p in forward.params if p.constexpr] == ["BLOCK", "EVEN"]
    assert forward.heuristics == {"EVEN": 'lambda args: args["n"] % args["BLOCK"] == 0'}
    assert forward.do_not_specialize == ["n"] and forward.autotune is None
    assert forward.decorator_line == 13  # the outermost wrapper, as the top decorator would be
    assert forward.helpers == ["_twice"] and not forward.is_helper
    # a jit function returning a value and called by a kernel is a helper, under its bound name
    assert kernels["_twice"].is_helper and kernels["_twice"].called_by == ["k.py:_forward"]
    assert kernels["kernel"].do_not_specialize == ["m"] and kernels["kernel"].autotune is None
    assert [kernels[n].def_name for n in ("_forward", "kernel", "tuned", "decorated_tuned")] == [
        "_forward", "_impl", "_impl", "decorated"]  # what Triton's JITFunction (and a trace) calls it
    assert [p.name for p in kernels["kernel"].params] == ["x_ptr", "n", "m", "BLOCK"]
    tuned = kernels["tuned"]
    assert tuned.autotune.key == ["n"] and tuned.do_not_specialize == []
    assert [s.config.to_dict() for s in tuned.autotune.configs] == [{"BLOCK": 32, "num_warps": 2}]
    assert (tuned.autotune.line, tuned.decorator_line) == (19, 19)
    # a decorated kernel wrapped under another name is both: the bare one and the autotuned one
    assert kernels["decorated"].autotune is None
    assert [s.config.to_dict() for s in kernels["decorated_tuned"].autotune.configs] == [{"BLOCK": 64}]


def test_call_forms_under_aliases_and_rewraps_of_decorated_kernels(tmp_path):
    source = (
        "import triton as tt\nfrom triton import jit as J, heuristics\nimport triton.language as tl\n"
        "def a(x, B: tl.constexpr):\n    pass\na = J(a)\n"
        "def b(x, B: tl.constexpr, E: tl.constexpr):\n    pass\n"
        "b = heuristics({'E': lambda args: True})(tt.jit(b))\n"
        "@tt.jit\ndef c(x, B: tl.constexpr):\n    pass\n"
        "c = tt.autotune(configs=[tt.Config({'B': 16})], key=[])(c)\n")
    result = discover([write(tmp_path, source)])
    assert result.problems == []
    assert [(k.name, k.line) for k in result.kernels] == [("a", 4), ("b", 7), ("c", 11)]
    a, b, c = result.kernels
    assert a.heuristics == {} and b.heuristics == {"E": "lambda args: True"}
    assert [s.config.to_dict() for s in c.autotune.configs] == [{"B": 16}] and c.decorator_line == 13


def test_calls_that_do_not_make_jit_functions(tmp_path):
    source = HEADER + (
        "import numba\nimport functools\n"
        "def f(x):\n    pass\nf = numba.jit(f)\n"                        # not triton's jit
        "def g(x):\n    pass\ng = triton.jit(g)\ng = functools.lru_cache(g)\n"  # rebound to something else
        "def h(x):\n    pass\nh = triton.jit(h, *opts)\n"                 # arguments not read
        "k = triton.jit(undefined)\nm = triton.jit(lambda x: x)\n"       # no def of the module
        "@functools.cache\ndef n(x):\n    pass\nn = triton.jit(n)\n"      # a decorated def
        "def p(x):\n    pass\nq = triton.heuristics({})(p)\n")           # a wrapper without jit
    result = discover([write(tmp_path, source)])
    assert result.kernels == [] and result.problems == []


def test_files_that_never_say_triton_are_not_parsed(tmp_path):
    """Most files of a package are not Triton code: without the word, no jit function, no parse (and so no
    syntax error reported for them); a module read for its constants is still parsed when asked for."""
    write(tmp_path, "def f(:\n", name="not_triton.py")
    write(tmp_path, "BLOCKS = [32, 64]\n", name="consts.py")
    write(tmp_path, HEADER + KERNEL, name="good.py")
    result = discover([tmp_path])
    assert [k.name for k in result.kernels] == ["k"] and result.problems == []
    from kernelrules.discover.kernels import ParsedModule, cached_module

    assert isinstance(cached_module(tmp_path / "consts.py"), ParsedModule)
    assert "BLOCKS" in cached_module(tmp_path / "consts.py").constants
