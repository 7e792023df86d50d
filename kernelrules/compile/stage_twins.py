"""One compile for the configs of a loop-free kernel that differ only in ``num_stages``.

``num_stages`` reaches only Triton's loop passes (latency assignment, the software
pipeliner, warp specialisation): each works on an ``scf.for``/``scf.while`` and leaves a
kernel without one as it was. So on NVIDIA the configs ``num_stages=2, 3, 4`` of a
kernel whose TTIR has no loop compile to the same TTGIR, PTX and cubin, and give the same
facts; only the metadata's ``num_stages`` (and Triton's hash over the options) differ.
Measured on a cold lint of fla-core 0.6.0 for sm_90 (Triton 3.6.0): 173 of 173 such groups
had byte-identical PTX and cubins and equal facts; ``tests/compile/test_stage_twins.py``
checks it on cross-compiles for every NVIDIA architecture.

Real packages autotune ``num_stages`` on such kernels all the time (23 kernels of fla-core,
each config compiled three times), so the pool compiles one *twin* of each group and
answers the others from it (:meth:`StageTwins.answer`), with the compile time of the one
compiled: what Triton's JIT would spend on each at launch. This is bookkeeping for
:class:`kernelrules.compile.pool.CompilePool`; it applies only where nothing needs the real
compile: the NVIDIA backend, no shared Triton cache to fill (``kernelrules.autotune``'s
precompile fills one, and Triton's key includes ``num_stages``), and no kernel parameter
named ``num_stages`` (a launch binds the option to it).

Until a kernel's first compile says whether it loops, the pool holds back the twins of a
job in flight (another job takes the worker); once one of its compiles shows a loop, its
twins compile like any other config.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from typing import Any

from .compilejob import CompileJob, CompileResult

def loop_free(result: CompileResult) -> bool | None:
    """Whether a successful compile's TTIR has no loop; None when there is no TTIR to read."""
    if not result.ok or "ttir" not in result.asm:
        return None
    from ..analyzers.facts_extract import loop_count

    return loop_count(result.asm["ttir"]) == 0


def eligible(job: CompileJob, handle: Any, triton_cache_dir: str | None) -> bool:
    """Whether ``job`` may be answered by a twin: NVIDIA, no Triton cache to fill, and no kernel
    parameter that takes the ``num_stages`` option's value."""
    if job.target[0] != "cuda" or triton_cache_dir is not None:
        return False
    params = getattr(getattr(handle, "fn", None), "params", None)
    if params is None:
        return False
    return not takes_num_stages(params)


def takes_num_stages(params: Any) -> bool:
    """Whether a jit function's parameters include ``num_stages`` (a launch binds the option to it)."""
    return any(getattr(p, "name", None) == "num_stages" for p in params)


def heuristics_read_num_stages(kernel: Any) -> bool:
    """Whether a ``@triton.heuristics`` around ``kernel`` (an Autotuner, Heuristics or JITFunction chain)
    computes a value from ``num_stages``: a launch under ``triton.autotune`` hands the config's
    ``num_stages`` to the heuristics, so the configs of a stage-twin group may be different kernels."""
    seen = 0
    while kernel is not None and seen < 16:
        values = getattr(kernel, "values", None)
        if isinstance(values, dict) and any(_reads_num_stages(v) for v in values.values()):
            return True
        kernel, seen = getattr(kernel, "fn", None), seen + 1
    return False


def _reads_num_stages(function: Any) -> bool:
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    constants = [c for c in code.co_consts if isinstance(c, str)]
    nested = [c for c in code.co_consts if hasattr(c, "co_consts")]  # a lambda defined inside the heuristic
    return ("num_stages" in constants or "num_stages" in code.co_names or "num_stages" in code.co_varnames
            or any("num_stages" in c.co_consts or "num_stages" in c.co_names for c in nested))


def binds_num_stages(path: str, name: str) -> bool:
    """Whether the function ``name`` in the file ``path`` has a parameter named ``num_stages`` (a launch
    binds the option's value to it) or a ``@triton.heuristics`` that reads ``num_stages`` (a launch hands
    it the option): then its configs are not stage twins. True when the file cannot be read or the
    function is not found (the safe answer: no twin)."""
    return _binds_num_stages(str(path), name)


@functools.lru_cache(maxsize=256)
def _binds_num_stages(path: str, name: str) -> bool:
    try:
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError, ValueError):
        return True
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name:
            args = node.args
            return (any(a.arg == "num_stages" for a in [*args.posonlyargs, *args.args, *args.kwonlyargs])
                    or any(_heuristics_mention_num_stages(d) for d in node.decorator_list))
    return True


def _heuristics_mention_num_stages(decorator: ast.expr) -> bool:
    """Whether a ``@triton.heuristics({...})`` decorator reads ``num_stages`` (``args["num_stages"]``)."""
    if not isinstance(decorator, ast.Call):
        return False
    func = decorator.func
    called = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if called != "heuristics":
        return False
    return any((isinstance(n, ast.Constant) and n.value == "num_stages") or (isinstance(n, ast.Name) and n.id == "num_stages")
               or (isinstance(n, ast.Attribute) and n.attr == "num_stages") for n in ast.walk(decorator))


def answer_from(twin: CompileResult, job: CompileJob) -> CompileResult:
    """``twin``'s result for ``job``: the same artifacts and facts, the metadata's ``num_stages``
    set to the job's (Triton's ``hash`` over the options dropped: it would differ)."""
    metadata = {k: v for k, v in twin.metadata.items() if k != "hash"}
    if "num_stages" in job.options:
        metadata["num_stages"] = job.options["num_stages"]
    else:
        from ..config import LAUNCH_DEFAULTS

        metadata["num_stages"] = LAUNCH_DEFAULTS["nvidia"]["num_stages"]
    return dataclasses.replace(twin, metadata=metadata, from_cache=False, asm=dict(twin.asm.items()))


class StageTwins:
    """What one pool knows of stage twins: the loop-free result of each twin group, and which
    kernels were seen to loop."""

    def __init__(self) -> None:
        #: twin key -> the loop-free result that answers the group.
        self.answers: dict[str, CompileResult] = {}
        #: (path, kernel) of kernels with a compile whose TTIR loops.
        self.looping: set[tuple[str, str]] = set()

    def answer(self, job: CompileJob, twin_key: str | None) -> CompileResult | None:
        """The result for ``job`` from its group's loop-free twin, if one has compiled."""
        if twin_key is None or twin_key not in self.answers:
            return None
        return answer_from(self.answers[twin_key], job)

    def learn(self, job: CompileJob, twin_key: str | None, result: CompileResult) -> None:
        """Remember what a finished compile says about its group and its kernel."""
        if twin_key is None:
            return
        free = loop_free(result)
        if free:
            self.answers.setdefault(twin_key, result)
        elif free is False:
            self.looping.add((job.path, job.kernel))

    def hold(self, job: CompileJob, twin_key: str | None, in_flight: set[str]) -> bool:
        """Whether to keep ``job`` back for now: a twin of it is compiling and its kernel is not
        known to loop (that compile will probably answer it)."""
        return twin_key is not None and twin_key in in_flight and (job.path, job.kernel) not in self.looping
