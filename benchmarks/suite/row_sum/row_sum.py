"""Sum over the last axis: y[m] = sum(x[m, :]), fp32 accumulation.

Each program owns ``ROWS`` rows and walks the columns in ``BLOCK_N`` chunks, adding every
chunk into a ``[ROWS, BLOCK_N]`` fp32 accumulator tile; the tile is reduced across
columns once, after the loop, so the loop body is only loads and adds (no cross-warp
reduction per chunk). Many short rows want ``ROWS > 1`` (one program per row would be a
tiny launch each); a few very long rows want ``ROWS = 1`` and a wide ``BLOCK_N``.

The accumulator lives in registers: ``ROWS * BLOCK_N / (32 * num_warps)`` fp32 values
per thread, so a large tile on few warps spills to local memory. ``num_stages`` is tuned
as users tune it, though Triton 3.6 software-pipelines a loop without ``tl.dot`` only
when the loop asks (``tl.range(..., num_stages=...)``), so it should change nothing.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1, "BLOCK_N": 4096}, num_warps=8, num_stages=1),
        triton.Config({"ROWS": 4, "BLOCK_N": 1024}, num_warps=4, num_stages=1),
        triton.Config({"ROWS": 16, "BLOCK_N": 256}, num_warps=4, num_stages=1),
    ],
    key=["M", "N"],
)
@triton.jit
def row_sum_kernel(
    x_ptr, y_ptr,
    M, N,
    stride_xm,
    ROWS: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_mask = rows < M
    # 64-bit row offsets: M * N may exceed 2**31 elements.
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_xm
    cols = tl.arange(0, BLOCK_N)

    acc = tl.zeros((ROWS, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        offs = start + cols
        mask = row_mask[:, None] & (offs < N)[None, :]
        acc += tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
    tl.store(y_ptr + rows, tl.sum(acc, axis=1), mask=row_mask)
