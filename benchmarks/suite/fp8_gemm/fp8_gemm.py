"""FP8 (e4m3) GEMM with per-tensor scales: C (bf16) = (A @ B^T) * a_scale * b_scale.

A is (M, K) and B is (N, K), both float8_e4m3fn and K-major, as fp8 weights and
activations are usually stored (a linear layer's weight is (out, in)); the kernel reads
B's tiles as (BLOCK_K, BLOCK_N) through its strides, so no transposed copy is made. The
scales are one-element fp32 tensors (read in the kernel, so the launch never syncs to
fetch them). Products accumulate in fp32; the scales are applied once to the finished
tile, which is rounded to bf16. Tiles are visited in groups of GROUP_SIZE_M rows so that
neighbouring programs share B's tiles in L2. On Hopper the fp8 dot lowers to wgmma when
BLOCK_M >= 64 (and 4 or 8 warps), to an fp16 mma.sync after an upcast otherwise.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 128, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=8),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 256, "GROUP_SIZE_M": 8}, num_stages=3, num_warps=4),
        triton.Config({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 256, "GROUP_SIZE_M": 8}, num_stages=4, num_warps=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def fp8_gemm_kernel(
    a_ptr, b_ptr, c_ptr,
    a_scale_ptr, b_scale_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bn, stride_bk,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    """One program computes one BLOCK_M x BLOCK_N tile of C."""
    pid = tl.program_id(axis=0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_SIZE_M * tiles_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    group_rows = min(tiles_m - first_m, GROUP_SIZE_M)
    tile_m = first_m + (pid % per_group) % group_rows
    tile_n = (pid % per_group) // group_rows

    offs_m = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    rows = offs_m % M  # wrapped: loads stay in bounds, the store is masked
    cols = offs_n % N
    a_ptrs = a_ptr + rows[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + cols[None, :] * stride_bn  # B^T's tile, read from (N, K)

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_left = K - k * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < k_left, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < k_left, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    scale = tl.load(a_scale_ptr) * tl.load(b_scale_ptr)
    c = (acc * scale).to(c_ptr.dtype.element_ty)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


def fp8_matmul(a, b, a_scale, b_scale):
    """bf16 (A @ B^T) * a_scale * b_scale for fp8 A (M, K), B (N, K) and one-element fp32 scales."""
    import torch

    M, K = a.shape
    N, _ = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.bfloat16)

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    fp8_gemm_kernel[grid](a, b, c, a_scale, b_scale, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                          c.stride(0), c.stride(1))
    return c
