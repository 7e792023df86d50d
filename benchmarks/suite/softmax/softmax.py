"""Row softmax with an online (single-pass) max/sum, looping over column chunks.

    y[m, :] = exp(x[m, :] - max(x[m, :])) / sum(exp(x[m, :] - max(x[m, :])))

One program per row. A row may be far longer than what fits in registers (logits of a
large vocabulary, long attention rows), so the row is streamed in ``BLOCK_N`` chunks:

* pass 1 keeps a running max ``m`` and a running sum ``s`` of ``exp(x - m)``; when a
  chunk raises the max, the sum so far is rescaled by ``exp(m_old - m_new)`` (the
  "online softmax" recurrence), so the row is read once to get both statistics;
* pass 2 reads the row again (mostly from L2) and writes ``exp(x - m) / s``.

Inputs and outputs are fp16 or bf16 (the pointer type decides); all math is fp32.
``BLOCK_N`` trades registers per thread (a large chunk with few warps spills) against
the two cross-warp reductions each chunk pays. ``num_stages`` is tuned as users tune
it, though Triton 3.6 software-pipelines a loop without ``tl.dot`` only when the loop
itself asks (``tl.range(..., num_stages=...)``), so here it should change nothing.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_N": 1024}, num_warps=4, num_stages=1),
        triton.Config({"BLOCK_N": 2048}, num_warps=8, num_stages=1),
        triton.Config({"BLOCK_N": 4096}, num_warps=8, num_stages=1),
        triton.Config({"BLOCK_N": 8192}, num_warps=16, num_stages=1),
    ],
    key=["N"],
)
@triton.jit
def softmax_kernel(
    x_ptr, y_ptr,
    M, N,
    stride_xm, stride_ym,
    BLOCK_N: tl.constexpr,
):
    row = tl.program_id(0)
    # 64-bit row offsets: M * N may exceed 2**31 elements.
    x_row = x_ptr + row.to(tl.int64) * stride_xm
    y_row = y_ptr + row.to(tl.int64) * stride_ym
    cols = tl.arange(0, BLOCK_N)

    # Pass 1: running max and rescaled running sum.
    m = tl.full((), float("-inf"), tl.float32)
    s = tl.full((), 0.0, tl.float32)
    for start in range(0, N, BLOCK_N):
        offs = start + cols
        x = tl.load(x_row + offs, mask=offs < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new

    # Pass 2: normalize and write.
    inv_s = 1.0 / s
    for start in range(0, N, BLOCK_N):
        offs = start + cols
        mask = offs < N
        x = tl.load(x_row + offs, mask=mask, other=float("-inf")).to(tl.float32)
        y = tl.exp(x - m) * inv_s
        tl.store(y_row + offs, y.to(y_ptr.dtype.element_ty), mask=mask)
