"""Our compiles land under the Triton cache key the JIT computes for the same launch.

A launch (``JITFunction.run`` -> ``_do_compile`` -> ``triton.compile``) looks its kernel
up in ``TRITON_CACHE_DIR`` under ``sha256(triton_key-src.hash()-backend.hash()-
options.hash()-env)``. For a survivor compiled by kernelrules into a shared cache to
be a cache hit in the autotuner, ``compile_job`` must produce that very key, although
it loads the kernel from the file without importing it (``kernelsource``).

The keys are computed on the CPU: a stand-in driver tells the JIT the target (and a
device number), CPU tensors stand for the GPU's, and Triton's ``get_cache_manager`` is
replaced by one that records the key and stops the compile there, on both paths.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernelrules.compile.compilejob import CompileJob, compile_job
from kernelrules.discover.kernelsource import load_kernel
from kernelrules.compile.pool import CompilePool

triton = pytest.importorskip("triton")
torch = pytest.importorskip("torch")
tcc = pytest.importorskip("triton.compiler.compiler")
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.runtime.driver import driver  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
MATMUL = REPO / "examples" / "matmul.py"

ARGS = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn", "stride_cm",
        "stride_cn")
#: The launch of examples/matmul.space.yaml, and one with M, N not divisible by 16 and K == 1.
SPACE_SIGNATURE = dict(M=4096, N=4096, K=4096, stride_am=4096, stride_ak=1, stride_bk=4096, stride_bn=1,
                       stride_cm=4096, stride_cn=1)
ODD_SIGNATURE = dict(M=1000, N=4095, K=1, stride_am=1, stride_ak=1, stride_bk=4095, stride_bn=1,
                     stride_cm=4095, stride_cn=1)
CONFIGS = [
    ({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64}, {"num_warps": 8, "num_stages": 3}),
    ({"BLOCK_M": 64, "BLOCK_N": 32, "BLOCK_K": 32}, {"num_warps": 2, "num_stages": 5}),
]

_names = itertools.count()


class _StandInDriver:
    """What ``JITFunction.run`` asks the active driver, answered without a GPU.

    Each arch gets its own device number: the JIT keeps one binder (made for the
    target of the time) per device.
    """

    def __init__(self) -> None:
        self.arch = 90

    def get_current_target(self):
        return GPUTarget("cuda", self.arch, 32)

    def get_current_device(self):
        return self.arch

    def get_current_stream(self, device=None):
        return 0


class _KeyFound(Exception):
    """Raised where Triton opens its cache directory for a key: the compile stops there."""


@pytest.fixture(autouse=True)
def _tmp_caches(tmp_path, monkeypatch):
    monkeypatch.setenv("KERNELRULES_CACHE_DIR", str(tmp_path / "kernelrules-cache"))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton-cache"))


@pytest.fixture
def stand_in_driver(monkeypatch):
    stand_in = _StandInDriver()
    monkeypatch.setattr(driver, "_active", stand_in)
    return stand_in


@pytest.fixture
def keys(monkeypatch):
    """The cache keys Triton computes in this process, in order (each compile stops at its key)."""
    found: list[str] = []

    def record(key):
        found.append(key)
        raise _KeyFound(key)

    monkeypatch.setattr(tcc, "get_cache_manager", record)
    return found


def _import(path: Path, monkeypatch):
    """Import the user's file as the user's program would."""
    name = f"user_kernels_{next(_names)}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _jit_key(jit_fn, stand_in, keys, arch, args, config, options):
    """The key a launch of ``jit_fn(*args, **config, **options)`` on ``arch`` looks up."""
    stand_in.arch = arch
    with pytest.raises(_KeyFound):
        jit_fn.run(*args, grid=(1,), warmup=True, **config, **options)
    return keys[-1]


def _our_key(path, kernel, signature, config, options, arch, keys, fixed=None):
    """The key ``compile_job`` (what a pool worker runs) compiles under."""
    job = CompileJob(str(path), kernel, signature, config, options, ("cuda", arch, 32), fixed=fixed or {})
    before = len(keys)
    result = compile_job(job, use_triton_cache=True)
    assert len(keys) == before + 1, result.details
    return keys[-1]


def _matmul_args(values):
    pointer = torch.empty(64, dtype=torch.float16)  # CPU allocations are 64-byte aligned, as CUDA's
    return [pointer, pointer, pointer, *(values[name] for name in ARGS[3:])]


def _matmul_spec(values):
    return {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", **values}


@pytest.mark.parametrize("arch", [90, 89])
@pytest.mark.parametrize("values", [SPACE_SIGNATURE, ODD_SIGNATURE], ids=["space", "odd"])
@pytest.mark.parametrize("config, options", CONFIGS, ids=["128x256x64", "64x32x32"])
def test_matmul_key_matches_the_jit(arch, values, config, options, stand_in_driver, keys, monkeypatch):
    jit_fn = _import(MATMUL, monkeypatch).matmul_kernel.fn  # the JITFunction under @triton.autotune
    fixed = {"GROUP_SIZE_M": 8}
    theirs = _jit_key(jit_fn, stand_in_driver, keys, arch, _matmul_args(values), {**config, **fixed}, options)
    ours = _our_key(MATMUL, "matmul_kernel", _matmul_spec(values), config, options, arch, keys, fixed=fixed)
    assert ours == theirs


def test_first_line_is_the_first_decorator(monkeypatch):
    """``starting_line_number`` (hashed into ``JITFunction.cache_key``) is the ``@triton.autotune``
    line that kernelsource strips, as for an import; the source and the key follow."""
    imported = _import(MATMUL, monkeypatch).matmul_kernel.fn
    loaded = load_kernel(MATMUL, "matmul_kernel").fn
    assert MATMUL.read_text().splitlines()[loaded.starting_line_number - 1].startswith("@triton.autotune(")
    assert loaded.starting_line_number == imported.starting_line_number
    assert loaded.src == imported.src
    assert loaded.cache_key == imported.cache_key


DECORATED = '''\
import triton
import triton.language as tl

SCALE = tl.constexpr(2)


@triton.jit
def helper(x):
    return x * SCALE


@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.autotune(
    configs=[triton.Config({"BLOCK": 64}, num_warps=2)],
    key=["n"],
)
@triton.jit(do_not_specialize=["n"], debug=True)
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, helper(tl.load(x_ptr + offs)))
    else:
        tl.store(y_ptr + offs, helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)
'''


def test_stacked_decorators_debug_and_helper(tmp_path, stand_in_driver, keys, monkeypatch):
    """Several decorators (one over several lines), ``debug=True`` and ``do_not_specialize`` on
    the jit decorator, a jit helper reading a module constexpr."""
    path = tmp_path / "decorated.py"
    path.write_text(DECORATED)
    jit_fn = _import(path, monkeypatch).scale.fn.fn  # heuristics -> autotune -> JITFunction
    x = torch.empty(16, dtype=torch.float32)
    config = {"BLOCK": 64, "EVEN": True}
    theirs = _jit_key(jit_fn, stand_in_driver, keys, 90, [x, x, 4096], config, {"num_warps": 2})
    ours = _our_key(path, "scale", {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 4096}, config, {"num_warps": 2}, 90, keys)
    assert ours == theirs


#: DECORATED written with calls (unsloth's form), each ``def`` on the line of its first decorator there.
CALLED = '''\
import triton
import triton.language as tl

SCALE = tl.constexpr(2)


def helper(x):
    return x * SCALE
helper = triton.jit(helper)


def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(y_ptr + offs, helper(tl.load(x_ptr + offs)))
    else:
        tl.store(y_ptr + offs, helper(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)


scale = triton.jit(scale, do_not_specialize=["n"], debug=True)
scale = triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2)], key=["n"])(scale)
scale = triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})(scale)
'''


def test_jit_made_by_calls_keys_as_the_jit_and_as_decorators(tmp_path, stand_in_driver, keys, monkeypatch):
    """``f = triton.jit(f, **options)`` then wrappers: the loaded JITFunction is the one the import
    makes (same source, first line, options, helper), and the compile is the decorated form's."""
    assert CALLED.splitlines()[6] == "def helper(x):" and DECORATED.splitlines()[6] == "@triton.jit"
    assert CALLED.splitlines()[11].startswith("def scale(") and DECORATED.splitlines()[11].startswith("@triton.heur")
    called, decorated = tmp_path / "called.py", tmp_path / "decorated.py"
    called.write_text(CALLED)
    decorated.write_text(DECORATED)
    imported = _import(called, monkeypatch).scale.fn.fn  # heuristics -> autotune -> JITFunction
    loaded = load_kernel(called, "scale").fn
    assert (loaded.__name__, loaded.starting_line_number, loaded.src) == ("scale", 12, imported.src)
    assert loaded.do_not_specialize == imported.do_not_specialize and loaded.debug is True
    assert loaded.cache_key == imported.cache_key == load_kernel(decorated, "scale").fn.cache_key
    x = torch.empty(16, dtype=torch.float32)
    config, signature = {"BLOCK": 64, "EVEN": True}, {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 4096}
    theirs = _jit_key(imported, stand_in_driver, keys, 90, [x, x, 4096], config, {"num_warps": 2})
    ours = _our_key(called, "scale", signature, config, {"num_warps": 2}, 90, keys)
    assert ours == theirs == _our_key(decorated, "scale", signature, config, {"num_warps": 2}, 90, keys)


def test_triton_debug_is_a_launch_option(stand_in_driver, keys, monkeypatch):
    """``TRITON_DEBUG=1`` makes every launch compile with ``debug=True``; so do we."""
    from triton import knobs

    config, options = CONFIGS[1]
    fixed = {"GROUP_SIZE_M": 8}
    jit_fn = _import(MATMUL, monkeypatch).matmul_kernel.fn
    plain = _our_key(MATMUL, "matmul_kernel", _matmul_spec(SPACE_SIGNATURE), config, options, 90, keys, fixed=fixed)
    with knobs.runtime.scope():
        knobs.runtime.debug = True
        theirs = _jit_key(jit_fn, stand_in_driver, keys, 90, _matmul_args(SPACE_SIGNATURE), {**config, **fixed},
                          options)
        ours = _our_key(MATMUL, "matmul_kernel", _matmul_spec(SPACE_SIGNATURE), config, options, 90, keys,
                        fixed=fixed)
    assert ours == theirs != plain


# --------------------------------------------------------------------------- end to end

LAUNCH = '''\
import importlib.util, json, sys
import torch
import triton.compiler.compiler as tcc
from triton.backends.compiler import GPUTarget
from triton.runtime.driver import driver

class StandIn:
    def get_current_target(self): return GPUTarget("cuda", 90, 32)
    def get_current_device(self): return 0
    def get_current_stream(self, device=None): return 0

driver.set_active(StandIn())
make_ir_calls, hashes = [], []

def make_ir(self, *args, **kwargs):
    make_ir_calls.append(self.name)
    raise RuntimeError("cache miss: make_ir ran")

tcc.ASTSource.make_ir = make_ir
real_manager = tcc.get_cache_manager
def manager(key):
    hashes.append(key)
    return real_manager(key)
tcc.get_cache_manager = manager

spec = importlib.util.spec_from_file_location("matmul", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["matmul"] = module
spec.loader.exec_module(module)
p = torch.empty(64, dtype=torch.float16)
error = None
try:
    kernel = module.matmul_kernel.fn.run(p, p, p, 4096, 4096, 4096, 4096, 1, 4096, 1, 4096, 1, grid=(1,), warmup=True,
                                         BLOCK_M=32, BLOCK_N=32, BLOCK_K=32, GROUP_SIZE_M=8, num_warps=4, num_stages=2)
except Exception as exc:
    error = repr(exc)
print(json.dumps({"make_ir": make_ir_calls, "hashes": hashes, "error": error}))
'''


def test_pool_compile_is_a_jit_cache_hit(tmp_path):
    """Compile one config in a pool worker into a Triton cache; a launch of the imported
    kernel in another process with that cache finds it without running the front end."""
    triton_cache = tmp_path / "shared-triton-cache"
    job = CompileJob(str(MATMUL), "matmul_kernel", _matmul_spec(SPACE_SIGNATURE),
                     {"BLOCK_M": 32, "BLOCK_N": 32, "BLOCK_K": 32}, {"num_warps": 4, "num_stages": 2},
                     ("cuda", 90, 32), fixed={"GROUP_SIZE_M": 8})
    with CompilePool(max_workers=1, timeout=240, triton_cache_dir=str(triton_cache)) as pool:
        [(_, result)] = list(pool.run([job]))
    assert result.ok, result.details
    script = tmp_path / "launch.py"
    script.write_text(LAUNCH)
    env = dict(os.environ, TRITON_CACHE_DIR=str(triton_cache))
    env.pop("TRITON_ALWAYS_COMPILE", None)
    done = subprocess.run([sys.executable, str(script), str(MATMUL)], capture_output=True, text=True, env=env,
                          timeout=240, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["make_ir"] == [] and report["error"] is None, report
    assert report["hashes"] == [result.metadata["hash"]]


def test_result_cache_key_follows_triton_debug(monkeypatch):
    """With ``TRITON_DEBUG`` set our compile differs, so kernelrules' own cache key does too."""
    from kernelrules.compile.cache import cache_key

    monkeypatch.delenv("TRITON_DEBUG", raising=False)
    monkeypatch.delenv("TRITON_INSTRUMENTATION_MODE", raising=False)
    job = CompileJob(str(MATMUL), "matmul_kernel", _matmul_spec(SPACE_SIGNATURE), *CONFIGS[0])
    plain = cache_key(job, "source")
    monkeypatch.setenv("TRITON_DEBUG", "1")
    assert cache_key(job, "source") != plain
    monkeypatch.delenv("TRITON_DEBUG")
    assert cache_key(job, "source") == plain


DESCRIPTOR_KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def copy_tile(x_desc, y_desc, n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0) * BLOCK_M
    y_desc.store([row, 0], x_desc.load([row, 0]))
'''


@pytest.mark.parametrize("arch", [90, 89])
def test_tensor_descriptor_key_matches_the_jit(arch, tmp_path, stand_in_driver, keys, monkeypatch):
    """A host TensorDescriptor argument: the signature ``tensordesc<bf16[BLOCK_M, BLOCK_N]>`` (its block
    shape resolved from the config) lands under the key a launch with the real descriptor computes."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    path = tmp_path / "desc_kernel.py"
    path.write_text(DESCRIPTOR_KERNEL)
    jit_fn = _import(path, monkeypatch).copy_tile
    tensor = torch.empty((256, 128), dtype=torch.bfloat16)  # CPU allocations are 64-byte aligned, as CUDA's
    x_desc, y_desc = (TensorDescriptor.from_tensor(tensor, [64, 32]) for _ in range(2))
    config = {"BLOCK_M": 64, "BLOCK_N": 32}
    theirs = _jit_key(jit_fn, stand_in_driver, keys, arch, [x_desc, y_desc, 4096], config, {"num_warps": 4})
    signature = {"x_desc": "tensordesc<bf16[BLOCK_M, BLOCK_N]>", "y_desc": "tensordesc<bf16[64, 32]>", "n": 4096}
    ours = _our_key(path, "copy_tile", signature, config, {"num_warps": 4}, arch, keys)
    assert ours == theirs
    other = _our_key(path, "copy_tile", {**signature, "y_desc": "tensordesc<bf16[64, 64]>"}, config,
                     {"num_warps": 4}, arch, keys)
    assert other != theirs  # the block shape is part of the key


def test_the_gates_edge_shape_compiles_land_where_the_workers_edge_launches_look(stand_in_driver, keys, monkeypatch):
    """``tune``'s gate compiles each candidate at the problem's edge shapes too (kernelrules.tune.edge_shapes), for
    the benchmark worker's correctness launches at those shapes to find in the shared Triton cache: the signature
    derived without torch compiles under the key of the worker's launch with the edge shape's real tensors."""
    from kernelrules.space import load_space
    from kernelrules.tune.edge_shapes import edge_signatures
    from kernelrules.tune.launch import make_runner
    from kernelrules.tune.problem import load_problem

    space = load_space(REPO / "tests" / "fixtures" / "tune" / "matmul_small.yaml")
    spec = load_problem(space)
    [signature] = edge_signatures(spec, space.signature)
    [sizes] = spec.edge_sizes
    runner = make_runner(spec, "cpu")
    tensors = runner.make(sizes, 0)
    config, options = {"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_SIZE_M": 8}, {"num_warps": 4, "num_stages": 2}
    args, _grid = runner._bind({**config, **options}, tensors, sizes)
    jit_fn = _import(MATMUL, monkeypatch).matmul_kernel.fn
    stand_in_driver.arch = 90
    with pytest.raises(_KeyFound):
        jit_fn.run(**args, grid=(1,), warmup=True, **config, **options)
    theirs = keys[-1]
    ours = _our_key(MATMUL, "matmul_kernel", signature, {k: v for k, v in config.items() if k != "GROUP_SIZE_M"},
                    options, 90, keys, fixed={"GROUP_SIZE_M": 8})
    assert ours == theirs
    main = _our_key(MATMUL, "matmul_kernel", dict(space.signature), {k: v for k, v in config.items()
                                                                       if k != "GROUP_SIZE_M"},
                    options, 90, keys, fixed={"GROUP_SIZE_M": 8})
    assert main != theirs  # the edge shape is another binary: the one the main compile leaves is no help
