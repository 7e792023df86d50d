"""Telling kernelrules' own limits from the user's errors in lint's compile results.

A compile can fail because the kernel is wrong (``CMP001``), or because kernelrules
could not build it as Triton's JIT would at launch: a name imported from a module it
cannot find or read, a global computed at import time, a constexpr value it only
guessed. The second kind is not the user's error: the kernel gets the ``needs-spec``
status with one line naming the symbol or the values and the fix. Pure functions over
the records :class:`kernelrules.judge.pipeline.ConfigJudge` returns; nothing here compiles.
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

#: ``NameError('x is not defined')`` / ``name 'x' is not defined``, as Triton reports them.
_NAME_ERROR = re.compile(r"""NameError\W*(?:name\s+)?['"]?(\w+)['"]?\s+is not defined""")

#: Signature provenances that are guesses (not a spec, a trace, a launch literal or Inductor).
GUESSED_SIGNATURE = ("naming", "default", "dataflow", "comment")


def undefined_name(message: str) -> str | None:
    """The name of a "not defined" compile error, else None."""
    found = _NAME_ERROR.search(message or "")
    return found.group(1) if found else None


#: Compile errors a wrong argument type can cause (operands, loop-carried types, static asserts on dtypes).
_TYPE_ERROR = re.compile(r"IncompatibleType|TypeError|\btype\b|dtype|static_assert|CompileTimeAssertionFailure"
                         r"|has no attribute '(?:to_ir|scalar|element_ty|primitive_bitwidth)'"
                         r"|'(?:tensor|int|float|bool|constexpr)' object has no attribute"
                         r"|cannot cast|error encountered during parsing"  # an int32 cast to a pointer: MLIR rejects it
                         r"|does not support (?:fp|bf|int|uint|i|u)\d+|cannot add pointers|Mask must have boolean"
                         r"|incompatible function arguments")  # atomic_xchg on fp16, a float passed to device_assert


def type_error(message: str) -> bool:
    """True for a compile error that a wrongly guessed argument type can cause (not, e.g., a NameError)."""
    return bool(_TYPE_ERROR.search(message or "")) and undefined_name(message) is None


def failed_facts(results: Sequence[tuple[Any, Sequence[Any]]]) -> list[Mapping[str, Any]]:
    """Facts of every compiled record whose compile failed (not timed out)."""
    return [r.facts for _, records in results for r in records
            if r.facts.get("origin") == "compiled" and r.facts.get("compile_status") == "error"]


def our_limit(results: Sequence[tuple[Any, Sequence[Any]]], misses: Mapping[str, Any], kernel: str) -> str | None:
    """Why kernelrules could not build ``kernel`` (one line with the fix), or None when the failures are real.

    ``misses`` are the names kernelrules could not resolve statically
    (:class:`kernelrules.discover.pkgfiles.Miss` by name). A "not defined" error on one of them
    is ours unless the name is defined nowhere (then Triton's JIT fails on it too); a
    kernel that could not be loaded at all (``spec_error``) is ours; one whose module
    imports what the installed Triton lacks gets the reason that starts with
    :data:`kernelrules.triton_installed.NEEDS_OTHER_TRITON`. A kernel with no compiling config
    that reads a flag kernelrules guessed (a ``Miss`` with ``guessed``) is ours too.
    """
    from ..triton_installed import NEEDS_OTHER_TRITON
    from ..discover.pkgfiles import FIX_HINT

    for facts in failed_facts(results):
        message = str(facts.get("compile_message", ""))
        name = undefined_name(message)
        if name is not None:
            miss = misses.get(name)
            if miss is not None and getattr(miss, "undefined", False):
                continue  # defined nowhere: the same NameError at launch, a real CMP001
            reason = miss.reason if miss is not None else f"`{name}` is not defined as kernelrules reads the module; {FIX_HINT}"
            return f"cannot build {kernel} as Triton would at launch: {reason}"
        if facts.get("compile_error_kind") == "spec_error":
            if NEEDS_OTHER_TRITON in message:  # the stable phrase first, for corpus counts
                return message[message.index(NEEDS_OTHER_TRITON):]
            return f"cannot build {kernel} as Triton would at launch: {message}; {FIX_HINT}"
    guessed = [m.guessed for m in misses.values() if getattr(m, "guessed", None)]
    failed = failed_facts(results)
    if guessed and failed and not _any_compiled(results):
        return (f"cannot judge {kernel}: no config compiles with the guessed module flags {', '.join(guessed)} "
                f"({failed[0].get('compile_message', '')}); lint it with --import, which runs the module, "
                "to use their real values")
    return None


def nothing_compiled(results: Sequence[tuple[Any, Sequence[Any]]]) -> bool:
    """True when every judged config's compile failed (CMP001), i.e. the signature is wrong."""
    records = [r for _, records in results for r in records]
    compiled = [r for r in records if r.facts.get("origin") == "compiled"]
    return bool(compiled) and all(r.facts.get("compile_status") == "error" for r in compiled)


def _any_compiled(results: Sequence[tuple[Any, Sequence[Any]]]) -> bool:
    """Whether any config compiled."""
    return any(r.facts.get("origin") == "compiled" and r.facts.get("compile_status") == "ok"
               for _, records in results for r in records)


def guessed_note(guessed: Mapping[str, Any]) -> str:
    """``A=1, B=False`` for a message."""
    return ", ".join(f"{k}={v}" for k, v in guessed.items())


def guessed_signature(spec: Mapping[str, Any], provenance: Mapping[str, str], limit: int = 6) -> str:
    """The runtime arguments whose value or type was only guessed, for a CMP001 message."""
    items = [f"{k}={v}" for k, v in spec.items() if str(provenance.get(k, "")).split(" ")[0] in GUESSED_SIGNATURE]
    return ", ".join(items[:limit]) + (", ..." if len(items) > limit else "")
