"""Split-K fp16 GEMM: C (fp32) += A @ B, the K axis shared out among SPLIT_K programs.

A (M, K) and B (K, N) are fp16; each program multiplies one BLOCK_M x BLOCK_N tile of C
over a contiguous slice of K (whole BLOCK_K steps) with an fp32 accumulator and adds its
partial sum into C with fp32 atomics. The caller zeroes C first. Split-K is the answer
when M x N has too few tiles to fill the GPU but K is long (small projections, decode
with long reductions): the second grid axis multiplies the programs by SPLIT_K at the
price of SPLIT_K x M x N atomic fp32 traffic. With SPLIT_K == 1 the tile is stored
plainly. Tiles are visited in groups of GROUP_SIZE_M rows for L2 reuse of B.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "SPLIT_K": 4, "GROUP_SIZE_M": 8},
                      num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 2, "GROUP_SIZE_M": 8},
                      num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 256, "SPLIT_K": 8, "GROUP_SIZE_M": 8},
                      num_stages=3, num_warps=4),
    ],
    key=["M", "N", "K"],
    reset_to_zero=["c_ptr"],
)
@triton.jit
def splitk_gemm_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    SPLIT_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
):
    """Program (pid, pid_k) adds tile pid of C's partial product over slice pid_k of K."""
    pid = tl.program_id(axis=0)
    pid_k = tl.program_id(axis=1)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    group_rows = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    # this program's slice of K: a whole number of BLOCK_K steps
    k_steps = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)
    k_start = pid_k * k_steps * BLOCK_K

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = k_start + tl.arange(0, BLOCK_K)
    rows = offs_m % M  # wrapped: loads stay in bounds, the store is masked
    cols = offs_n % N
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, k_steps):
        k_left = K - k_start - step * BLOCK_K
        a = tl.load(a_ptrs, mask=tl.arange(0, BLOCK_K)[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=tl.arange(0, BLOCK_K)[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptrs, acc, mask=mask)
    else:
        tl.atomic_add(c_ptrs, acc, mask=mask, sem="relaxed")


def splitk_matmul(a, b):
    """C = A @ B in fp32 for 2-D fp16 torch tensors (the autotuned launch)."""
    import torch

    M, K = a.shape
    _, N = b.shape
    c = torch.zeros((M, N), device=a.device, dtype=torch.float32)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]), meta["SPLIT_K"])

    splitk_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                             c.stride(0), c.stride(1))
    return c
