# TEMPORARY (not part of the suite): GPU spot check of the four families, run once on an H200.
import itertools, random, sys, time, types
from pathlib import Path
import yaml, torch, triton
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
SUITE = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(SUITE / f) for f in ("layernorm", "rmsnorm", "swiglu", "pointwise")]
import layernorm, rmsnorm, swiglu, pointwise  # noqa

def unwrap(k):
    while hasattr(k, "fn") and not isinstance(k, triton.runtime.jit.JITFunction):
        k = k.fn
    return k

def configs(doc):
    keys = list(doc["space"]); p = types.SimpleNamespace(**{k: v for k, v in doc["problem"].items() if isinstance(v, (int, float))})
    for vals in itertools.product(*doc["space"].values()):
        c = dict(zip(keys, vals)); ns = types.SimpleNamespace(**c)
        if all(eval(e, {"config": ns, "problem": p}) for e in doc.get("constraints", [])):
            yield c

def setup(fam, P):
    g = torch.Generator("cuda").manual_seed(0)
    r = lambda *s, dt: torch.randn(*s, generator=g, device="cuda", dtype=torch.float32).to(dt)
    if fam in ("layernorm", "rmsnorm"):
        dt = torch.float16 if fam == "layernorm" else torch.bfloat16
        M, N, eps = P["M"], P["N"], P["eps"]
        x, w, b = r(M, N, dt=dt), r(N, dt=dt), r(N, dt=dt); y = torch.empty_like(x)
        if fam == "layernorm":
            k = unwrap(layernorm.layernorm_fwd_kernel)
            launch = lambda c: k[(triton.cdiv(M, c["ROWS"]),)](x, w, b, y, M, N, x.stride(0), y.stride(0), eps, **c)
            ref = lambda: F.layer_norm(x.double(), [N], w.double(), b.double(), eps)
            base = lambda: F.layer_norm(x, [N], w, b, eps)
        else:
            k = unwrap(rmsnorm.rmsnorm_fwd_kernel)
            launch = lambda c: k[(triton.cdiv(M, c["ROWS"]),)](x, w, y, M, N, x.stride(0), y.stride(0), eps, **c)
            ref = lambda: F.rms_norm(x.double(), [N], w.double(), eps)
            base = lambda: F.rms_norm(x, [N], w, eps)
        return launch, ref, base, y
    if fam == "swiglu":
        M, N = P["M"], P["N"]; x = r(M, 2 * N, dt=torch.bfloat16); out = torch.empty(M, N, device="cuda", dtype=torch.bfloat16)
        k = unwrap(swiglu.swiglu_fwd_kernel)
        launch = lambda c: k[(triton.cdiv(M, c["BLOCK_M"]), triton.cdiv(N, c["BLOCK_N"]))](x, out, M, N, x.stride(0), out.stride(0), **c)
        return launch, lambda: F.silu(x[:, :N].double()) * x[:, N:].double(), lambda: F.silu(x[:, :N]) * x[:, N:], out
    rows = P["rows"]; x = r(rows, 4096, dt=torch.float16); b = r(4096, dt=torch.float16); out = torch.empty_like(x)
    k = pointwise.triton_poi_fused_add_mul_gelu_0
    launch = lambda c: k[(triton.cdiv(rows * 4096, c["XBLOCK"]),)](x, b, out, rows * 4096, **c)
    return launch, lambda: F.gelu(x.double() + b.double()) * 2.0, lambda: F.gelu(x + b) * 2.0, out

for fam in sys.argv[1:]:
    for shape in ("large", "skinny", "small"):
        doc = yaml.safe_load(open(SUITE / fam / f"{shape}.tune.yaml"))
        P = doc["problem"]; allc = list(configs(doc)); random.seed(0)
        ept = lambda c: (c.get("ROWS", 1) * c.get("BLOCK_M", 1) * c.get("BLOCK_N", c.get("XBLOCK", 1))) / (32 * c["num_warps"])
        pick = sorted(allc, key=ept)[:2] + sorted(allc, key=ept)[-3:] + random.sample(allc, min(6, len(allc)))
        launch, ref, base, out = setup(fam, P)
        expect = ref(); tb = triton.testing.do_bench(base, warmup=5, rep=25)
        res = []
        for c in pick:
            out.fill_(float("nan")); t0 = time.time(); launch(c); torch.cuda.synchronize(); ct = time.time() - t0
            err = (out.double() - expect).abs(); tol = 0.04 * expect.pow(2).mean().sqrt() + 0.04 * expect.abs()
            ok = bool((err <= tol).all())
            ms = triton.testing.do_bench(lambda: launch(c), warmup=5, rep=25)
            res.append((ms, ok, round(ct, 1), c))
        res.sort(key=lambda t: t[0])
        print(f"== {fam} {shape} configs={len(allc)} baseline {tb:.4f} ms")
        for ms, ok, ct, c in res:
            print(f"  {ms:9.4f} ms {'ok ' if ok else 'BAD'} compile {ct:5.1f}s ept {ept(c):6.1f} {c}")
        sys.stdout.flush()
