"""The order every ranking path gives configs by their estimates: distinct configs before stage twins.

The general model gives a kernel without a dot the same time at every ``num_stages`` (its loops
are not pipelined in the model), so a plain sort by estimate can fill a top 5 with one tile at
four ``num_stages``: one binary (for a loop-free kernel) compiled and timed four times, and one
chance to be right instead of five. Every path that ranks by the perf model orders ties this way:
``tune``'s seeds, :func:`kernelrules.static_pick`'s ranking, the ``perf_model`` hook Triton sorts by
(:mod:`kernelrules.adapters.triton_perf`), and the suite's scoring of the model
(``benchmarks/perf_model_fit.py``), so the figure published is the order the tools use.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Hashable, Sequence

from ..config import KernelConfig

#: How close two estimates are to count as a tie (the same features give the same float; this
#: only absorbs rounding).
TIE_TOLERANCE = 1e-9


def twin_key(config: KernelConfig) -> tuple:
    """A config's identity without ``num_stages``: the key its stage twins share."""
    return config.replace({}, remove=["num_stages"]).key()


def is_tie(a: float, b: float) -> bool:
    """Whether two estimates are the same (up to rounding)."""
    return math.isclose(a, b, rel_tol=TIE_TOLERANCE)


def distinct_first(scored: Sequence[tuple[float, Any]], identity: Callable[[Any], Hashable] | None = None) -> list:
    """The items of ``scored`` ((estimate, config) pairs, sorted by estimate), those that tie with an
    earlier config differing only in ``num_stages`` moved after all the others (in their order).

    ``identity`` maps an item to what its stage twins share (default: :func:`twin_key` of the item,
    a :class:`KernelConfig`); callers ranking many times pass keys computed once."""
    same_but_stages = identity or twin_key
    first: dict[Hashable, float] = {}
    distinct, twins = [], []
    for estimate, item in scored:
        key = same_but_stages(item)
        earlier = first.get(key)
        if earlier is not None and is_tie(estimate, earlier):
            twins.append(item)
        else:
            first.setdefault(key, estimate)
            distinct.append(item)
    return distinct + twins


__all__ = ["TIE_TOLERANCE", "distinct_first", "is_tie", "twin_key"]
