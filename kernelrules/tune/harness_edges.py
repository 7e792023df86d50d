"""The launch signatures of a harness problem's edge shapes, read from the harness's own launch code.

A problem run by a user's harness class (``harness: file.py:Name``) launches the kernel from
Python the driver cannot evaluate, so :mod:`kernelrules.tune.edge_shapes` derives no edge-shape
signatures for it, and the benchmark worker's JIT compiled every candidate at every edge shape
while the GPU waited: on the H200 suite the check took 2.1 s per config on fp8_gemm/small and
0.96 s on moe_gemm/small, against 0.11 s of timing (live runs of e1c7981).

Here the benchmark worker, at its start, calls the harness's ``launch`` with a stand-in for the
kernel that records the arguments and launches nothing, at the problem's own sizes and at each
edge shape, for two configs of the space, and describes each argument as the JIT specializes it
(:func:`kernelrules.specify.trace_hook.build_record`: a pointer's dtype, an integer's value). The
signatures go back to the driver with the worker's ``ready`` message, and the gate compiles every
later candidate at those shapes into the Triton cache the worker launches from. Only when they
can be trusted: the record at the problem's own sizes must equal the space file's signature, and
the two configs must give the same signatures (a harness that passes a config-derived integer
would need one binary per config); else there are none and the worker compiles them, as before.
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..specify.trace_hook import build_record
from .edge_shapes import distinct_edges
from .launch import launch_options


class RecordingKernel:
    """Stands in for the kernel in ``harness.launch``: ``kernel[grid](*args, **kwargs)`` is recorded, not run."""

    def __init__(self) -> None:
        self.calls: list[tuple[tuple, dict]] = []

    def __getitem__(self, grid: Any) -> Any:
        def launch(*args: Any, **kwargs: Any) -> None:
            self.calls.append((args, kwargs))

        return launch


def recorded_signature(runner: Any, config: Mapping[str, Any], tensors: Mapping[str, Any],
                       sizes: Mapping[str, int]) -> dict[str, Any] | None:
    """The signature of the one launch the harness makes at ``sizes`` with ``config`` (None: not one launch)."""
    recorder = RecordingKernel()
    runner.harness_for(sizes).launch(recorder, tensors, launch_options(config))
    if len(recorder.calls) != 1:
        return None
    args, kwargs = recorder.calls[0]
    return dict(build_record(runner.kernel, args, kwargs, "record")["args"])


def harness_edge_signatures(runner: Any, spec: Any, configs: Sequence[Mapping[str, Any]],
                            space_signature: Mapping[str, Any], tensors_at: Any) -> list[dict[str, Any]]:
    """The edge shapes' signatures (distinct, each differing from the space's own), or none when they
    cannot be trusted (see the module docstring). ``tensors_at(sizes)`` gives the inputs at ``sizes``."""
    if not spec.harness or not spec.edge_sizes or not configs:
        return []
    try:
        by_config = []
        for config in configs:
            own = recorded_signature(runner, config, tensors_at(spec.sizes), spec.sizes)
            if own is None or not own.items() <= dict(space_signature).items():  # each argument as the space says
                return []
            by_config.append([recorded_signature(runner, config, tensors_at(e), e) for e in spec.edge_sizes])
    except Exception:  # noqa: BLE001 - a harness that does more than launch: the worker compiles, as before
        return []
    if any(s is None for s in by_config[0]) or any(other != by_config[0] for other in by_config[1:]):
        return []
    return distinct_edges(space_signature, by_config[0])


__all__ = ["RecordingKernel", "harness_edge_signatures", "recorded_signature"]
