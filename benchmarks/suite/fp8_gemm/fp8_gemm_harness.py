"""Harness for fp8_gemm.py: quantized inputs with per-tensor scales, torch._scaled_mm as the baseline.

A and B are made the way an fp8 linear layer gets them: fp32 data divided by a
per-tensor scale (amax / 448, e4m3's largest value) and cast to float8_e4m3fn; the
scales travel as one-element fp32 tensors. The reference is computed in float64 from the
fp8 values themselves (so quantization is not counted as the kernel's error), and the
baseline is torch._scaled_mm, the call a PyTorch user makes, which the declared problem
section cannot name (it is not on the expression whitelist).
"""

import torch
import triton

E4M3_MAX = 448.0


class Fp8GemmHarness:
    outputs = ["c"]

    def __init__(self, sizes, device):
        self.M, self.N, self.K = sizes["M"], sizes["N"], sizes["K"]
        self.device = device

    def _quantize(self, x):
        scale = x.abs().amax().clamp(min=1e-12) / E4M3_MAX
        return (x / scale).to(torch.float8_e4m3fn), scale.reshape(1).float()

    def make(self, seed):
        generator = torch.Generator(device=self.device).manual_seed(seed)
        a, a_scale = self._quantize(torch.randn(self.M, self.K, generator=generator, device=self.device))
        b, b_scale = self._quantize(0.05 * torch.randn(self.N, self.K, generator=generator, device=self.device))
        c = torch.empty(self.M, self.N, device=self.device, dtype=torch.bfloat16)
        return {"a": a, "b": b, "a_scale": a_scale, "b_scale": b_scale, "c": c}

    def launch(self, kernel, tensors, config):
        a, b, c = tensors["a"], tensors["b"], tensors["c"]
        grid = (triton.cdiv(self.M, config["BLOCK_M"]) * triton.cdiv(self.N, config["BLOCK_N"]),)
        return kernel[grid](a, b, c, tensors["a_scale"], tensors["b_scale"], self.M, self.N, self.K,
                     a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **config)

    def reference(self, tensors):
        scale = tensors["a_scale"].double() * tensors["b_scale"].double()
        return {"c": (tensors["a"].double() @ tensors["b"].double().T) * scale}

    def reference_lowp(self, tensors):
        scale = tensors["a_scale"] * tensors["b_scale"]
        return {"c": ((tensors["a"].float() @ tensors["b"].float().T) * scale).bfloat16()}

    def baseline(self, tensors):
        if not hasattr(torch, "_scaled_mm"):  # an old PyTorch: time the upcast matmul instead
            return self.reference_lowp(tensors)["c"]
        return torch._scaled_mm(tensors["a"], tensors["b"].T, scale_a=tensors["a_scale"], scale_b=tensors["b_scale"],
                                out_dtype=torch.bfloat16)
