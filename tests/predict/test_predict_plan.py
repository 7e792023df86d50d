"""The resource model's fast path (``predict_plan``) gives the facts of its general formulas.

``ResourceModel.predict`` goes through a :class:`PredictPlan` for a model of one dot on NVIDIA
tensor cores without tensor memory, and through ``predict_general`` for any other. Here both
are run on models built by hand (no compile), one per shape the plan covers: mma.sync only,
wgmma with a borrowed mma.sync path, constant dimensions and fixed buffer counts, buffers that
share space, TMA barriers, fp8 operands, and on configs with odd values (missing keys,
strings, floats, booleans, zero or negative counts).
"""

from __future__ import annotations

import itertools
import pickle

import pytest

from kernelrules.config import KernelConfig
from kernelrules.predict.predict_plan import PredictPlan
from kernelrules.predict.resource_model import AllocTerm, Dim, DotTerm, ResourceModel

M, N, K = Dim("BLOCK_M"), Dim("BLOCK_N"), Dim("BLOCK_K")


def dot(n: Dim = N, dtype: str = "f16", by_path=(("mma_sync", "f16"), ("wgmma", "f16"))) -> DotTerm:
    return DotTerm(M, n, K, dtype, 32, "mma", by_path)


def terms(offset: int, bits: int = 16) -> tuple[AllocTerm, ...]:
    return (AllocTerm((M, K), bits, offset), AllocTerm((K, N), bits, offset))


MODELS = {
    "mma_sync": ResourceModel("sm_80", False, (dot(),), {"mma_sync": terms(-1)}),
    "wgmma, mma_sync borrowed": ResourceModel("sm_90", True, (dot(),), {"wgmma": terms(0)}),
    "both paths, constants": ResourceModel(
        "sm_90", True, (dot(n=Dim(constant=32)),),
        {"wgmma": (*terms(0), AllocTerm((Dim(constant=16), M), 32, None, 2)), "mma_sync": terms(-1)},
        wgmma_m_multiple=128),
    "buffers share space": ResourceModel(
        "sm_80", False, (dot(),), {"mma_sync": (*terms(-1), AllocTerm((M, N), 16, None))},
        live={"mma_sync": ((0, 1), (2,))}, live_unpipelined={"mma_sync": ((0,), (1, 2))}),
    "buffers share space unpipelined": ResourceModel(
        "sm_80", False, (dot(),), {"mma_sync": (*terms(-1), AllocTerm((M, N), 16, None))},
        live_unpipelined={"mma_sync": ((0,), (1, 2))}),
    "TMA barriers": ResourceModel("sm_90", True, (dot(),), {"wgmma": terms(0), "mma_sync": terms(-1)},
                                  barriers={"wgmma": (1, 8)}, staged_barriers={"wgmma": 2}),
    "fp8": ResourceModel("sm_89", False, (dot(dtype="f8E4M3FN", by_path=(("mma_sync", "f8E4M3FN"),)),),
                         {"mma_sync": terms(-1, bits=8)}, warp_size=32, default_num_stages=4),
}

VALUES = [16, 48, 64, 96, 128, 192, 256, 0, -64, 64.0, True, "x", None, "missing"]
CONFIGS = []
for bm, bn, bk in itertools.product(VALUES, [16, 64, "x", "missing"], [32, 128, 0, "missing"]):
    for warps, stages in [(4, 3), (8, 1), (2, 0), (3, 5), (None, None), (16, -1), ("4", 2), (4, "3")]:
        values = {name: v for name, v in (("BLOCK_M", bm), ("BLOCK_N", bn), ("BLOCK_K", bk)) if v != "missing"}
        values.update({k: v for k, v in (("num_warps", warps), ("num_stages", stages)) if v is not None})
        CONFIGS.append(KernelConfig.from_dict(values))


def outcome(run, config):
    try:
        return ("facts", run(config))
    except Exception as exc:  # noqa: BLE001 - an error that escapes must escape from both paths alike
        return ("raised", type(exc).__name__)


@pytest.mark.parametrize("name", list(MODELS))
def test_the_plan_gives_the_general_formulas_facts(name):
    model = MODELS[name]
    assert PredictPlan(model).applies
    seen = set()
    for config in CONFIGS:
        fast, general = outcome(model.predict, config), outcome(model.predict_general, config)
        assert fast == general, (name, config)
        if fast[0] == "facts" and fast[1]:
            seen.add(fast[1]["mma_path"])
            assert list(fast[1]) == list(general[1])  # the same keys in the same order (reports list them so)
        for defaults in ({"num_warps": 8, "num_stages": 2}, {}):
            assert model.predict(config, defaults) == model.predict_general(config, defaults)
    assert seen == ({"mma_sync", "wgmma"} if model.wgmma else {"mma_sync"})


def test_other_models_take_the_general_formulas():
    two = ResourceModel("sm_80", False, (dot(), dot()), {"mma_sync": terms(-1)})
    fma = ResourceModel("sm_80", False, (DotTerm(M, N, K, "f32", 32, "fma"),), {})
    tcgen05 = ResourceModel("sm_100", False, (dot(),), {"tcgen05": terms(0)}, tcgen05=True)
    amd = ResourceModel("gfx942", False, (dot(),), {"mfma": terms(0)}, mfma=True, warp_size=64)
    none = ResourceModel("sm_80", False, (), {})
    for model in (two, fma, tcgen05, amd, none):
        assert not PredictPlan(model).applies
        for config in CONFIGS[:200]:
            assert model.predict(config) == model.predict_general(config)


def test_setting_a_field_drops_the_plan_and_pickling_leaves_it_out():
    model = ResourceModel("sm_90", True, (dot(),), {"wgmma": terms(0), "mma_sync": terms(-1)})
    config = KernelConfig.from_dict({"BLOCK_M": 128, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3})
    assert model.predict(config)["mma_path"] == "wgmma"
    model.wgmma = False  # the plan made for wgmma must not answer any more
    assert model.predict(config)["mma_path"] == "mma_sync" == model.predict_general(config)["mma_path"]
    model.paths = {"mma_sync": terms(-2)}
    assert model.predict(config) == model.predict_general(config)
    copy = pickle.loads(pickle.dumps(model))
    assert copy == model and copy.predict(config) == model.predict(config)
