"""How many global loads a row_sum config keeps in flight: read from its SASS, cross-compiled on a CPU.

    python benchmarks/sass_loads_in_flight.py [--rows 1] [--configs 4096:16,8192:16,8192:8,8192:4]

Compiles ``benchmarks/suite/row_sum/row_sum.py`` for sm_90a with the suite's skinny problem's
specialisation (pointers, ``N`` and the row stride divisible by 16, as the launch sees them),
disassembles the cubin with the ``nvdisasm`` Triton ships, and prints per config the registers
ptxas used and how many ``LDG`` instructions the first loop issues before an instruction reads the
first load's destination register (the loads a warp keeps in flight before it waits).
docs/perf-model.md quotes it for row_sum__skinny. No GPU needed.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KERNEL = REPO / "benchmarks" / "suite" / "row_sum" / "row_sum.py"
SIGNATURE = {"x_ptr": "*fp32", "y_ptr": "*fp32", "M": "i32", "N": "i32", "stride_xm": "i32",
             "ROWS": "constexpr", "BLOCK_N": "constexpr"}
DIVISIBLE = {(0,): [["tt.divisibility", 16]], (1,): [["tt.divisibility", 16]],
             (3,): [["tt.divisibility", 16]], (4,): [["tt.divisibility", 16]]}


def compile_config(rows: int, block_n: int, warps: int):
    """Triton's compile of one config for sm_90a (no GPU needed)."""
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    spec = importlib.util.spec_from_file_location("row_sum_kernel_module", KERNEL)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    source = ASTSource(fn=module.row_sum_kernel.fn, signature=SIGNATURE,
                       constexprs={"ROWS": rows, "BLOCK_N": block_n}, attrs=DIVISIBLE)
    return triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 1})


def _tool(name: str) -> str:
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def sass_of(kernel) -> str:
    """The kernel's SASS, by the nvdisasm Triton ships."""
    with tempfile.TemporaryDirectory() as tmp:
        cubin = Path(tmp) / "kernel.cubin"
        cubin.write_bytes(kernel.asm["cubin"])
        return subprocess.run([_tool("nvdisasm"), "-c", str(cubin)], capture_output=True, text=True,
                              check=True).stdout


def registers_of(kernel) -> int:
    """Registers ptxas allocates for the kernel's PTX (its -v report)."""
    with tempfile.TemporaryDirectory() as tmp:
        ptx = Path(tmp) / "kernel.ptx"
        ptx.write_text(kernel.asm["ptx"])
        report = subprocess.run([_tool("ptxas"), "-arch=sm_90a", "-v", str(ptx), "-o", str(Path(tmp) / "k.cubin")],
                                capture_output=True, text=True, check=True).stderr
    return int(re.search(r"Used (\d+) registers", report).group(1))


def loads_before_first_use(sass: str) -> int:
    """LDGs issued from the first one until an instruction reads a register the first LDG loaded (128-bit: 4)."""
    count, first = 0, None
    for line in sass.splitlines():
        if not re.search(r"/\*[0-9a-f]{4}\*/", line):
            continue
        body = line.split("*/", 1)[1].split(";")[0]
        load = re.search(r"LDG\.E(?:\.128|\.64)?\s+R(\d+)", body)
        if first is None:
            if load:
                count, first = 1, int(load.group(1))
            continue
        sources = body.split(",", 1)[1] if "," in body else ""
        if {int(r) for r in re.findall(r"\bR(\d+)\b", sources)} & set(range(first, first + 4)):
            return count
        count += bool(load)
    return count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1)
    parser.add_argument("--configs", default="4096:16,8192:16,8192:8,8192:4",
                        help="BLOCK_N:num_warps pairs, comma-separated")
    args = parser.parse_args()
    print("ROWS BLOCK_N num_warps registers accumulators/thread loads_in_flight")
    for item in args.configs.split(","):
        block_n, warps = (int(v) for v in item.split(":"))
        kernel = compile_config(args.rows, block_n, warps)
        regs, sass = registers_of(kernel), sass_of(kernel)
        per_thread = args.rows * block_n // (32 * warps)
        print(f"{args.rows} {block_n} {warps} {regs} {per_thread} {loads_before_first_use(sass)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
