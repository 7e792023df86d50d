"""Per-token cross-entropy loss over a large vocabulary, without materializing softmax.

    loss[b] = logsumexp(logits[b, :]) - logits[b, targets[b]]     (0 where targets[b] == ignore_index)

One program per token row. A Llama-3 vocabulary (V = 128256) is far too wide for one
tile, so the row is streamed in ``BLOCK_V`` chunks with an online max ``m`` and a sum
``s`` of ``exp(x - m)`` rescaled whenever the max grows; the target's logit is one
scalar load at the end. Rows whose target is ``ignore_index`` (padding) skip the stream.

Logits are bf16 (as a model's lm_head writes them), the math and the loss are fp32.
The kernel is a single read of the logits: ``BLOCK_V`` and ``num_warps`` set how many
bytes each thread keeps in flight (too large a chunk for the warps spills registers).
``num_stages`` is tuned as users tune it, though Triton 3.6 software-pipelines a loop
without ``tl.dot`` only when the loop asks (``tl.range(..., num_stages=...)``).
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_V": 4096}, num_warps=8, num_stages=1),
        triton.Config({"BLOCK_V": 8192}, num_warps=16, num_stages=1),
        triton.Config({"BLOCK_V": 16384}, num_warps=32, num_stages=1),
    ],
    key=["V"],
)
@triton.jit
def cross_entropy_kernel(
    logits_ptr, targets_ptr, loss_ptr,
    V, stride_lb,
    ignore_index,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    # 64-bit row offset: B * V exceeds 2**31 elements for long sequences.
    row_ptr = logits_ptr + row.to(tl.int64) * stride_lb
    target = tl.load(targets_ptr + row)
    cols = tl.arange(0, BLOCK_V)

    loss = tl.full((), 0.0, tl.float32)
    if target != ignore_index:
        m = tl.full((), float("-inf"), tl.float32)
        s = tl.full((), 0.0, tl.float32)
        for start in range(0, V, BLOCK_V):
            offs = start + cols
            x = tl.load(row_ptr + offs, mask=offs < V, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, tl.max(x, axis=0))
            s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
            m = m_new
        x_target = tl.load(row_ptr + target).to(tl.float32)
        loss = m + tl.log(s) - x_target
    tl.store(loss_ptr + row, loss)
