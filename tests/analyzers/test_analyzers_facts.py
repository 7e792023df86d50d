"""``facts_extract.extract`` end to end on kernels cross-compiled for sm_89 and sm_90."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "ir"))
import ir_build  # noqa: E402
from ir_build import compiled  # noqa: E402,F401  (session fixture)

from kernelrules.analyzers import facts_extract, sass  # noqa: E402
from kernelrules.analyzers.facts_extract import extract  # noqa: E402
from kernelrules.analyzers.irgraph import IrGraph  # noqa: E402

MARKERS = ir_build.markers()
_FACTS: dict[str, dict] = {}


@pytest.fixture(scope="module")
def facts(compiled):
    """``facts(name)`` → ``extract`` of the compiled spec (once per name)."""
    def get(name: str) -> dict:
        if name not in _FACTS:
            result = compiled(name)
            _FACTS[name] = extract(result["asm"], result["metadata"], sass_histogram=True)
        return _FACTS[name]
    return get


def line_of(location: str) -> tuple[str, int]:
    path, line, _ = location.rsplit(":", 2)
    return Path(path).name, int(line)


def test_hopper_matmul(facts, compiled):
    f = facts("matmul_sm90")  # 128x128x64, 8 warps, 4 stages
    assert f["mma_path"] == "wgmma" and f["pipelined"] is True
    assert f["shared_bytes"] == 131072 == sum(b["bytes"] for b in f["shared_layouts"])  # 4 stages x 32 KiB
    assert [b["num_buffers"] for b in f["shared_layouts"]] == [4, 4]
    assert {b["layout"]["kind"] for b in f["shared_layouts"]} == {"nvmma_shared"}
    assert f["accumulator_registers_per_thread"] == 64  # 128*128 / (32*8)
    assert (f["dot_m"], f["dot_n"], f["dot_k"], f["dot_operand_bits"], f["num_warps"]) == (128, 128, 64, 16, 8)
    assert f["dot_count"] == 1 and [line_of(x) for x in f["dot_locations"]] == [("ir_kernels.py", MARKERS["matmul_dot"])]
    assert f["mma_instructions"][0]["shape"] == "m64n128k16" and f["ptx_target"] == "sm_90a"
    assert f["sass_opcodes"]["HGMMA"] > 0 and "HMMA" not in f["sass_opcodes"]
    assert f["static_shared_bytes"] == 1024  # ptxas's reserved 1 KiB on sm_90
    assert (f["spill_bytes"], f["local_memory_ops"], f["tma"], f["dot_under_branch"]) == (0, 0, False, False)
    assert f["async_copies"] == 8 and f["instruction_counts"]["cp_async"] > 0
    graph = IrGraph.from_text(compiled("matmul_sm90")["asm"]["ttgir"])
    loads = graph.loads_feeding(graph.dots()[0])
    assert {op.location.line for op in loads} == {MARKERS["matmul_load_a"], MARKERS["matmul_load_b"]}


def test_ada_matmul(facts):
    f = facts("matmul_sm89")  # the same config: one buffer fewer than stages on sm_8x
    assert f["mma_path"] == "mma_sync" and f["pipelined"] is True
    assert f["shared_bytes"] == 98304 and [b["num_buffers"] for b in f["shared_layouts"]] == [3, 3]
    assert {b["layout"]["kind"] for b in f["shared_layouts"]} == {"swizzled_shared"}
    assert f["sass_opcodes"]["HMMA"] > 0 and "HGMMA" not in f["sass_opcodes"]
    assert f["static_shared_bytes"] == 0


def test_fp32_ieee_dot_lowers_to_fma(facts):
    f = facts("fp32_ieee_sm89")
    assert f["mma_path"] == "none" and f["dot_fp32_fma"] is True and f["mma_instructions"] == []
    assert f["sass_opcodes"]["FFMA"] >= 256 and "HMMA" not in f["sass_opcodes"]
    assert "pipelined" not in f  # the dot is in no loop: nothing to pipeline
    assert [line_of(x)[1] for x in f["dot_locations"]] == [MARKERS["precision_dot"]]


def test_small_m_on_hopper_falls_back_to_mma_sync(facts):
    f = facts("matmul_m16_sm90")
    assert f["mma_path"] == "mma_sync" and f["mma_instructions"][0]["shape"] == "m16n8k16"
    assert f["dot_fp32_fma"] is False and f["pipelined"] is True


def test_fp8_upcast_at_small_m_on_hopper_but_native_on_ada(facts):
    upcast = facts("fp8_m16_sm90")
    assert upcast["fp8_upcast"] is True and upcast["mma_instructions"][0]["types"] == "f32.f16.f16.f32"
    assert upcast["instruction_counts"]["cvt_fp8"] > 0 and upcast["dot_operand_bits"] == 16
    native = facts("fp8_sm89")
    assert native["fp8_upcast"] is False and native["mma_instructions"][0]["types"] == "f32.e4m3.e4m3.f32"
    assert native["sass_opcodes"]["QMMA"] > 0 and native["dot_operand_bits"] == 8


def test_dot_under_a_data_dependent_branch(facts):
    gated = facts("gated_load_sm89")
    assert gated["dot_under_branch"] is True
    assert [line_of(x)[1] for x in gated["dot_under_branch_locations"]] == [MARKERS["gated_dot"]]
    assert gated["pipelined"] is False and len(gated["unpipelined_load_locations"]) == 2
    by_pid = facts("gated_pid_sm89")
    assert by_pid["dot_under_branch"] is False and by_pid["dot_under_branch_locations"] == []


def test_spilling_config(facts, compiled):
    f = facts("spill_sm89")  # 128x256x64, 4 warps: 256 fp32 accumulators per thread
    assert f["accumulator_registers_per_thread"] == 256
    (usage,) = sass.parse_resource_usage(sass.dump_resource_usage(compiled("spill_sm89")["asm"]["cubin"])).values()
    assert f["registers"] == usage.registers == 255
    assert f["spill_bytes"] == usage.stack > 0 and f["local_bytes"] == 0
    assert f["spill_stores"] > 0 and f["spill_loads"] > 0 and f["local_memory_ops"] > 0


def _nulls(value, path="facts"):
    """Paths of None values anywhere in a JSON-like structure."""
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nulls(v, f"{path}[{i}]")]
    return []


@pytest.mark.parametrize("name", ["matmul_sm90", "fp32_ieee_sm89", "gated_load_sm89"])
def test_facts_are_json_ready_without_nulls(facts, name):
    f = facts(name)
    assert json.loads(json.dumps(f)) == f
    assert _nulls(f) == []


def test_missing_artifacts_leave_facts_absent(compiled):
    assert extract({}, {}) == {}
    result = compiled("matmul_sm89")
    only_ptx = extract({"ptx": result["asm"]["ptx"]}, {})
    assert only_ptx["mma_path"] == "mma_sync" and "registers" not in only_ptx and "shared_bytes" not in only_ptx
    no_tools = extract(result["asm"], result["metadata"], run_tools=False)
    assert "sass_opcodes" not in no_tools and no_tools["pipelined"] is True


def test_expected_failures_become_analysis_errors(compiled, monkeypatch):
    result = compiled("matmul_sm89")
    broken = dict(result["asm"], ttgir="this is not mlir", ttir=None)
    f = extract(broken, result["metadata"])
    assert f["analysis_errors"][0].startswith("ir: line 1") and "pipelined" not in f and f["mma_path"] == "mma_sync"

    def missing(name):
        raise sass.ToolNotFound(f"{name} not found")
    monkeypatch.setattr(sass, "find_tool", missing)
    f = facts_extract.extract(result["asm"], result["metadata"])
    assert "registers" not in f and any("cuobjdump not found" in e for e in f["analysis_errors"])


def test_ptxas_log_gives_spill_stores(compiled):
    result = compiled("spill_sm89")
    log = sass.run_ptxas_verbose(result["asm"]["ptx"])
    f = extract(dict(result["asm"], ptxas_log=log), result["metadata"], run_tools=False)
    info = sass.parse_ptxas_info(log)["matmul_kernel"]
    assert (f["spill_stores"], f["spill_loads"]) == (info["spill_stores"], info["spill_loads"])
