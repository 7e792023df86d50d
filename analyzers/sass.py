"""SASS and resource usage of a cubin, through the CUDA binary tools in Triton's wheel.

``cuobjdump --dump-sass`` gives the machine code; its opcode histogram (HGMMA,
HMMA, FFMA, LDS, LDSM, LDGSTS, UTMALDG, LDL, STL, ...) is what actually runs.
``cuobjdump --dump-resource-usage`` gives per-function registers and the bytes
of stack (spills), static shared, local and constant memory. ``ptxas -v`` logs
(the same numbers plus spill store/load bytes) are parsed too, and can be
produced from PTX with ``run_ptxas_verbose``.

Tools are looked up in ``TRITON_<TOOL>_PATH``, then Triton's wheel
(``triton/backends/nvidia/bin``), then ``PATH``; a missing one raises
``ToolNotFound``. Every subprocess has a timeout.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

DEFAULT_TIMEOUT = 60.0
_SASS_LINE = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
_GUARD = re.compile(r"^@!?U?P(?:T|\d+)\s+")
_FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RESOURCE_FUNC = re.compile(r"^\s*Function\s+([^:\s]+)\s*:")
_RESOURCE_FIELD = re.compile(r"([A-Z_]+(?:\[\d+\])?):(\d+)")
_LOCAL_WIDTH = {"64": 8, "128": 16, "U8": 1, "S8": 1, "U16": 2, "S16": 2}


class ToolNotFound(RuntimeError):
    """A CUDA binary tool (cuobjdump, nvdisasm, ptxas) is not available."""


class ToolFailed(RuntimeError):
    """A CUDA binary tool ran and failed (non-zero exit or timeout)."""


def _wheel_bin() -> Path | None:
    """Triton's bundled ``backends/nvidia/bin``, found without importing Triton."""
    try:
        spec = importlib.util.find_spec("triton")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0]) / "backends" / "nvidia" / "bin"


def find_tool(name: str) -> str:
    """Path of ``cuobjdump``, ``nvdisasm``, ``ptxas`` or ``ptxas-blackwell``."""
    searched = []
    env = f"TRITON_{name.upper().replace('-', '_')}_PATH"
    candidates = [os.environ.get(env)]
    wheel = _wheel_bin()
    candidates.append(str(wheel / name) if wheel else None)
    candidates.append(shutil.which(name))
    for candidate in candidates:
        if candidate:
            searched.append(candidate)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    raise ToolNotFound(f"{name} not found (looked at ${env}, Triton's wheel and PATH: {searched or 'nothing'})")


def _run(args: list[str], timeout: float) -> str:
    """Run a tool; its stdout, or ``ToolFailed`` with its stderr."""
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ToolFailed(f"{Path(args[0]).name} timed out after {timeout} s") from exc
    if done.returncode != 0:
        raise ToolFailed(f"{Path(args[0]).name} exited {done.returncode}: {done.stderr.strip()[:2000]}")
    return done.stdout + done.stderr if "ptxas" in Path(args[0]).name else done.stdout


def _on_cubin(cubin: bytes, flags: list[str], timeout: float) -> str:
    """Run cuobjdump ``flags`` on the cubin bytes (written to a temporary file)."""
    tool = find_tool("cuobjdump")
    with tempfile.TemporaryDirectory(prefix="kernelrules-") as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        return _run([tool, *flags, str(path)], timeout)


def dump_sass(cubin: bytes, timeout: float = DEFAULT_TIMEOUT) -> str:
    """``cuobjdump --dump-sass`` of a cubin."""
    return _on_cubin(cubin, ["--dump-sass"], timeout)


def dump_resource_usage(cubin: bytes, timeout: float = DEFAULT_TIMEOUT) -> str:
    """``cuobjdump --dump-resource-usage`` of a cubin."""
    return _on_cubin(cubin, ["--dump-resource-usage"], timeout)


@dataclass(frozen=True)
class SassInstruction:
    """One SASS instruction: full mnemonic (``LDG.E.128``), operands, offset, guard."""

    mnemonic: str
    operands: str
    offset: int
    predicated: bool

    @property
    def opcode(self) -> str:
        """The mnemonic before its first '.' (``LDG``)."""
        return self.mnemonic.split(".", 1)[0]


def parse_sass(text: str) -> dict[str, list[SassInstruction]]:
    """Instructions per function of a ``cuobjdump --dump-sass`` (or ``nvdisasm``) listing."""
    functions: dict[str, list[SassInstruction]] = {}
    current = functions.setdefault("", [])
    for line in text.splitlines():
        header = _FUNCTION.match(line)
        if header:
            current = functions.setdefault(header.group(1), [])
            continue
        match = _SASS_LINE.match(line)
        if not match:
            continue
        body = match.group(2).strip()
        guard = _GUARD.match(body)
        body = body[guard.end():] if guard else body
        mnemonic, _, operands = body.partition(" ")
        current.append(SassInstruction(mnemonic, operands.strip(), int(match.group(1), 16), bool(guard)))
    if not functions[""]:
        del functions[""]
    return functions


def opcode_histogram(functions: dict[str, list[SassInstruction]]) -> Counter:
    """Instruction counts by opcode over all functions (``NOP`` included)."""
    return Counter(i.opcode for instrs in functions.values() for i in instrs)


def local_memory_bytes(functions: dict[str, list[SassInstruction]]) -> tuple[int, int]:
    """(store bytes, load bytes) of the STL/LDL instructions: the static spill traffic
    ``ptxas -v`` reports as spill stores/loads (widths from the ``.64``/``.128`` suffix)."""
    totals = {"STL": 0, "LDL": 0}
    for instrs in functions.values():
        for instr in instrs:
            if instr.opcode in totals:
                suffixes = instr.mnemonic.split(".")[1:]
                width = next((_LOCAL_WIDTH[s] for s in suffixes if s in _LOCAL_WIDTH), 4)
                totals[instr.opcode] += width
    return totals["STL"], totals["LDL"]


@dataclass(frozen=True)
class ResourceUsage:
    """One function's line of ``--dump-resource-usage``.

    ``stack`` is the per-thread stack frame in bytes: in Triton cubins this is the
    driver's ``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`` (Triton's ``n_spills`` × 4).
    ``shared`` is *static* shared memory only (Triton's dynamic shared memory is
    ``metadata.shared``); ``local`` is the separate ``.nv.local`` section.
    """

    registers: int
    stack: int
    shared: int
    local: int
    constant: dict[str, int]

    def to_dict(self) -> dict:
        return {"registers": self.registers, "stack": self.stack, "shared": self.shared, "local": self.local,
                "constant": dict(self.constant)}


def parse_resource_usage(text: str) -> dict[str, ResourceUsage]:
    """``--dump-resource-usage`` output as ``{function: ResourceUsage}``."""
    found: dict[str, ResourceUsage] = {}
    name = None
    for line in text.splitlines():
        header = _RESOURCE_FUNC.match(line)
        if header:
            name = header.group(1)
            continue
        fields = dict(_RESOURCE_FIELD.findall(line))
        if name and "REG" in fields:
            values = {k: int(v) for k, v in fields.items()}
            constant = {k: v for k, v in values.items() if k.startswith("CONSTANT")}
            found[name] = ResourceUsage(values["REG"], values.get("STACK", 0), values.get("SHARED", 0),
                                        values.get("LOCAL", 0), constant)
            name = None
    return found


_PTXAS_PATTERNS = {
    "registers": r"Used (\d+) registers",
    "barriers": r"used (\d+) barriers",
    "stack_frame": r"(\d+) bytes stack frame",
    "spill_stores": r"(\d+) bytes spill stores",
    "spill_loads": r"(\d+) bytes spill loads",
    "cumulative_stack": r"(\d+) bytes cumulative stack size",
    "smem": r"(\d+) bytes smem",
    "cmem0": r"(\d+) bytes cmem\[0\]",
}


def parse_ptxas_info(text: str) -> dict[str, dict[str, int]]:
    """A ``ptxas -v`` log as ``{function: {registers, stack_frame, spill_stores, ...}}``."""
    found: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        entry = re.search(r"(?:Compiling entry function|Function properties for) '?([\w$.]+)'?", line)
        if entry:
            current = found.setdefault(entry.group(1), {})
        if current is None:
            continue
        for key, pattern in _PTXAS_PATTERNS.items():
            match = re.search(pattern, line)
            if match:
                current[key] = int(match.group(1))
    return found


def run_ptxas_verbose(ptx: str, arch: str | None = None, timeout: float = DEFAULT_TIMEOUT) -> str:
    """Assemble PTX with ``ptxas -v`` (as Triton does, ``-lineinfo``); return the log.

    ``arch`` defaults to the PTX ``.target`` (``sm_90a``); sm_100 and later use
    ``ptxas-blackwell`` when the wheel has it, as Triton does.
    """
    if arch is None:
        target = re.search(r"^\s*\.target\s+(\w+)", ptx, re.M)
        if not target:
            raise ValueError("no .target in the PTX and no arch given")
        arch = target.group(1)
    number = int(re.sub(r"\D", "", arch) or 0)
    tool = None
    if number >= 100:
        try:
            tool = find_tool("ptxas-blackwell")
        except ToolNotFound:
            tool = None
    tool = tool or find_tool("ptxas")
    with tempfile.TemporaryDirectory(prefix="kernelrules-") as folder:
        source = Path(folder) / "kernel.ptx"
        source.write_text(ptx)
        return _run([tool, "-v", "-lineinfo", f"--gpu-name={arch}", str(source), "-o", str(source) + ".o"], timeout)
