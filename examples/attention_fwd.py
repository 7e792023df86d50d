"""Fused attention forward (softmax(Q K^T * scale) V), one program per query block, for kernelrules' examples.

Each program keeps a BLOCK_M x HEAD_DIM tile of queries and streams the keys and
values in blocks of BLOCK_N, with the online-softmax rescaling (running maximum and
running sum in float32). Two dots per iteration: Q K^T (BLOCK_M x BLOCK_N, K = HEAD_DIM)
and P V (BLOCK_M x HEAD_DIM, K = BLOCK_N). The config list has one config too large for
Ada's shared memory and one whose second dot's K (BLOCK_N = 8) is below Triton's minimum.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 8}, num_warps=4, num_stages=2),
    ],
    key=["seq_len"],
)
@triton.jit
def attention_fwd_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr,
    stride_qh, stride_qm, stride_qd,
    stride_kh, stride_kn, stride_kd,
    stride_vh, stride_vn, stride_vd,
    stride_oh, stride_om, stride_od,
    seq_len, scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    """o[head, rows] = attention of one block of query rows against all keys of the head."""
    block = tl.program_id(0)
    head = tl.program_id(1)
    rows = block * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head * stride_qh + rows[:, None] * stride_qm + dims[None, :] * stride_qd,
                mask=rows[:, None] < seq_len, other=0.0)
    running_max = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    running_sum = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    for start in range(0, seq_len, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + head * stride_kh + cols[None, :] * stride_kn + dims[:, None] * stride_kd,
                    mask=cols[None, :] < seq_len, other=0.0)
        scores = tl.dot(q, k) * scale
        scores = tl.where(cols[None, :] < seq_len, scores, float("-inf"))
        new_max = tl.maximum(running_max, tl.max(scores, axis=1))
        correction = tl.exp(running_max - new_max)
        p = tl.exp(scores - new_max[:, None])
        running_sum = running_sum * correction + tl.sum(p, axis=1)
        v = tl.load(v_ptr + head * stride_vh + cols[:, None] * stride_vn + dims[None, :] * stride_vd,
                    mask=cols[:, None] < seq_len, other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        running_max = new_max
    out = acc / running_sum[:, None]
    tl.store(o_ptr + head * stride_oh + rows[:, None] * stride_om + dims[None, :] * stride_od,
             out.to(o_ptr.dtype.element_ty), mask=rows[:, None] < seq_len)


def attention(q, k, v, scale):
    """Attention over (heads, seq_len, head_dim) torch tensors."""
    import torch

    heads, seq_len, head_dim = q.shape
    o = torch.empty_like(q)
    grid = lambda meta: (triton.cdiv(seq_len, meta["BLOCK_M"]), heads)  # noqa: E731
    attention_fwd_kernel[grid](q, k, v, o, *q.stride(), *k.stride(), *v.stride(), *o.stride(),
                               seq_len, scale, HEAD_DIM=head_dim)
    return o
