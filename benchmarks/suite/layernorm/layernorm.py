"""Layer norm forward over the last axis: y = (x - mean) / sqrt(var + eps) * w + b.

x and y are [M, N] row-major (any row stride), w and b are [N]; loads and stores are in
the tensors' dtype (fp16/bf16), every statistic and the normalisation are in fp32.

Each program normalises ROWS rows as one [ROWS, BLOCK_N] tile, so that short rows
(N of a few hundred) still give every warp enough work and long rows (decode-like,
N = 8192) can be split over columns:

* ``N <= BLOCK_N``: one pass. The whole row tile stays in registers: mean, then the
  centred variance, then the normalised output, one read of x.
* ``N > BLOCK_N``: two passes over the columns. The first accumulates the sum and the
  sum of squares per column slot (fp32, reduced once after the loop); the second reads
  x again (mostly from L2) and writes y. var = E[x^2] - mean^2, clamped at 0: cheaper
  than Welford and accurate enough for activations of unit scale in fp16/bf16.

The tile lives in registers, ROWS * BLOCK_N / (32 * num_warps) fp32 elements per thread
for each live tile: large tiles on few warps spill, which is what the tuner must avoid.
The autotune list is what a project would ship; kernelrules' tuner searches a wider space.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"ROWS": 1, "BLOCK_N": 1024}, num_warps=4),
        triton.Config({"ROWS": 1, "BLOCK_N": 4096}, num_warps=8),
        triton.Config({"ROWS": 4, "BLOCK_N": 1024}, num_warps=8),
        triton.Config({"ROWS": 8, "BLOCK_N": 256}, num_warps=4),
    ],
    key=["N"],
)
@triton.jit
def layernorm_fwd_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr,
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
        mean = tl.sum(x, axis=1) / N
        xc = tl.where(mask, x - mean[:, None], 0.0)
        var = tl.sum(xc * xc, axis=1) / N
        rstd = tl.rsqrt(var + eps)
        w = tl.load(w_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + offs, mask=col_mask, other=0.0).to(tl.float32)
        y = xc * rstd[:, None] * w[None, :] + b[None, :]
        tl.store(y_rows + offs[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
    else:
        # Pass 1: sum and sum of squares, kept per column slot and reduced once.
        acc = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        acc_sq = tl.zeros([ROWS, BLOCK_N], dtype=tl.float32)
        for start in range(0, N, BLOCK_N):
            cols = start + offs
            mask = row_mask & (cols < N)[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            acc += x
            acc_sq += x * x
        mean = tl.sum(acc, axis=1) / N
        var = tl.maximum(tl.sum(acc_sq, axis=1) / N - mean * mean, 0.0)
        rstd = tl.rsqrt(var + eps)
        # Pass 2: normalise and store.
        for start in range(0, N, BLOCK_N):
            cols = start + offs
            col_mask = cols < N
            mask = row_mask & col_mask[None, :]
            x = tl.load(x_rows + cols[None, :], mask=mask, other=0.0).to(tl.float32)
            w = tl.load(w_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            b = tl.load(b_ptr + cols, mask=col_mask, other=0.0).to(tl.float32)
            y = (x - mean[:, None]) * rstd[:, None] * w[None, :] + b[None, :]
            tl.store(y_rows + cols[None, :], y.to(y_ptr.dtype.element_ty), mask=mask)
