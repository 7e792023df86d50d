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
