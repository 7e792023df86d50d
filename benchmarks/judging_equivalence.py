"""Check that speed work leaves judging alone: predictions and verdicts of two commits, record by record.

    python benchmarks/judging_equivalence.py learn MODELS.pkl     # probe compiles, once (about a minute)
    python benchmarks/judging_equivalence.py dump MODELS.pkl OUT.pkl
    python benchmarks/judging_equivalence.py compare BEFORE.pkl AFTER.pkl

``learn`` fits the resource model of eleven (kernel, architecture) pairs as ``kernelrules
prune`` does: the example matmul on sm_80, sm_89, sm_90, sm_100, sm_120 and gfx942, the
three-accumulator Blackwell fixture, the two-loop fixture on sm_80 and sm_90 (buffers that share
space) and the register fixture on sm_80 and sm_90 (a kernel without dots). ``dump``, run once
on each commit with the same models (put the commit's tree first on ``PYTHONPATH``), records for
each pair and each config of its space plus a broad set of odd configs (non-powers of two,
strings, floats, booleans, missing keys, AMD options, ``maxnreg``): the predicted facts,
``judge_many``'s verdicts with and without predictions, ``judge``'s for a sample, and
``check``'s repairs for a sample, each verdict as its JSON (messages rendered). ``compare``
prints the first difference of each group that differs.
"""

from __future__ import annotations

import itertools
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MATMUL_SIGNATURE = {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": 4096, "N": 4096, "K": 4096,
                    "stride_am": 4096, "stride_ak": 1, "stride_bk": 4096, "stride_bn": 1, "stride_cm": 4096,
                    "stride_cn": 1}


def cases() -> list[tuple[str, Any, list, str]]:
    """(kind, target, the space's configs, architecture) for each pair."""
    from kernelrules.compile.target import KernelTarget
    from kernelrules.config import KernelConfig
    from kernelrules.space import load_space

    matmul = load_space(REPO / "examples" / "matmul.space.yaml")
    matmul_configs = list(matmul.configs())
    three = load_space(REPO / "tests" / "fixtures" / "blackwell" / "three_accumulators.space.yaml")
    two_loops = KernelTarget.for_signature(
        REPO / "tests" / "fixtures" / "two_loops" / "two_loops.py", "two_loop_matmul",
        {**MATMUL_SIGNATURE, "M": 1024, "N": 1024, "K": "i32", "stride_am": 1024, "stride_bk": 1024, "stride_cm": 1024})
    two_loop_configs = [KernelConfig.from_dict({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "num_stages": s,
                                                "num_warps": 4})
                        for bm in (16, 64, 128) for bn in (32, 64, 128) for bk in (32, 64) for s in (1, 2, 3, 4)]
    rows = KernelTarget.for_signature(REPO / "tests" / "fixtures" / "register_tiles.py", "row_moments_kernel",
                                      {"x_ptr": "*fp16", "out_ptr": "*fp32", "M": 4096, "N": 8192, "stride": 8192})
    row_configs = [KernelConfig.from_dict({"ROWS": r, "BLOCK_N": n, "num_warps": w, "num_stages": 2})
                   for r in (1, 2, 4, 8) for n in (128, 256, 512, 1024, 2048) for w in (1, 2, 4, 8)]
    amd = KernelTarget.for_signature(REPO / "examples" / "matmul.py", "matmul_kernel", MATMUL_SIGNATURE)
    amd_configs = [c for c in matmul_configs if max(c.constexprs[k] for k in ("BLOCK_M", "BLOCK_N", "BLOCK_K")) <= 128]
    out = [("matmul", KernelTarget.from_space(matmul), matmul_configs, a)
           for a in ("ada", "hopper", "ampere", "blackwell", "sm_120")]
    out.append(("matmul_amd", amd, amd_configs, "gfx942"))
    out.append(("three_accumulators", KernelTarget.from_space(three), list(three.configs()), "blackwell"))
    out += [("two_loops", two_loops, two_loop_configs, a) for a in ("ampere", "hopper")]
    out += [("register_tiles", rows, row_configs, a) for a in ("ampere", "hopper")]
    return out


def odd_configs(kind: str) -> list:
    """The kind's own constexprs over odd values, launch options, AMD options, missing keys."""
    from kernelrules.config import KernelConfig

    keys = {"three_accumulators": ("BM", "BN", "BN2", "BN3", "BK"), "register_tiles": ("ROWS", "BLOCK_N")}.get(
        kind, ("BLOCK_M", "BLOCK_N", "BLOCK_K"))
    values = [1, 16, 48, 64, 128, 256, 512]
    out = []
    for combo in itertools.islice(itertools.product(values, repeat=len(keys)), 0, None, 7 if len(keys) > 3 else 1):
        for warps, stages in [(1, 1), (2, 2), (4, 3), (8, 4), (16, 5), (3, 0), (64, 2), (None, None)]:
            point: dict[str, Any] = dict(zip(keys, combo))
            point.update({k: v for k, v in (("num_warps", warps), ("num_stages", stages)) if v is not None})
            out.append(point)
    extra = []
    for i, point in enumerate(out[::5]):
        changed = dict(point)
        changed.update([{"num_ctas": 2}, {"waves_per_eu": 2}, {"matrix_instr_nonkdim": [16, 32, 4][i % 3]},
                        {"maxnreg": 128}, {}, {keys[-1]: True}][i % 6])
        if i % 6 == 4:
            changed.pop(keys[0])
        extra.append(changed)
    out += extra + [{keys[0]: 64.0}, {keys[0]: "x"}, {}, {"GROUP_SIZE_M": 8}]
    return [KernelConfig.from_dict(point) for point in out]


def learn(models_path: str) -> None:
    from kernelrules.arch import load_arch
    from kernelrules.judge.pipeline import ConfigJudge

    models = {}
    for kind, target, configs, arch_name in cases():
        judge = ConfigJudge(target, jobs=2, cache=None)
        try:
            models[(kind, arch_name)] = judge.model_for(configs, load_arch(arch_name))
        finally:
            judge.close()
        print(f"{kind} on {arch_name}: {'model' if models[(kind, arch_name)] else 'no model'}", flush=True)
    with open(models_path, "wb") as out:
        pickle.dump(models, out)


def dump(models_path: str, out_path: str) -> None:
    from kernelrules.arch import load_arch
    from kernelrules.judge.engine import default_engine

    with open(models_path, "rb") as stream:
        models = pickle.load(stream)
    engine = default_engine()
    out: dict[tuple, list] = {}
    for kind, target, configs, arch_name in cases():
        arch, model = load_arch(arch_name), models[(kind, arch_name)]
        kernel = target.kernel_info
        batch = configs + odd_configs(kind)
        predict = model.predict if model is not None else None
        out[(kind, arch_name, "predictions")] = [predict(c) if predict else {} for c in batch]
        for label, facts_fn in (("with predictions", predict), ("rules alone", None)):
            out[(kind, arch_name, label)] = [
                v.to_json() for v in engine.judge_many(batch, arch, kernel=kernel, facts_fn=facts_fn)]
            out[(kind, arch_name, label, "judge")] = [
                engine.judge(c, arch, kernel=kernel, facts=facts_fn(c) if facts_fn else None).to_json()
                for c in batch[::13]]
        out[(kind, arch_name, "repairs")] = [
            engine.check(c, arch, kernel=kernel, facts=predict(c) if predict else None, facts_fn=predict).to_json()
            for c in batch[::29]]
        print(f"{kind} on {arch_name}: {len(batch)} configs", flush=True)
    with open(out_path, "wb") as stream:
        pickle.dump(out, stream)


def compare(before_path: str, after_path: str) -> int:
    with open(before_path, "rb") as a, open(after_path, "rb") as b:
        before, after = pickle.load(a), pickle.load(b)
    if before.keys() != after.keys():
        print("the dumps hold different groups:", sorted(map(str, set(before) ^ set(after))))
        return 1
    differ = 0
    for key in before:
        if before[key] != after[key]:
            differ += 1
            first = next((i for i, (x, y) in enumerate(zip(before[key], after[key])) if x != y),
                         min(len(before[key]), len(after[key])))
            print(f"{key}: record {first} differs")
    records = sum(len(v) for v in before.values())
    print(f"{len(before)} groups, {records:,} records, {differ} groups differ")
    return 1 if differ else 0


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    command, *paths = sys.argv[1:] or ["help"]
    if command == "learn" and len(paths) == 1:
        learn(*paths)
    elif command == "dump" and len(paths) == 2:
        dump(*paths)
    elif command == "compare" and len(paths) == 2:
        sys.exit(compare(*paths))
    else:
        sys.exit(__doc__)
