"""Inputs for cross_entropy.py: class targets must lie in [0, V), and a few rows are padding.

A declared problem section can only fill integers in [-4, 4], so this harness draws the
targets itself and marks every 13th row (from row 5) with ``ignore_index`` = -100, as a
padded batch would; those rows must come out as 0 (``reduction='none'``).
"""

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100


class CrossEntropyHarness:
    outputs = ["loss"]

    def __init__(self, sizes, device):
        self.B, self.V, self.device = sizes["B"], sizes["V"], device

    def make(self, seed):
        gen = torch.Generator(device=self.device).manual_seed(seed)
        # Logits spread like a trained model's (std 3), stored in bf16.
        logits = (3 * torch.randn(self.B, self.V, generator=gen, device=self.device)).to(torch.bfloat16)
        targets = torch.randint(0, self.V, (self.B,), generator=gen, device=self.device)
        targets[5::13] = IGNORE_INDEX
        loss = torch.empty(self.B, dtype=torch.float32, device=self.device)
        return {"logits": logits, "targets": targets, "loss": loss}

    def launch(self, kernel, tensors, config):
        logits = tensors["logits"]
        return kernel[(self.B,)](logits, tensors["targets"], tensors["loss"], self.V, logits.stride(0), IGNORE_INDEX,
                          **config)

    def reference(self, tensors):
        x, t = tensors["logits"].double(), tensors["targets"]
        valid = t != IGNORE_INDEX
        picked = x.gather(1, t.clamp_min(0)[:, None])[:, 0]
        return {"loss": torch.where(valid, torch.logsumexp(x, dim=-1) - picked, 0.0)}

    def baseline(self, tensors):
        return F.cross_entropy(tensors["logits"], tensors["targets"], reduction="none", ignore_index=IGNORE_INDEX)
