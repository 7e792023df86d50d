"""Cross-compile a small tl.dot for each fp8 dtype and NVIDIA target; print the MMA it lowers to.

Evidence for the fp8 rules (DTY001, DTY002, DTY004): which fp8 dtypes Triton
accepts per compute capability, and which ones are upcast to fp16 before the
tensor cores (also on the mma.sync fallback of sm_90 and sm_100 when M < 64). Runs on a CPU: ``python benchmarks/verify_fp8_paths.py``.
"""

import warnings

import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.arange(0, BM)
    rn = tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a = tl.load(a_ptr + rm[:, None] * BK + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * BN + rn[None, :])
    tl.store(c_ptr + rm[:, None] * BN + rn[None, :], tl.dot(a, b))


def lowering(capability: int, dtype: str, bm: int = 64) -> str:
    """Compile for one target and dtype; describe the MMA instruction or the failure."""
    signature = {"a_ptr": "*" + dtype, "b_ptr": "*" + dtype, "c_ptr": "*fp32",
                 "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    source = ASTSource(dot_kernel, signature, constexprs={"BM": bm, "BN": 64, "BK": 32})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            kernel = triton.compile(source, target=GPUTarget("cuda", capability, 32), options={"num_warps": 4})
    except Exception as exc:  # the compile error is the result we want to show
        return "compile error: " + str(exc).strip().splitlines()[-1][:120]
    mma = sorted({word for line in kernel.asm["ptx"].splitlines() for word in line.split()[:2]
                  if word.startswith(("wgmma.mma_async", "mma.sync", "tcgen05.mma"))})
    upcast = "tt.fp_to_fp" in kernel.asm["ttgir"]
    return f"{mma[0] if mma else 'no mma'}{' (after tt.fp_to_fp upcast)' if upcast else ''}"


def main() -> None:
    print(f"Triton {triton.__version__}")
    for capability in (80, 86, 89, 90, 100, 120):
        for dtype in ("fp8e5", "fp8e4nv", "fp8e4b15", "fp16"):
            print(f"sm_{capability} {dtype:9s} {lowering(capability, dtype)}")
    for capability in (90, 100):  # M = 16 is below the wgmma/tcgen05 M multiple: the mma.sync fallback
        for dtype in ("fp8e5", "fp8e4nv"):
            print(f"sm_{capability} {dtype:9s} M=16 {lowering(capability, dtype, bm=16)}")


if __name__ == "__main__":
    main()
