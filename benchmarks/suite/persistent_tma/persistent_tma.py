"""Persistent fp16 GEMM with in-kernel tensor descriptors (TMA on Hopper): C[M, N] = A[M, K] @ B[K, N].

The grid is min(NUM_SMS, tiles): every program stays resident and walks the output tiles
with a stride of the grid, so tile scheduling costs no block launches and the next tile's
loads can start while the SM still holds the previous one. A, B and C are read and written
through ``tl.make_tensor_descriptor`` (TMA copies on sm_90, a block-shaped global<->shared
transfer with hardware bounds checks, so the kernel needs no masks). Descriptors built in
the kernel live in a global scratch buffer: the launcher must call ``triton.set_allocator``
(persistent_tma_harness.py does). Tiles are visited in GROUP_SIZE_M-row groups so that
programs running together share A rows and B columns in L2.

Requirements of TMA: the base pointers 16-byte aligned, the last dimension contiguous,
the other strides multiples of 16 bytes (K and N multiples of 8 for fp16); M is free.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=8, num_stages=4),
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=4),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 128, "GROUP_SIZE_M": 8}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def persistent_tma_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm, NUM_SMS,
                          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                          GROUP_SIZE_M: tl.constexpr):
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], block_shape=[BLOCK_M, BLOCK_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[stride_cm, 1], block_shape=[BLOCK_M, BLOCK_N])

    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles_per_group = GROUP_SIZE_M * num_pid_n

    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS):
        # grouped order: GROUP_SIZE_M rows of tiles are swept column by column
        group = tile // tiles_per_group
        first_m = group * GROUP_SIZE_M
        rows_in_group = tl.minimum(num_pid_m - first_m, GROUP_SIZE_M)
        in_group = tile % tiles_per_group
        off_m = (first_m + in_group % rows_in_group) * BLOCK_M
        off_n = (in_group // rows_in_group) * BLOCK_N

        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            a = a_desc.load([off_m, kt * BLOCK_K])
            b = b_desc.load([kt * BLOCK_K, off_n])
            acc = tl.dot(a, b, acc)
        c_desc.store([off_m, off_n], acc.to(c_ptr.dtype.element_ty))
