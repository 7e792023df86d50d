"""A tiled fp16 matrix multiply tuned the way AMD GPUs are: HIP-style autotune configs.

C = A @ B with A (M, K), B (K, N), fp32 accumulation, output in C's dtype. The configs
carry the options only Triton's AMD backend understands: ``waves_per_eu`` (a VGPR budget
for N waves per SIMD), ``matrix_instr_nonkdim`` (the MFMA size, 16 or 32) and ``kpack``
(K elements per thread of an MFMA operand), with the two pipeline stages the HIP backend
defaults to. Some of them are wrong for a gfx942 (MI300X) on purpose, and all of them are
wrong for NVIDIA: ``kernelrules lint examples/matmul_amd.py --arch gfx942`` says which and
why, from a CPU.
"""

import triton
import triton.language as tl


def _hip_configs():
    """Ten HIP-style configs: tile, warps, stages, then the AMD options."""
    rows = [
        # BM, BN, BK, warps, stages, waves_per_eu, matrix_instr_nonkdim, kpack
        (256, 256, 64, 8, 2, 2, 16, 2),
        (128, 256, 64, 8, 2, 2, 16, 1),
        (256, 128, 32, 8, 2, 2, 16, 2),
        (128, 128, 64, 4, 2, 2, 16, 2),
        (128, 128, 64, 4, 2, 4, 16, 1),   # waves_per_eu=4 caps VGPRs at 128: spills
        (128, 128, 64, 4, 3, 0, 32, 1),
        (64, 128, 64, 4, 2, 3, 16, 1),
        (128, 128, 64, 8, 2, 3, 16, 2),   # 8 warps put 2 waves on each SIMD: 3 is unreachable
        (256, 256, 64, 8, 3, 2, 16, 2),   # 131072 bytes of LDS: over the 64 KiB
        (64, 64, 64, 4, 2, 8, 4, 1),      # matrix_instr_nonkdim=4: no MFMA fits
    ]
    return [
        triton.Config(
            {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_SIZE_M": 4,
             "waves_per_eu": wpe, "matrix_instr_nonkdim": nonk, "kpack": kp},
            num_warps=w, num_stages=s,
        )
        for bm, bn, bk, w, s, wpe, nonk, kp in rows
    ]


@triton.autotune(configs=_hip_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_amd_kernel(
    a_ptr, b_ptr, c_ptr,
    M, N, K,
    stride_am, stride_ak,
    stride_bk, stride_bn,
    stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_SIZE_M: tl.constexpr,
):
    """One program computes one BLOCK_M x BLOCK_N tile of C, programs grouped along M."""
    pid = tl.program_id(axis=0)
    num_m = tl.cdiv(M, BLOCK_M)
    num_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_SIZE_M * num_n
    first_m = (pid // per_group) * GROUP_SIZE_M
    rows_in_group = min(num_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + (pid % per_group) % rows_in_group
    pid_n = (pid % per_group) // rows_in_group

    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for step in range(0, tl.cdiv(K, BLOCK_K)):
        remaining = K - step * BLOCK_K
        a = tl.load(a_ptrs, mask=offs_k[None, :] < remaining, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < remaining, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    c_rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    c_cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + c_rows[:, None] * stride_cm + c_cols[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(c_ptr.dtype.element_ty), mask=(c_rows[:, None] < M) & (c_cols[None, :] < N))


def matmul_amd(a, b):
    """C = A @ B for 2-D fp16 torch tensors on an AMD GPU (ROCm build of PyTorch)."""
    import torch

    assert a.shape[1] == b.shape[0], "inner dimensions differ"
    M, K = a.shape
    N = b.shape[1]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)  # noqa: E731
    matmul_amd_kernel[grid](
        a, b, c, M, N, K,
        a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
    )
    return c
