"""Row-wise softmax over a 2-D tensor, one program per row, written for kernelrules' examples.

Each program loads a whole row (BLOCK_SIZE >= n_cols, a power of two), subtracts the
row maximum for stability, exponentiates and normalises. The autotune list sweeps
warps; a 6-warp config is a mistake kernelrules should catch (Triton asserts that
num_warps is a power of two).
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=4),
        triton.Config({"BLOCK_SIZE": 1024}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=8),
        triton.Config({"BLOCK_SIZE": 2048}, num_warps=6),
        triton.Config({"BLOCK_SIZE": 4096}, num_warps=16),
    ],
    key=["n_cols"],
)
@triton.jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    """out[row] = softmax(in[row]) for the program's row."""
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf")).to(tl.float32)
    x = x - tl.max(x, axis=0)
    numerator = tl.exp(x)
    result = numerator / tl.sum(numerator, axis=0)
    tl.store(out_ptr + row * out_row_stride + cols, result.to(out_ptr.dtype.element_ty), mask=mask)


def softmax(x):
    """Softmax over the last dimension of a 2-D torch tensor."""
    import torch

    rows, cols = x.shape
    out = torch.empty_like(x)
    softmax_kernel[(rows,)](out, x, x.stride(0), out.stride(0), cols)
    return out
