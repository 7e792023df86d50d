"""Grouped GEMM of a mixture-of-experts layer: Y[s, :] = w[s] * (X[s // top_k] @ W[expert(s)]^T).

Each token of X [T, K] is routed to ``top_k`` experts; slot ``s = t * top_k + j`` is token
``t``'s j-th choice, with routing weight ``w[s]``, and gets its own output row of
Y [T * top_k, N]. W [E, N, K] holds one weight matrix per expert (nn.Linear layout).

One launch serves every expert. The host sorts the slots by expert into ``sorted_ids``
and pads each expert's segment to a multiple of 256 with the sentinel ``num_valid``
(= T * top_k), so that every BLOCK_M rows (BLOCK_M dividing 256) belong to one expert,
named by ``expert_ids`` (one entry per sorted row). A program takes BLOCK_M sorted rows
and BLOCK_N output columns: it gathers its rows of X, streams the expert's W tile along
K, and scatters the result to the slots' rows of Y. Padding rows are masked; a block of
padding only (the real slots come first in a segment) returns at once, which keeps
decode shapes (a few slots per expert, most of each 256-row segment padding) cheap.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=3),
    ],
    key=["N", "K"],
)
@triton.jit
def moe_gemm_kernel(x_ptr, w_ptr, y_ptr, topk_weights_ptr, sorted_ids_ptr, expert_ids_ptr,
                    N, K, top_k, num_valid, num_padded,
                    stride_xm, stride_xk, stride_we, stride_wn, stride_wk, stride_ym, stride_yn,
                    MUL_ROUTED_WEIGHT: tl.constexpr,
                    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                    GROUP_SIZE_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(num_padded, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    # grouped order: programs running together share the expert's W columns in L2
    per_group = GROUP_SIZE_M * num_pid_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group

    # a segment lists its real slots first: a block starting on padding is all padding
    if tl.load(sorted_ids_ptr + pid_m * BLOCK_M) >= num_valid:
        return
    expert = tl.load(expert_ids_ptr + pid_m * BLOCK_M).to(tl.int64)

    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    slots = tl.load(sorted_ids_ptr + offs_m)
    row_ok = slots < num_valid
    tokens = slots // top_k
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + tokens[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + expert * stride_we + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        x = tl.load(x_ptrs, mask=row_ok[:, None] & (offs_k[None, :] < k_left), other=0.0)
        w = tl.load(w_ptrs, mask=(offs_k[:, None] < k_left) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(x, w, acc)
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk

    if MUL_ROUTED_WEIGHT:
        gate = tl.load(topk_weights_ptr + slots, mask=row_ok, other=0.0)
        acc = acc * gate[:, None]
    y_ptrs = y_ptr + slots[:, None] * stride_ym + offs_n[None, :] * stride_yn
    tl.store(y_ptrs, acc.to(y_ptr.dtype.element_ty), mask=row_ok[:, None] & (offs_n[None, :] < N))
