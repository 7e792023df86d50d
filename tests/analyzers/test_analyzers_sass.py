"""SASS, resource usage and ptxas logs: checked-in listings, then the wheel's tools on fresh cubins."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "ir"))
import ir_build  # noqa: E402
from ir_build import compiled  # noqa: E402,F401  (session fixture)

from kernelrules.analyzers import ptx, sass  # noqa: E402


def test_checked_in_sass_listing_matches_its_ptx():
    functions = sass.parse_sass(ir_build.checked_in("matmul_m16_sm90.sass.txt"))
    assert list(functions) == ["matmul_kernel"]
    histogram = sass.opcode_histogram(functions)
    classes = ptx.parse(ir_build.checked_in("matmul_m16_sm90.ptx")).class_counts()
    assert histogram["HMMA"] == classes["mma_sync"] > 0
    assert histogram["LDGSTS"] == classes["cp_async"] > 0
    assert "HGMMA" not in histogram
    first = functions["matmul_kernel"][0]
    assert first.offset == 0 and first.opcode == first.mnemonic.split(".")[0]
    assert any(i.predicated for i in functions["matmul_kernel"])


@pytest.mark.parametrize("name", ["matmul_m16_sm90", "fp32_ieee_sm89", "spill_sm89"])
def test_resource_usage_agrees_with_ptxas(name):
    (usage,) = sass.parse_resource_usage(ir_build.checked_in(f"{name}.resources.txt")).values()
    (info,) = sass.parse_ptxas_info(ir_build.checked_in(f"{name}.ptxas.txt")).values()
    assert usage.registers == info["registers"]
    assert usage.stack == info["stack_frame"]
    assert usage.local == 0


def test_spilling_config_in_the_checked_in_logs():
    (usage,) = sass.parse_resource_usage(ir_build.checked_in("spill_sm89.resources.txt")).values()
    info = sass.parse_ptxas_info(ir_build.checked_in("spill_sm89.ptxas.txt"))["matmul_kernel"]
    assert usage.registers == 255 and usage.stack > 0
    assert info["spill_stores"] > 0 and info["spill_loads"] > 0
    assert usage.to_dict()["constant"]["CONSTANT[0]"] > 0


def test_sm90_sass_has_hgmma_and_sm89_hmma(compiled):
    sm90 = sass.opcode_histogram(sass.parse_sass(sass.dump_sass(compiled("matmul_sm90")["asm"]["cubin"])))
    sm89 = sass.opcode_histogram(sass.parse_sass(sass.dump_sass(compiled("matmul_sm89")["asm"]["cubin"])))
    assert sm90["HGMMA"] > 0 and "HMMA" not in sm90
    assert sm89["HMMA"] > 0 and "HGMMA" not in sm89
    assert sm90["LDGSTS"] > 0 and sm89["LDGSTS"] > 0


def test_spill_bytes_from_sass_equal_ptxas_spill_stores_and_loads(compiled):
    asm = compiled("spill_sm89")["asm"]
    functions = sass.parse_sass(sass.dump_sass(asm["cubin"]))
    (usage,) = sass.parse_resource_usage(sass.dump_resource_usage(asm["cubin"])).values()
    info = sass.parse_ptxas_info(sass.run_ptxas_verbose(asm["ptx"]))["matmul_kernel"]
    assert (usage.registers, usage.stack) == (info["registers"], info["stack_frame"])
    assert usage.stack > 0
    assert sass.local_memory_bytes(functions) == (info["spill_stores"], info["spill_loads"])


def test_missing_tool_raises_tool_not_found(monkeypatch, tmp_path):
    monkeypatch.setenv("TRITON_CUOBJDUMP_PATH", str(tmp_path / "nope"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(sass, "_wheel_bin", lambda: tmp_path)
    with pytest.raises(sass.ToolNotFound, match="cuobjdump not found"):
        sass.dump_sass(b"\x7fELF")


def test_tool_failures_and_timeouts_raise_tool_failed():
    with pytest.raises(sass.ToolFailed, match="exited"):
        sass.dump_resource_usage(b"not a cubin")
    with pytest.raises(sass.ToolFailed, match="timed out"):
        sass._run([sys.executable, "-c", "import time; time.sleep(5)"], timeout=0.2)


def test_ptxas_info_of_several_functions():
    log = """ptxas info    : Compiling entry function 'a' for 'sm_80'
ptxas info    : Function properties for a
    8 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 380 bytes cmem[0]
ptxas info    : Compiling entry function 'b' for 'sm_80'
ptxas info    : Used 12 registers
"""
    info = sass.parse_ptxas_info(log)
    assert info["a"] == {"stack_frame": 8, "spill_stores": 4, "spill_loads": 4, "registers": 40, "barriers": 1,
                         "smem": 2048, "cmem0": 380}
    assert info["b"] == {"registers": 12}
