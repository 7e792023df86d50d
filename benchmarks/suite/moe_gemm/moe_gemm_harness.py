"""Launcher for moe_gemm.py: routing and the sorted-token layout are data, built on the host.

Routing (seeded, ragged): router logits ``randn(T, E)`` plus a bias falling linearly from
+2 to -2 across the experts, so expert 0 is popular and the last ones are nearly empty;
token i < E is forced onto expert i so that no expert is empty (every weight matrix is
read: the ``bytes`` of the space files count them all). Each token takes its top_k
experts; its routing weights are the softmax of their unbiased logits.

Layout: the slots sorted by expert (stable, so by token within an expert), each expert's
segment padded to a multiple of PAD = 256 rows with the sentinel T * top_k; one expert
id per sorted row. The grid is (num_padded / BLOCK_M) * cdiv(N, BLOCK_N).
"""

import torch
import triton

PAD = 256  # the largest BLOCK_M: every BLOCK_M dividing it sees one expert per block


def route(T, E, top_k, generator):
    """(topk_ids [T, top_k] int64, topk_weights [T, top_k] fp32), on the CPU."""
    logits = torch.randn(T, E, generator=generator)
    biased = logits + torch.linspace(2.0, -2.0, E)
    forced = torch.arange(min(T, E))
    biased[forced, forced] = float("inf")
    topk_ids = biased.topk(top_k, dim=1).indices
    topk_weights = torch.softmax(logits.gather(1, topk_ids), dim=1)
    return topk_ids, topk_weights


def sort_by_expert(topk_ids, E):
    """(sorted_ids, expert_ids, order, counts): the padded layout, the slots by expert and the counts."""
    flat = topk_ids.reshape(-1)
    slots = flat.numel()
    counts = torch.bincount(flat, minlength=E)
    padded = (counts + PAD - 1) // PAD * PAD
    order = torch.argsort(flat, stable=True)
    experts = flat[order]
    seg_start = torch.cumsum(padded, 0) - padded
    first_slot = torch.cumsum(counts, 0) - counts
    rows = seg_start[experts] + torch.arange(slots) - first_slot[experts]
    sorted_ids = torch.full((int(padded.sum()),), slots, dtype=torch.int32)
    sorted_ids[rows] = order.to(torch.int32)
    expert_ids = torch.repeat_interleave(torch.arange(E, dtype=torch.int32), padded)
    return sorted_ids, expert_ids, order, counts


class MoeGemmHarness:
    outputs = ["y"]

    def __init__(self, sizes, device):
        self.T, self.E, self.N, self.K = sizes["T"], sizes["E"], sizes["N"], sizes["K"]
        self.top_k = sizes["top_k"]
        self.device = device

    def make(self, seed):
        topk_ids, topk_weights = route(self.T, self.E, self.top_k, torch.Generator().manual_seed(seed))
        sorted_ids, expert_ids, order, counts = sort_by_expert(topk_ids, self.E)
        g = torch.Generator(device=self.device).manual_seed(seed)
        x = torch.randn(self.T, self.K, generator=g, device=self.device).to(torch.float16)
        w = (torch.randn(self.E, self.N, self.K, generator=g, device=self.device) / 4).to(torch.float16)
        routing = {"topk_weights": topk_weights.reshape(-1), "sorted_ids": sorted_ids, "expert_ids": expert_ids,
                   "order": order}
        tensors = {"x": x, "w": w, **{k: v.to(self.device) for k, v in routing.items()}}
        tensors["counts"] = counts  # stays on the CPU: the baseline's loop bounds, no device sync
        tensors["y"] = torch.empty(self.T * self.top_k, self.N, dtype=torch.float16, device=self.device)
        return tensors

    def launch(self, kernel, tensors, config):
        x, w, y = tensors["x"], tensors["w"], tensors["y"]
        num_padded = tensors["sorted_ids"].numel()
        grid = (num_padded // config["BLOCK_M"] * triton.cdiv(self.N, config["BLOCK_N"]),)
        return kernel[grid](x, w, y, tensors["topk_weights"], tensors["sorted_ids"], tensors["expert_ids"],
                            self.N, self.K, self.top_k, self.T * self.top_k, num_padded,
                            x.stride(0), x.stride(1), w.stride(0), w.stride(1), w.stride(2), y.stride(0), y.stride(1),
                            **config)

    def _loop(self, tensors, dtype, out):
        """Expert by expert, as PyTorch code without a grouped kernel does it."""
        x, w, gate, order = tensors["x"].to(dtype), tensors["w"], tensors["topk_weights"], tensors["order"]
        start = 0
        for e, n in enumerate(tensors["counts"].tolist()):
            if n:
                slots = order[start:start + n]
                out[slots] = (torch.matmul(x[slots // self.top_k], w[e].to(dtype).T) * gate[slots, None]).to(out.dtype)
            start += n
        return out

    def reference(self, tensors):
        y = torch.zeros(self.T * self.top_k, self.N, dtype=torch.float64, device=self.device)
        return {"y": self._loop(tensors, torch.float64, y)}

    def reference_lowp(self, tensors):
        return {"y": self._loop(tensors, torch.float16, torch.empty_like(tensors["y"]))}

    def baseline(self, tensors):
        return self._loop(tensors, torch.float16, tensors["y"])
