"""Layer normalisation forward, one program per row, written for kernelrules' examples.

y = (x - mean) / sqrt(var + eps) * w + b over the last dimension, computed in
float32 in blocks of BLOCK_SIZE columns (two passes over the row: statistics, then
the normalised output). The configs include an AMD-only `waves_per_eu`, copied from a
ROCm tuning table: on NVIDIA, Triton raises KeyError at launch.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 512}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 1024, "waves_per_eu": 2}, num_warps=8),
    ],
    key=["n_cols"],
)
@triton.jit
def layernorm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    """Normalise one row of x into y."""
    row = tl.program_id(0)
    x_row = x_ptr + row * row_stride
    y_row = y_ptr + row * row_stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    total_sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        total += x
        total_sq += x * x
    mean = tl.sum(total, axis=0) / n_cols
    var = tl.sum(total_sq, axis=0) / n_cols - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        y = (x - mean) * rstd * w + b
        tl.store(y_row + cols, y.to(y_ptr.dtype.element_ty), mask=mask)


def layernorm(x, weight, bias, eps=1e-5):
    """Layer norm over the last dimension of a 2-D torch tensor."""
    import torch

    rows, cols = x.shape
    y = torch.empty_like(x)
    layernorm_kernel[(rows,)](x, y, weight, bias, x.stride(0), cols, eps)
    return y
