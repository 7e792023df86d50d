"""Names a kernel's cross-compile needs from across its package, resolved without importing it
(issue 14, "names across modules").

Each test writes a small package into ``tmp_path``: namespace packages (a directory without
``__init__.py``), ``@X.jit`` decorators of other libraries, values computed at import time that
kernelrules can decide (calls of the package's own functions, ``try``/``except ImportError``
fallbacks, target platform facts), and modules outside the package read by a kernel (``torch``).
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from kernelrules.discover.kerneldeps import kernel_dependencies

triton = pytest.importorskip("triton")

KERNEL_BODY = """
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs)
"""


def write(root: Path, files: dict[str, str], packages: tuple[str, ...] = ()) -> Path:
    """``root/<relative path>`` from ``{relative path: source}``; ``packages`` get an ``__init__.py``."""
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source))
    for package in packages:
        (root / package / "__init__.py").touch()
    return root


@pytest.fixture
def unimport():
    """Forget the test packages a test imported to compare with."""
    before = set(sys.modules)
    yield
    for name in set(sys.modules) - before:
        if not name.startswith(("triton", "_kernelrules")):
            del sys.modules[name]


# --------------------------------------------------------------------------- namespace packages

NAMESPACE = {
    "nspkg/ops/fla/op.py": """
        import triton
        import triton.language as tl


        @triton.jit
        def twice(x):
            return x * 2.0
        """,
    "nspkg/ops/fla/kda.py": """
        import triton
        import triton.language as tl

        from nspkg.ops.fla.op import twice


        @triton.jit
        def kda_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, twice(tl.load(x_ptr + offs)))
        """,
    "nspkg/other/k.py": """
        import triton
        import triton.language as tl

        from nspkg.ops.fla.op import twice
        from nspkg.ops.fla.missing import nothing


        @triton.jit
        def other_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, nothing(twice(tl.load(x_ptr + offs))))
        """,
}


def test_an_absolute_import_into_a_namespace_package_is_found(tmp_path, monkeypatch, unimport):
    """``fla`` and ``other`` have no ``__init__.py`` (PEP 420): the import is found above the file."""
    write(tmp_path, NAMESPACE, packages=("nspkg", "nspkg/ops"))
    kda = tmp_path / "nspkg/ops/fla/kda.py"
    deps = kernel_dependencies(kda, "kda_kernel")
    assert not deps.misses
    assert (tmp_path.resolve() / "nspkg/ops/fla/op.py", "twice") in deps.functions
    # The cross-compile binds the helper as an import does: same Triton cache key.
    from kernelrules.discover.kernelsource import load_kernel

    ours = load_kernel(kda, "kda_kernel").fn.cache_key
    monkeypatch.syspath_prepend(str(tmp_path))
    import nspkg.ops.fla.kda as imported

    assert ours == imported.kda_kernel.cache_key
    # A module that is nowhere stays a miss, with its one-line reason.
    other = kernel_dependencies(tmp_path / "nspkg/other/k.py", "other_kernel")
    assert set(other.misses) == {"nothing"}
    assert "nspkg.ops.fla.missing" in other.misses["nothing"].reason
    assert "\n" not in other.misses["nothing"].reason


# --------------------------------------------------------------------------- another library's @jit

OTHER_JIT = {
    "otherjit/mhc.py": """
        import triton
        import triton.language as tl


        class _Lazy:
            def __getattr__(self, name):
                return lambda *args, **kwargs: (lambda f: f)


        tilelang = _Lazy()


        @tilelang.jit(pass_configs={})
        def tile_kernel(n: int):
            return n


        @triton.jit
        def broadcast_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1.0)
        """,
}


def test_a_function_under_another_librarys_jit_is_not_rebuilt(tmp_path, monkeypatch, unimport):
    """``@tilelang.jit`` is not Triton's: the rebuilt module leaves it out instead of failing on
    ``tilelang``, and the Triton kernel beside it loads with the key an import gives."""
    from kernelrules.discover.kernelreduce import reduce_module
    from kernelrules.discover.kernelsource import load_kernel

    write(tmp_path, OTHER_JIT, packages=("otherjit",))
    path = tmp_path / "otherjit/mhc.py"
    reduced = reduce_module(path.read_text(), path)
    assert "tile_kernel" in reduced.plain_functions and "tile_kernel" not in reduced.functions
    handle = load_kernel(path, "broadcast_kernel")
    assert not handle.unresolved_reasons
    monkeypatch.syspath_prepend(str(tmp_path))
    import otherjit.mhc as imported

    assert handle.fn.cache_key == imported.broadcast_kernel.cache_key


# --------------------------------------------------------------------------- values computed at import time

COMPUTED = {
    "site/torch/__init__.py": """
        from . import version


        class Tensor:
            pass
        """,
    "site/torch/version.py": "hip = None\n",
    "cpkg/helpers.py": """
        import os

        import triton.language as tl
        import triton.language.extra.libdevice as tldevice


        def get_exp():
            \"\"\"Fast or accurate exp by an environment variable.\"\"\"
            return tldevice.fast_expf if os.environ.get("CPKG_FAST", "0") == "1" else tl.exp


        exp = get_exp()
        """,
    "cpkg/plat.py": """
        import functools

        import torch


        @functools.lru_cache(maxsize=1)
        def is_hip():
            if torch.version.hip:
                return True
            else:
                return False
        """,
    "cpkg/ops.py": """
        import torch
        import triton
        import triton.language as tl

        from .helpers import exp
        from .plat import is_hip

        _FP8 = tl.float8e4b8 if is_hip() else tl.float8e4nv
        _SCALE = tl.constexpr(float(1 << 4))
        _HIP_ROW = tl.constexpr(bool(torch.version.hip))
        _PAGE = tl.constexpr(128)
        _SHIFT = tl.constexpr(_PAGE.value.bit_length() - 1)


        def _gen(n):
            out = ""
            for i in range(n):
                out += "{" + str(i) + "}"
            return out


        _TEXT = tl.constexpr(_gen(2))


        @triton.jit
        def computed_kernel(x_ptr, y_ptr: torch.Tensor, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            if _HIP_ROW:
                x = x + 1.0
            if tl.constexpr(torch.version.hip is not None):
                x = x * 3.0
            if _TEXT == "{0}{1}":
                x = x + _SHIFT
            y = exp(x) * _SCALE
            tl.store(y_ptr + offs, y.to(_FP8).to(tl.float32))
        """,
}


def test_values_computed_at_import_time_are_decided_for_an_nvidia_target(tmp_path, monkeypatch, unimport):
    """Package functions, builtins and the target's platform facts decide the globals; ``torch`` is a
    stand-in; the kernel is the one an import gives (same Triton cache key, with a stub ``torch``)."""
    from kernelrules.discover.kernelsource import load_kernel
    from kernelrules.discover.targetfacts import targeting

    write(tmp_path, COMPUTED, packages=("cpkg",))
    ops = tmp_path / "cpkg/ops.py"
    with targeting(["cuda"]):
        deps = kernel_dependencies(ops, "computed_kernel")
        handle = load_kernel(ops, "computed_kernel")
    assert not deps.misses, deps.misses
    notes = "\n".join(deps.notes)
    assert "`exp` (helpers.py) = triton.language.math.exp: `get_exp()`" in notes
    assert "`_FP8` (ops.py) = tl.float8e4nv" in notes and "on an NVIDIA GPU `torch.version.hip` is None" in notes
    assert "`_SHIFT` (ops.py) = 7" in notes and "`_SCALE` (ops.py) = 16.0" in notes and "`_TEXT` (ops.py) = '{0}{1}'" in notes
    assert "`torch` is not imported: a stand-in holds what the kernel reads of it" in notes
    assert not handle.unresolved_reasons
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.syspath_prepend(str(tmp_path))
    import cpkg.ops as imported

    assert handle.fn.cache_key == imported.computed_kernel.cache_key
    assert handle.fn.fn.__globals__["_FP8"] is imported._FP8
    assert handle.fn.fn.__globals__["_TEXT"] == imported._TEXT


def test_without_a_known_target_the_platform_stays_unresolved(tmp_path):
    """No facts are assumed unless the lint's targets share a backend: the names stay misses."""
    from kernelrules.discover.targetfacts import targeting

    write(tmp_path, COMPUTED, packages=("cpkg",))
    with targeting(["cuda", "hip"]):
        deps = kernel_dependencies(tmp_path / "cpkg/ops.py", "computed_kernel")
    assert {"_FP8", "_HIP_ROW", "torch"} <= set(deps.misses)
    assert "_SHIFT" not in deps.misses and "exp" not in deps.misses  # no platform in those
    assert all("\n" not in m.reason for m in deps.misses.values())


FALLBACK = {
    "fpkg/backend.py": """
        import importlib

        _module = None


        def set_module(name):
            global _module
            _module = importlib.import_module(name)


        def get_module():
            return _module
        """,
    "fpkg/shim.py": """
        from . import backend

        try:
            backend.set_module("triton.language.extra.cuda.libdevice")
            lib = backend.get_module()
        except ImportError:
            import triton

            lib = triton.language.extra.libdevice
        """,
    "fpkg/ops.py": """
        import triton
        import triton.language as tl

        from .shim import lib

        tanh = lib.tanh


        @tl.constexpr
        def accum_type(dtype):
            return tl.float32


        @triton.jit
        def tanh_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tanh(tl.load(x_ptr + offs)))


        @triton.jit
        def accum_kernel(x_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs).to(accum_type(x_ptr.dtype.element_ty)))
        """,
}


def test_an_import_error_fallback_is_a_labelled_guess(tmp_path):
    """``try: lib = <computed by calls> except ImportError: lib = triton...libdevice``: the fallback is
    used, as a guess (a kernel with no compiling config under it is needs-spec, never CMP001); a value
    read from a global another function rebinds (``global _module``) is not computed."""
    from kernelrules.discover.kernelsource import load_kernel

    write(tmp_path, FALLBACK, packages=("fpkg",))
    ops = tmp_path / "fpkg/ops.py"
    deps = kernel_dependencies(ops, "tanh_kernel")
    assert set(deps.misses) == {"tanh"} and deps.misses["tanh"].guessed == \
        "tanh=triton.language.extra.libdevice.tanh"
    assert "the `except ImportError` fallback at shim.py:10" in deps.misses["tanh"].reason
    assert not load_kernel(ops, "tanh_kernel").unresolved_reasons
    # A Python function Triton calls while compiling needs --import: one actionable line.
    accum = kernel_dependencies(ops, "accum_kernel").misses["accum_type"]
    assert accum.guessed is None
    assert accum.reason == ("`accum_type` (ops.py) is a Python function wrapped in @tl.constexpr, which Triton runs "
                            "while compiling, and kernelrules runs none of the linted code unless asked: lint with --import")
