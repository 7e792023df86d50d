"""Launcher for persistent_tma.py: the part a declared problem section cannot say.

* ``triton.set_allocator``: tensor descriptors made inside a kernel need a global scratch
  buffer at launch (128 bytes per descriptor per program on sm_90); set before every launch
  because the allocator is a context variable (per thread).
* the persistent grid, min(NUM_SMS, tiles), with NUM_SMS the GPU's SM count (132 on the
  H200); on the CPU (interpreter) a small fixed count, so every program loops over several
  tiles and the tile walk itself is checked.
"""

import torch
import triton

CPU_SMS = 4


class PersistentTmaHarness:
    outputs = ["c"]

    def __init__(self, sizes, device):
        self.M, self.N, self.K = sizes["M"], sizes["N"], sizes["K"]
        self.device = device
        if device == "cpu":
            self.num_sms = CPU_SMS
        else:
            self.num_sms = torch.cuda.get_device_properties(torch.device(device)).multi_processor_count

    def _alloc(self, size, alignment, stream):
        return torch.empty(size, dtype=torch.int8, device=self.device)

    def make(self, seed):
        g = torch.Generator(device=self.device).manual_seed(seed)
        a = torch.randn(self.M, self.K, generator=g, device=self.device).to(torch.float16)
        b = torch.randn(self.K, self.N, generator=g, device=self.device).to(torch.float16)
        c = torch.empty(self.M, self.N, dtype=torch.float16, device=self.device)
        return {"a": a, "b": b, "c": c}

    def launch(self, kernel, tensors, config):
        a, b, c = tensors["a"], tensors["b"], tensors["c"]
        tiles = triton.cdiv(self.M, config["BLOCK_M"]) * triton.cdiv(self.N, config["BLOCK_N"])
        triton.set_allocator(self._alloc)
        grid = (min(self.num_sms, tiles),)
        return kernel[grid](a, b, c, self.M, self.N, self.K, a.stride(0), b.stride(0), c.stride(0), self.num_sms,
                            **config)

    def reference(self, tensors):
        return {"c": tensors["a"].double() @ tensors["b"].double()}

    def reference_lowp(self, tensors):
        return {"c": tensors["a"] @ tensors["b"]}

    def baseline(self, tensors):
        return torch.matmul(tensors["a"], tensors["b"])
