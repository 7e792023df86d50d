"""Failure classes, rule gaps, bottleneck guesses and learned constraints.

Every trial ends in one status:

========================  ===============================================================
``better`` / ``slower``   timed and correct; faster than every earlier trial, or not
``rejected``              a kernelrules rule rejected it before launch (``rule_codes``)
``learned``               skipped: an earlier failure taught the study that it fails
``compile_error``         Triton could not compile it (in the compile stage or at launch)
``compile_timeout``       the compile ran past ``--timeout``
``out_of_resources``      compiled, but the launch needs more shared memory/registers
``wrong_result``          ran, but the outputs differ from the reference
``illegal_address``       an illegal memory access (the worker and its context restart)
``timeout``               ran past the benchmark time limit (a hang): worker killed
``crash``                 the worker died another way
``launch_error``          any other exception at launch
``same_binary``           the kernel has no loop and a config that differs only in
                          ``num_stages`` was timed: the same binary, told that time
``duplicate``             another trial holds the same config (nothing timed twice)
``over_budget``           asked, but another process reached the ``--trials`` total first
``interrupted``           its process was killed; the config is queued again
========================  ===============================================================

Classes that a rule could have caught before launch (``out_of_resources``,
``compile_error`` and ``compile_timeout`` seen at launch although the rules passed the
config) are reported as *gaps*: a rule to add.
"""

from __future__ import annotations

from typing import Any, Mapping

FAILURES = ("compile_error", "compile_timeout", "out_of_resources", "wrong_result", "illegal_address", "timeout",
            "crash", "launch_error")
TIMED = ("better", "slower")
#: Failures a kernelrules rule should have caught before launch.
GAP_CLASSES = ("out_of_resources", "compile_error", "compile_timeout")
_ILLEGAL = ("illegal memory access", "illegal address", "misaligned address", "unspecified launch failure",
            "illegal instruction", "an illegal", "cuda error: an", "hardware exception", "device-side assert")

_TORCH_CUDA_ADVICE = ("CUDA kernel errors might be asynchronously reported", "For debugging consider passing",
                      "Compile with `TORCH_USE_CUDA_DSA`", "Search for `cudaErrorIllegalAddress'")


def classify_exception(exc: BaseException, phase: str) -> str:
    """The failure class of an exception raised in a benchmark worker during ``phase``."""
    name = type(exc).__name__
    text = f"{name}: {exc}".lower()
    if name == "OutOfResources" or "out of resource" in text:
        return "out_of_resources"
    if name in ("CompilationError", "CompileTimeAssertionFailure") or "ptxas" in text:
        return "compile_error"
    # before the compile-phase fallback: torch >= 2.8 raises CUDA errors as torch.AcceleratorError (a
    # RuntimeError subclass, "CUDA error: an illegal memory access was encountered"), Triton's launcher
    # as RuntimeError("Triton Error [CUDA]: an illegal memory access was encountered")
    if any(marker in text for marker in _ILLEGAL):
        return "illegal_address"
    if phase == "compile":
        return "compile_error"
    return "launch_error"


def context_lost(failure: str, message: str) -> bool:
    """Whether the CUDA context is unusable after this failure (the worker must restart)."""
    low = message.lower()
    return failure == "illegal_address" or "cuda error" in low or "error [cuda]" in low


def summary(message: str, limit: int = 300) -> str:
    """The useful part of an error message: its last meaningful lines, shortened."""
    lines = [line.strip() for line in str(message).strip().splitlines() if line.strip()]
    # torch's CUDA errors put the error on the first line and three lines of advice after it
    lines = [line for line in lines if not line.startswith(_TORCH_CUDA_ADVICE)] or lines
    text = " | ".join(lines[-3:]) if lines else ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def is_gap(record: Mapping[str, Any]) -> bool:
    """A failure at launch that a rule could have caught before it."""
    return record.get("status") in GAP_CLASSES and record.get("stage") == "launch"


def gap_text(record: Mapping[str, Any]) -> str:
    facts = record.get("facts") or {}
    known = ", ".join(f"{k}={facts[k]}" for k in ("shared_bytes", "registers", "spill_bytes") if k in facts)
    return (f"{record['status']} at launch although the rules passed {record.get('config_text', record.get('config'))}"
            f"{f' ({known})' if known else ''}: {record.get('error', '')}")


def bottlenecks(facts: Mapping[str, Any], config: Mapping[str, Any], arch: Any, programs: int | None,
                warnings: list[str]) -> list[str]:
    """Short guesses at what limits a config, from its facts and the rules' warnings."""
    out = []
    if facts.get("dot_m") is not None and facts.get("mma_path") in ("none", None) and "mma_path" in facts:
        out.append("off the tensor cores (no MMA instructions for its dot)")
    elif facts.get("mma_path") == "mma_sync" and getattr(arch, "sm", 0) >= 90:
        out.append("mma.sync instead of wgmma on Hopper")
    if (facts.get("spill_bytes") or 0) > 0:
        out.append(f"register spills ({facts['spill_bytes']} bytes)")
    limiter = facts.get("occupancy_limiter")
    occupancy = facts.get("occupancy")
    if limiter and occupancy is not None and occupancy < 0.25:
        out.append(f"occupancy {occupancy:.0%} limited by {limiter}")
    if facts.get("pipelined") is False and (config.get("num_stages") or 0) > 1:
        out.append("loads not pipelined")
    if (facts.get("bank_conflict_ways") or 1) > 2:
        out.append(f"{facts['bank_conflict_ways']}-way shared-memory bank conflicts")
    sms = arch.flat().get("sm_count") if arch is not None else None
    if programs is not None and sms:
        if programs < sms:
            out.append(f"too few programs ({programs}) for {sms} SMs")
        else:
            waves = programs / sms
            tail = waves - int(waves)
            if waves < 4 and 0 < tail < 0.5:
                out.append(f"tail effect: {waves:.2f} waves of programs over {sms} SMs")
    out.extend(warnings)
    return out


class LearnedConstraints:
    """Constraints the study learns from failures, applied to later candidates before launch.

    An ``out_of_resources`` failure teaches a shared-memory limit: a later candidate
    whose predicted shared memory is at least the smallest failing prediction (and
    more than every success) is skipped as ``learned``. Rebuilt from the study's
    records on resume, so every worker of a shared study learns the same.
    """

    def __init__(self) -> None:
        self.failing_shared: float | None = None
        self.passing_shared: float = 0.0

    def observe(self, record: Mapping[str, Any]) -> None:
        shared = (record.get("facts") or {}).get("shared_bytes")
        if shared is None:
            return
        if record.get("status") == "out_of_resources":
            self.failing_shared = shared if self.failing_shared is None else min(self.failing_shared, shared)
        elif record.get("status") in TIMED or record.get("status") == "wrong_result":
            self.passing_shared = max(self.passing_shared, shared)

    def reason(self, facts: Mapping[str, Any]) -> str | None:
        shared = facts.get("shared_bytes")
        if shared is None or self.failing_shared is None:
            return None
        if shared >= self.failing_shared and shared > self.passing_shared:
            return (f"predicted {shared} bytes of shared memory; a config predicted to need {self.failing_shared} "
                    f"failed with out_of_resources in this study")
        return None

    def describe(self) -> list[str]:
        if self.failing_shared is None:
            return []
        return [f"shared memory >= {int(self.failing_shared)} bytes (predicted) fails with out_of_resources"]
