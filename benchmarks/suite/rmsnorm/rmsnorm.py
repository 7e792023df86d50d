"""RMS norm forward over the last axis: y = x / sqrt(mean(x^2) + eps) * w.

x and y are [M, N] row-major (any row stride), w is [N]; loads and stores are in the
tensors' dtype (bf16 in the suite), the mean of squares and the scaling are in fp32, as
LLM inference stacks do it before every attention and MLP block.

Each program handles ROWS rows as one [ROWS, BLOCK_N] tile: short rows give every warp
enough work by stacking rows, long rows (decode: a few rows of 8192) are split over
columns.

* ``N <= BLOCK_N``: one pass, the row tile stays in registers between the reduction and
  the scaling (x is read once).
* ``N > BLOCK_N``: two passes over the columns, the first accumulating x^2 per column
  slot in fp32 (reduced once after the loop), the second reading x again (mostly from
  L2) to scale and store it.

ROWS * BLOCK_N / (32 * num_warps) fp32 elements per thread are live per tile; large
tiles on few warps spill. The autotune list is what a project would ship; the tuner
searches a wider space.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1, "BLOCK_N": 1024}, num_warps=4),
        triton.Config({"ROWS": 1, "BLOCK_N": 4096}, num_warps=8),
        triton.Config({"ROWS": 4, "BLOCK_N": 1024}, num_warps=8),
        triton.Config({"ROWS": 8, "BLOCK_N": 512}, num_warps=4),
    ],
    key=["N"],
)
@triton.jit
def rmsnorm_fwd_kernel(
    x_ptr, w_ptr, y_ptr,
    M, N,
    stride_xm, stride_ym,
    eps,
    ROWS: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * ROWS + tl.arange(0, ROWS)
    row_mask = (rows < M)[:, None]
    x_rows = x_ptr + rows.to(tl.int64)[:, None] * stride_xm
    y_rows = y_ptr + rows.to(tl.int64)[:, None] * stride_ym
    offs = tl.arange(0, BLOCK_N)

    if N <= BLOCK_N:
        # One pass: the row tile stays in registers.
        col_mask = offs < N
        mask = row_mask & col_mask[None, :]
        x = tl.load(x_rows + offs[None, :], mask=mask, other=0.0).to(tl.float32)
        rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
        w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        y = x * rstd[:, None] * w[None, :]
        tl.store(y_rows + offs[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Pass 1: sum of squares, kept per column slot and reduced once.
        acc_sq = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for start in range(0, N, BLOCK_N):
            cols = start + offs
            mask = row_mask & (cols < N)[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            acc_sq += x * x
        rstd = tl.rsqrt(tl.sum(acc_sq, axis=1) / N + eps)
        # Pass 2: scale and store.
        for start in range(0, N, BLOCK_N):
            cols = start + offs
            col_mask = cols < N
            mask = row_mask & col_mask[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            y = x * rstd[:, None] * w[None, :]
            tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
