"""Reuse a kernel's Triton front end (Python AST to TTIR) between configs that differ only in ``num_stages``.

``triton.compile`` walks the kernel's Python AST again for every config (about a fifth of a
compile's time on the suite), yet the TTIR it builds depends on the source, the signature, the
constexprs and the options the code generator reads (``num_warps`` among them, through
``tl.extra.cuda.num_warps``), never on ``num_stages``, which only the later, pipelining passes
use. Autotune lists commonly cross a few ``num_warps`` with a few ``num_stages``
(``for num_warps in [2, 4, 8] for num_stages in [2, 3, 4]``), so a compile worker keeps the
TTIR text of its last kernels and, for the next config that differs only in ``num_stages``,
parses it back into the new compile's MLIR context instead of regenerating it.

The compile is otherwise Triton's own: the same :class:`triton.compiler.ASTSource` (so the same
cache key, and a launch still hits the cache the compile filled), the same passes from TTIR on.
``tests/compile/test_frontend_memo.py`` checks that the PTX and cubin are byte for byte those of
a compile without the memo. ``KERNELRULES_FRONTEND_MEMO=0`` turns it off.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any

#: TTIR texts kept per process (a worker compiles one kernel's configs in a row, mostly).
MEMO_SIZE = 16

_memo: "OrderedDict[str, str]" = OrderedDict()
_folder: Path | None = None
#: Front ends run and reused in this process, for benchmarks and tests.
counts = {"built": 0, "reused": 0}


def enabled() -> bool:
    """Whether the memo is on (``KERNELRULES_FRONTEND_MEMO=0`` turns it off)."""
    return os.environ.get("KERNELRULES_FRONTEND_MEMO", "1") != "0"


def frontend_group(job: Any) -> str:
    """The jobs whose front end one compile can serve: equal but for ``num_stages`` (the pool hands a
    worker such jobs in a row, so that its memo has their TTIR)."""
    options = {k: v for k, v in dict(job.options).items() if k != "num_stages"}
    return repr((job.path, job.kernel, sorted(dict(job.signature).items()), sorted({**job.fixed, **job.constexprs}.items()),
                 sorted(options.items()), tuple(job.target)))


def memo_key(source: Any, target: Any, options: Any) -> str:
    """What the TTIR depends on: the source's own hash (function, signature, constexprs,
    attributes), the target and every option but ``num_stages``."""
    values = ({f.name: getattr(options, f.name) for f in dataclasses.fields(options)}
              if dataclasses.is_dataclass(options) else dict(vars(options)))
    fields = {name: value for name, value in values.items() if name != "num_stages"}
    text = f"{source.hash()}|{target}|{sorted(fields.items(), key=lambda kv: kv[0])!r}"
    return hashlib.sha256(text.encode()).hexdigest()


def memoized(source: Any) -> Any:
    """``source`` (an ``ASTSource``) whose ``make_ir`` reuses a TTIR built for the same key."""
    from triton.compiler.compiler import ASTSource

    if not enabled() or type(source) is not ASTSource:
        return source
    source.__class__ = _memo_class()
    return source


def clear() -> None:
    """Forget every kept TTIR (tests)."""
    _memo.clear()


def _parse(text: str, context: Any) -> Any:
    """Parse TTIR text into ``context`` (Triton's parser reads files)."""
    from triton._C.libtriton import ir

    global _folder
    if _folder is None:
        _folder = Path(tempfile.mkdtemp(prefix="kernelrules-ttir-"))
    path = _folder / "memo.ttir"
    path.write_text(text)
    module = ir.parse_mlir_module(str(path), context)
    module.context = context
    return module


def _make_ir(self: Any, target: Any, options: Any, codegen_fns: Any, module_map: Any, context: Any) -> Any:
    key = memo_key(self, target, options)
    text = _memo.get(key)
    if text is not None:
        _memo.move_to_end(key)
        try:
            module = _parse(text, context)
        except Exception:  # noqa: BLE001 - a text Triton cannot read back: build it as Triton would
            _memo.pop(key, None)
        else:
            counts["reused"] += 1
            return module
    from triton.compiler.compiler import ASTSource

    module = ASTSource.make_ir(self, target, options, codegen_fns, module_map, context)
    counts["built"] += 1
    _memo[key] = str(module)
    while len(_memo) > MEMO_SIZE:
        _memo.popitem(last=False)
    return module


_memo_source_class: type | None = None


def _memo_class() -> type:
    """The ``ASTSource`` subclass with the memo (made on first use: importing this module does not import Triton)."""
    global _memo_source_class
    if _memo_source_class is None:
        from triton.compiler.compiler import ASTSource

        _memo_source_class = type("MemoASTSource", (ASTSource,), {"make_ir": _make_ir, "__module__": __name__})
    return _memo_source_class
