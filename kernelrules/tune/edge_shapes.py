"""The launch signatures of a problem's edge shapes, so the compile gate compiles them too.

The benchmark worker checks every candidate on the problem's edge shapes (``edge_sizes``:
sizes that are not multiples of the tile, odd strides). Triton specializes a launch on its
integer arguments (a multiple of 16, equal to 1), so an edge shape is usually another
binary, and the worker's JIT compiled it while the GPU waited: on the H200 the check of the
small attention problems took 0.5-2 s per config against 0.11 s of timing (the compile, by
inference: the config's own shape was a cache hit). With the signatures of the edge shapes, the gate compiles those binaries too, in
its pool and into the Triton cache it shares with the worker, where the worker's launch
finds them.

A signature here is the space file's, with every integer argument replaced by the value
the problem's ``args`` (or its sizes) give it at the edge sizes. The arguments are
evaluated with stand-in tensors that have only a shape and contiguous strides, in this
process, without torch. When that is not possible (an argument a stand-in cannot
evaluate), or when the same evaluation at the problem's own sizes does not reproduce the
space file's signature, there are none: the worker compiles the edge shapes itself, as
before.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..expr import safeexpr
from .problem import DTYPE_BYTES, ProblemSpec


class ShapeOnly:
    """A stand-in for a contiguous tensor: its shape, strides and sizes, nothing else."""

    def __init__(self, shape: tuple[int, ...], dtype: str) -> None:
        self.shape, self.dtype, self.ndim = tuple(shape), dtype, len(shape)
        strides, step = [], 1
        for extent in reversed(self.shape):
            strides.append(step)
            step *= max(1, extent)
        self._strides = tuple(reversed(strides))

    def stride(self, dim: int | None = None) -> Any:
        return self._strides if dim is None else self._strides[dim]

    def size(self, dim: int | None = None) -> Any:
        return self.shape if dim is None else self.shape[dim]

    def numel(self) -> int:
        return math.prod(self.shape)

    def dim(self) -> int:
        return self.ndim

    def element_size(self) -> int:
        return DTYPE_BYTES.get(self.dtype, 4)


def launch_values(spec: ProblemSpec, sizes: Mapping[str, int]) -> dict[str, Any]:
    """The integer arguments of a launch at ``sizes``, by name (what the stand-ins can evaluate)."""
    tensors = {name: ShapeOnly(spec.shape(t, sizes), t.dtype) for name, t in {**spec.inputs, **spec.outputs}.items()}
    env = {**spec.values, **sizes, **tensors}
    values = {}
    for name in spec.kernel_args:
        if name in spec.args:
            values[name] = safeexpr.evaluate(spec.args[name], env)
        elif name in sizes:
            values[name] = sizes[name]
    return {k: v for k, v in values.items() if isinstance(v, int) and not isinstance(v, bool)}


def edge_signatures(spec: ProblemSpec, signature: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The space signature at each edge shape (distinct, and different from the signature itself);
    none when the stand-ins cannot reproduce the space's own signature (see the module docstring)."""
    if spec.harness or not spec.edge_sizes:
        return []
    integers = [k for k, v in signature.items() if isinstance(v, int) and not isinstance(v, bool)]
    try:
        own = launch_values(spec, spec.sizes)
        if any(own.get(name) != signature[name] for name in integers):
            return []
        edges = []
        for sizes in spec.edge_sizes:
            values = launch_values(spec, sizes)
            edges.append({k: values[k] for k in integers})
        return distinct_edges(signature, edges)
    except Exception:  # noqa: BLE001 - an argument stand-ins cannot evaluate: the worker compiles these itself
        return []


def distinct_edges(signature: Mapping[str, Any], edges: list[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The space ``signature`` with each of ``edges`` (the arguments an edge shape changes) laid over it,
    each once, and none that equals the signature itself (a binary the space's own compile makes)."""
    found: list[dict[str, Any]] = []
    for changed in edges:
        edge = {**signature, **changed}
        if edge != dict(signature) and edge not in found:
            found.append(edge)
    return found


def launcher_jobs(space: Any, configs: Sequence[Any], arch: Any, edges: Sequence[Mapping[str, Any]]) -> list[Any]:
    """The compile jobs of the first of ``configs`` at the space's signature and at each of ``edges`` (the edge
    shapes' signatures, :func:`edge_signatures`): what a benchmark worker builds the kernel's launchers from as it
    starts the problem (a launcher depends on the argument types only:
    :func:`kernelrules.tune.jit_warmup.start_launcher_builds`); none when there is no config or a job cannot be
    made."""
    from ..compile.target import KernelTarget

    if not configs:
        return []
    try:
        target = KernelTarget.from_space(space)
        return [replace(target, signature=dict(s)).job(configs[0], arch, None) for s in [target.signature, *edges]]
    except Exception:  # noqa: BLE001 - an optimisation only: the worker's launches build what they need
        return []
