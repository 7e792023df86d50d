"""Harness for splitk_gemm.py: zeroes the fp32 output inside every launch.

The kernel accumulates with atomics, so C must be zero before each launch; real callers
do that zeroing, so it is part of what is timed. The declared problem section cannot
express a memset before the kernel, hence this class (docs/tune.md, "A harness instead").
"""

import torch
import triton


class SplitKHarness:
    outputs = ["c"]

    def __init__(self, sizes, device):
        self.M, self.N, self.K = sizes["M"], sizes["N"], sizes["K"]
        self.device = device

    def make(self, seed):
        generator = torch.Generator(device=self.device).manual_seed(seed)
        a = torch.randn(self.M, self.K, generator=generator, device=self.device).half()
        b = torch.randn(self.K, self.N, generator=generator, device=self.device).half()
        c = torch.empty(self.M, self.N, device=self.device, dtype=torch.float32)
        return {"a": a, "b": b, "c": c}

    def launch(self, kernel, tensors, config):
        a, b, c = tensors["a"], tensors["b"], tensors["c"]
        c.zero_()
        grid = (triton.cdiv(self.M, config["BLOCK_M"]) * triton.cdiv(self.N, config["BLOCK_N"]), config["SPLIT_K"])
        return kernel[grid](a, b, c, self.M, self.N, self.K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                     c.stride(0), c.stride(1), **config)

    def reference(self, tensors):
        return {"c": tensors["a"].double() @ tensors["b"].double()}

    def reference_lowp(self, tensors):
        return {"c": tensors["a"].float() @ tensors["b"].float()}

    def baseline(self, tensors):
        return torch.matmul(tensors["a"], tensors["b"])
