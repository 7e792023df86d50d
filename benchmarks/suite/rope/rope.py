"""Rotary position embedding (rotate-half / NeoX layout), out of place.

For x [B, S, H, D] (fp16 or bf16, any strides) and tables cos, sin [S, D/2] (fp32, the
angles of position s), with x1 = x[..., :D/2] and x2 = x[..., D/2:]:

    out[..., :D/2] = x1 * cos - x2 * sin
    out[..., D/2:] = x2 * cos + x1 * sin

which is what ``x * cat(cos, cos) + rotate_half(x) * cat(sin, sin)`` computes in Llama.

The B * S tokens are flattened into one axis. A program owns BLOCK_S tokens and BLOCK_H
heads: it loads the cos/sin rows of its tokens once and applies them to all BLOCK_H heads
(the tables are shared by every head, so larger BLOCK_H reads them less often), then
rotates a [BLOCK_S, BLOCK_H, D/2] pair of half tiles in fp32 registers. Pure streaming:
one read and one write of x per element, so the knobs only trade parallelism (programs,
warps) against the per-program tile, which spills once BLOCK_S * BLOCK_H * D is large
for few warps.
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_S": 1, "BLOCK_H": 32}, num_warps=4),
        triton.Config({"BLOCK_S": 2, "BLOCK_H": 16}, num_warps=4),
        triton.Config({"BLOCK_S": 4, "BLOCK_H": 8}, num_warps=4),
        triton.Config({"BLOCK_S": 8, "BLOCK_H": 8}, num_warps=8),
        triton.Config({"BLOCK_S": 16, "BLOCK_H": 4}, num_warps=8),
    ],
    key=["n_heads", "HEAD_DIM"],
)
@triton.jit
def rope_fwd(x_ptr, cos_ptr, sin_ptr, out_ptr,
             n_tokens, seqlen, n_heads,
             stride_xb, stride_xs, stride_xh, stride_xd,
             stride_ob, stride_os, stride_oh, stride_od,
             stride_cs,
             HEAD_DIM: tl.constexpr, BLOCK_S: tl.constexpr, BLOCK_H: tl.constexpr):
    """Grid: (cdiv(B * S, BLOCK_S), cdiv(H, BLOCK_H)); cos and sin share the row stride stride_cs."""
    HALF: tl.constexpr = HEAD_DIM // 2
    tok = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    head = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    d = tl.arange(0, HALF)
    tok_ok = tok < n_tokens
    b = (tok // seqlen).to(tl.int64)
    s = tok % seqlen

    # The angles of this program's tokens: [BLOCK_S, 1, HALF], shared by all its heads.
    table = s[:, None] * stride_cs + d[None, :]
    cos = tl.load(cos_ptr + table, mask=tok_ok[:, None], other=0.0)[:, None, :]
    sin = tl.load(sin_ptr + table, mask=tok_ok[:, None], other=0.0)[:, None, :]

    mask = tok_ok[:, None, None] & (head < n_heads)[None, :, None]
    x_lo = (x_ptr + (b * stride_xb + s * stride_xs)[:, None, None]
            + head[None, :, None] * stride_xh + d[None, None, :] * stride_xd)
    x1 = tl.load(x_lo, mask=mask, other=0.0).to(tl.float32)
    x2 = tl.load(x_lo + HALF * stride_xd, mask=mask, other=0.0).to(tl.float32)

    o_lo = (out_ptr + (b * stride_ob + s * stride_os)[:, None, None]
            + head[None, :, None] * stride_oh + d[None, None, :] * stride_od)
    tl.store(o_lo, (x1 * cos - x2 * sin).to(out_ptr.dtype.element_ty), mask=mask)
    tl.store(o_lo + HALF * stride_od, (x2 * cos + x1 * sin).to(out_ptr.dtype.element_ty), mask=mask)
