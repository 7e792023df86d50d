"""An Inductor-style fused pointwise kernel (bias add, GELU, residual add), for kernelrules' examples.

Written the way torch.compile's Inductor writes its pointwise kernels: a flat index
space of `xnumel` elements, XBLOCK elements per program, masked loads and stores,
float32 math. One config's XBLOCK is not a power of two (a hand-edit that Triton
rejects at compile time).
"""

import triton
import triton.language as tl


@triton.autotune(
    configs=[
        triton.Config({"XBLOCK": 256}, num_warps=4),
        triton.Config({"XBLOCK": 1024}, num_warps=4),
        triton.Config({"XBLOCK": 1000}, num_warps=4),
    ],
    key=["xnumel"],
)
@triton.jit
def fused_bias_gelu_residual(in_ptr0, in_ptr1, in_ptr2, out_ptr0, xnumel, hidden, XBLOCK: tl.constexpr):
    """out = gelu(x + bias[col]) + residual, elementwise over xnumel elements."""
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)
    xmask = xindex < xnumel
    col = xindex % hidden
    x = tl.load(in_ptr0 + xindex, xmask, other=0.0).to(tl.float32)
    bias = tl.load(in_ptr1 + col, xmask, eviction_policy="evict_last", other=0.0).to(tl.float32)
    residual = tl.load(in_ptr2 + xindex, xmask, other=0.0).to(tl.float32)
    h = x + bias
    gelu = 0.5 * h * (1.0 + tl.erf(h * 0.7071067811865476))
    tl.store(out_ptr0 + xindex, (gelu + residual).to(out_ptr0.dtype.element_ty), xmask)
