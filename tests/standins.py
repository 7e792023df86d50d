"""Stand-ins for launch arguments, shared by the tests that prune or compile without torch.

kernelrules reads only a tensor's dtype and its data pointer (for 16-byte alignment),
so a small object with both stands in for a tensor and no GPU or torch is needed.
"""

from __future__ import annotations


class FakeTensor:
    """Enough of a tensor for kernelrules: a dtype and a 16-byte-aligned data pointer."""

    def __init__(self, dtype: str = "torch.float16") -> None:
        self.dtype = dtype

    def data_ptr(self) -> int:
        return 1 << 20


def matmul_named_args(M: int = 4096, N: int = 4096, K: int = 4096) -> dict:
    """``named_args`` of examples/matmul.py's kernel for row-major fp16 A (M x K), B (K x N), C (M x N)."""
    a, b, c = FakeTensor(), FakeTensor(), FakeTensor()
    return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": M, "N": N, "K": K, "stride_am": K, "stride_ak": 1,
            "stride_bk": N, "stride_bn": 1, "stride_cm": N, "stride_cn": 1}


def matmul_args(M: int = 4096, N: int = 4096, K: int = 4096) -> tuple:
    """The same arguments, positional, as a launch passes them."""
    return tuple(matmul_named_args(M, N, K).values())
