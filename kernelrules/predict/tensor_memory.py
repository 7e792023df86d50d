"""Tensor memory on Blackwell (sm_100): the columns Triton allocates for tcgen05 accumulators.

Tensor memory is 128 lanes by 512 columns of 32 bits per SM. Triton keeps every tcgen05
accumulator there and checks the kernel's total, ``metadata.tmem_size``, against 512 when
the kernel is loaded (MEM004). These functions predict that total from the accumulators'
tiles: :func:`tmem_chunk` is one accumulator's allocation, :func:`tmem_allocation_size`
places several as Triton's TensorMemoryAllocation pass does (docs/blackwell.md has the
measurements).
"""

from __future__ import annotations

from typing import Sequence

TMEM_LANES, TMEM_MIN_COLUMNS = 128, 32


def tmem_chunk(m: int, n: int, acc_bits: int = 32) -> tuple[int, int]:
    """(lane halves, 32-bit columns) of one M x N tcgen05 accumulator's allocation (Triton 3.6).

    Its ``tensor_memory_encoding`` has blockM = 64 when M is 64 (else 128 lanes) and
    blockN = min(N, 256). A 128-lane block takes blockN columns of both 64-lane halves; a
    single 64-row block takes one half, and a 64-row accumulator of several blocks pairs
    them in the two halves.
    """
    block_n = min(n, 256)
    columns = -(-block_n * acc_bits // 32)
    blocks_n = -(-n // block_n)
    if m <= 64:
        if blocks_n == 1:
            return 1, columns
        return 2, columns * -(-blocks_n // 2)
    return 2, columns * -(-m // TMEM_LANES) * blocks_n


def tmem_allocation_size(chunks: Sequence[tuple[int, int]]) -> int:
    """Triton's ``metadata.tmem_size`` for accumulators that are all live at once, in program order.

    Triton's TensorMemoryAllocation pass places each allocation first-fit in a map of two
    64-lane halves by columns, at a column that is a multiple of 4; a 64-row allocation
    may take the half another leaves free. The size is the furthest column used, rounded up
    to 32, 64, 128, 256 or 512 when it fits (beyond 512 it is left as is and the kernel
    cannot load).
    """
    used: list[set[int]] = [set(), set()]  # the columns taken in each half
    size = 0
    for halves, columns in chunks:
        start = 0
        while True:
            rows = [r for r in range(2 - halves + 1)
                    if all(not (set(range(start, start + columns)) & used[r + k]) for k in range(halves))]
            if rows:
                for k in range(halves):
                    used[rows[0] + k].update(range(start, start + columns))
                size = max(size, start + columns)
                break
            start += 4
    if 0 < size <= 512:
        size = next(c for c in (TMEM_MIN_COLUMNS, 64, 128, 256, 512) if size <= c)
    return size


def tmem_columns(m: int, n: int, acc_bits: int = 32) -> int:
    """Tensor-memory columns of one M x N tcgen05 accumulator alone. Measured on sm_100:
    64x256 and 64x512 take 256 columns, 128x256 and 256x128 take 256, 256x256 takes 512,
    M x 16 takes 32."""
    return tmem_allocation_size([tmem_chunk(m, n, acc_bits)])
