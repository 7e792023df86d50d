"""Fused SiLU-and-multiply (the SwiGLU activation of LLM MLPs): out = silu(gate) * up.

The input is the output of the fused gate/up projection, [M, 2N] with the gate in
columns [0, N) and the up projection in [N, 2N) (the layout vLLM and most inference
stacks use); the output is [M, N]. Loads and stores are bf16, silu(g) = g * sigmoid(g)
and the product are in fp32.

A program owns a [BLOCK_M, BLOCK_N] tile of the output and reads the two matching input
tiles, so a decode batch of a few rows still spreads over the GPU along N while a
prefill batch can take several rows per program. Purely memory-bound: the knobs trade
per-thread work (BLOCK_M * BLOCK_N / (32 * num_warps) elements, which spill when too
many) against the number of programs. The autotune list is what a project would ship;
the tuner searches a wider space.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 1, "BLOCK_N": 1024}, num_warps=4),
        triton.Config({"BLOCK_M": 4, "BLOCK_N": 1024}, num_warps=8),
        triton.Config({"BLOCK_M": 8, "BLOCK_N": 512}, num_warps=4),
    ],
    key=["N"],
)
@triton.jit
def swiglu_fwd_kernel(
    x_ptr, out_ptr,
    M, N,
    stride_xm, stride_om,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rows < M)[:, None] & (cols < N)[None, :]

    gate_ptrs = x_ptr + rows.to(tl.int64)[:, None] * stride_xm + cols[None, :]
    gate = tl.load(gate_ptrs, mask=mask, other=0.0).to(tl.float32)
    up = tl.load(gate_ptrs + N, mask=mask, other=0.0).to(tl.float32)
    out = gate * tl.sigmoid(gate) * up

    out_ptrs = out_ptr + rows.to(tl.int64)[:, None] * stride_om + cols[None, :]
    tl.store(out_ptrs, out.to(out_ptr.dtype.element_ty), mask=mask)
