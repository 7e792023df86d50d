# temporary GPU check (deleted after use): correctness margins and timings at the real sizes
import sys, importlib.util, torch, triton, time
from pathlib import Path
HERE = Path(__file__).resolve().parent.parent
def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path); m = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(Path(path).parent)); spec.loader.exec_module(m); return m
def unwrap(k):
    while hasattr(k, "fn") and not hasattr(k, "run_fn") and type(k).__name__ == "Autotuner": k = k.fn
    return k
def margin(out, ref, rtol, atol):
    got, ref = out.double(), ref.double()
    rms = ref.pow(2).mean().sqrt()
    bound = atol * rms + rtol * ref.abs()
    err = (got - ref).abs()
    return float((err / bound).max()), float(err.max()), float((err / (ref.abs() + rms)).max()), bool(torch.isnan(got).any())
class GemmH:
    outputs = ["c"]
    def __init__(s, sz, dev): s.M, s.N, s.K = sz["M"], sz["N"], sz["K"]
    def make(s, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        return {"a": torch.randn(s.M, s.K, generator=g, device="cuda").half(), "b": torch.randn(s.K, s.N, generator=g, device="cuda").half(),
                "c": torch.empty(s.M, s.N, device="cuda", dtype=torch.half)}
    def launch(s, k, t, cfg):
        a, b, c = t["a"], t["b"], t["c"]
        k[(triton.cdiv(s.M, cfg["BLOCK_M"]) * triton.cdiv(s.N, cfg["BLOCK_N"]),)](a, b, c, s.M, s.N, s.K, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1), **cfg)
    def reference(s, t): return {"c": t["a"].double() @ t["b"].double()}
    def baseline(s, t): return t["a"] @ t["b"]
fams = {
 "gemm": (HERE.parent.parent / "examples/matmul.py", "matmul_kernel", GemmH, (0.01, 0.01), {"GROUP_SIZE_M": 8}),
 "splitk_gemm": (HERE / "splitk_gemm/splitk_gemm.py", "splitk_gemm_kernel", load(HERE / "splitk_gemm/splitk_gemm_harness.py", "skh").SplitKHarness, (0.01, 0.01), {"GROUP_SIZE_M": 8}),
 "fp8_gemm": (HERE / "fp8_gemm/fp8_gemm.py", "fp8_gemm_kernel", load(HERE / "fp8_gemm/fp8_gemm_harness.py", "f8h").Fp8GemmHarness, (0.04, 0.04), {"GROUP_SIZE_M": 8}),
}
import ast
plan = eval(open(Path(__file__).parent / "_plan.txt").read(), {"dict": dict})
for fam, shape, sizes, cfgs in plan:
    path, kname, H, (rtol, atol), fixed = fams[fam]
    k = unwrap(getattr(load(path, fam + "_mod"), kname))
    h = H(sizes, "cuda"); t = h.make(0); ref = h.reference(t)["c"]
    bl = triton.testing.do_bench(lambda: h.baseline(t), warmup=25, rep=100)
    print(f"== {fam} {shape} {sizes} baseline {bl:.4f} ms", flush=True)
    for cfg in cfgs:
        cfg = {**fixed, **cfg}
        try:
            t["c"].fill_(float("nan")); h.launch(k, t, cfg); torch.cuda.synchronize()
            m = margin(t["c"], ref, rtol, atol)
            ms = triton.testing.do_bench(lambda: h.launch(k, t, cfg), warmup=25, rep=100)
            print(f"  {cfg} ms={ms:.4f} margin={m[0]:.3f} maxerr={m[1]:.4g} rel={m[2]:.3g} nan={m[3]}", flush=True)
        except Exception as e:
            print(f"  {cfg} ERROR {type(e).__name__}: {str(e)[:200]}", flush=True)
