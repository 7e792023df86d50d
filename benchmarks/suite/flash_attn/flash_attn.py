"""Flash-attention forward: O = softmax(Q K^T * sm_scale [+ causal mask]) V, one pass over K/V.

Q, K, V and O are fp16 or bf16 tensors [B, H, S, D] given by strides (any layout whose
head dimension is addressable); the query and key lengths are separate runtime sizes, so
a prefill chunk of a few queries against a long KV cache is the same kernel.

One program owns BLOCK_M query rows of one (batch, head) and streams the keys in blocks
of BLOCK_N: the row maximum and the row sum of the softmax are kept online in fp32
(scores in the exp2 domain, the scale folded with log2(e)), the output accumulator
[BLOCK_M, HEAD_DIM] stays in fp32 registers and is normalised once at the end. The
loop over KV blocks is split in two: blocks that need no mask at all (the bulk of the
work, and what the compiler pipelines with num_stages), then the blocks that do (the
diagonal of a causal mask, the ragged tail of the keys). With CAUSAL, blocks entirely
above the diagonal are never visited; the mask is top-left aligned (query i sees keys
0..i), as torch's ``is_causal``.

The tile sizes trade registers for reuse: the accumulator and the scores cost
BLOCK_M * (HEAD_DIM + BLOCK_N) fp32 values per program, so large BLOCK_M with 4 warps
spills, and each K/V stage costs BLOCK_N * HEAD_DIM * 2 elements of shared memory (the two
loops run one after the other, so Triton lets the second reuse the first one's buffers:
measured on an H200, BLOCK_M=128, BLOCK_N=128, 3 stages takes 224 KB, not twice the stages).
"""

import triton
import triton.language as tl


@triton.jit
def _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn, stride_vk,
                 offs_m, offs_d, start, stop, seqlen_k, qk_scale,
                 BLOCK_N: tl.constexpr, MASKED: tl.constexpr, CAUSAL: tl.constexpr):
    """Fold the key blocks [start, stop) into the running (acc, l_i, m_i) of one query block."""
    offs_n = tl.arange(0, BLOCK_N)
    for start_n in range(start, stop, BLOCK_N):
        cols = start_n + offs_n
        k_ptrs = k_base + cols[None, :] * stride_kn + offs_d[:, None] * stride_kk      # [HEAD_DIM, BLOCK_N]
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :] * stride_vk      # [BLOCK_N, HEAD_DIM]
        if MASKED:
            k = tl.load(k_ptrs, mask=cols[None, :] < seqlen_k, other=0.0)
        else:
            k = tl.load(k_ptrs)
        qk = tl.dot(q, k) * qk_scale
        if MASKED:
            keep = cols[None, :] < seqlen_k
            if CAUSAL:
                keep = keep & (cols[None, :] <= offs_m[:, None])
            qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        if MASKED:
            v = tl.load(v_ptrs, mask=cols[:, None] < seqlen_k, other=0.0)
        else:
            v = tl.load(v_ptrs)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 64}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128}, num_warps=8, num_stages=2),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64}, num_warps=4, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 32}, num_warps=4, num_stages=4),
    ],
    key=["seqlen_q", "seqlen_k", "HEAD_DIM", "CAUSAL"],
)
@triton.jit
def flash_attn_fwd(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale,
                   stride_qz, stride_qh, stride_qm, stride_qk,
                   stride_kz, stride_kh, stride_kn, stride_kk,
                   stride_vz, stride_vh, stride_vn, stride_vk,
                   stride_oz, stride_oh, stride_om, stride_ok,
                   H, seqlen_q, seqlen_k,
                   HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                   CAUSAL: tl.constexpr):
    """Grid: (cdiv(seqlen_q, BLOCK_M), B * H)."""
    pid_m = tl.program_id(0)
    pid_zh = tl.program_id(1)
    z = (pid_zh // H).to(tl.int64)
    h = (pid_zh % H).to(tl.int64)
    q_base = q_ptr + z * stride_qz + h * stride_qh
    k_base = k_ptr + z * stride_kz + h * stride_kh
    v_base = v_ptr + z * stride_vz + h * stride_vh
    o_base = o_ptr + z * stride_oz + h * stride_oh

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < seqlen_q
    q = tl.load(q_base + offs_m[:, None] * stride_qm + offs_d[None, :] * stride_qk, mask=row_ok, other=0.0)

    qk_scale = sm_scale * 1.4426950408889634  # exp(x) == exp2(x * log2(e))
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)

    # Keys [0, full) need no mask; [full, stop) do (causal diagonal, ragged tail).
    full = (seqlen_k // BLOCK_N) * BLOCK_N
    stop = seqlen_k
    if CAUSAL:
        full = tl.minimum(full, (pid_m * BLOCK_M // BLOCK_N) * BLOCK_N)
        stop = tl.minimum(stop, (pid_m + 1) * BLOCK_M)
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn, stride_vk,
                                 offs_m, offs_d, 0, full, seqlen_k, qk_scale,
                                 BLOCK_N=BLOCK_N, MASKED=False, CAUSAL=CAUSAL)
    acc, l_i, m_i = _attn_blocks(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_kk, stride_vn, stride_vk,
                                 offs_m, offs_d, full, stop, seqlen_k, qk_scale,
                                 BLOCK_N=BLOCK_N, MASKED=True, CAUSAL=CAUSAL)

    out = acc / l_i[:, None]
    tl.store(o_base + offs_m[:, None] * stride_om + offs_d[None, :] * stride_ok,
             out.to(o_ptr.dtype.element_ty), mask=row_ok)
