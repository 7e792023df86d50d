"""The fact catalogue: every produced fact is declared, every declared fact is produced, lists derive from it.

Facts are produced from the checked-in IR fixtures (tests/fixtures/ir, no compiling): the
analyzers on every fixture (cuobjdump's output read from the fixture files instead of
running the tool), the facts record of an ok and of a failed compile, the resource model
learned from one fixture and predicting for it, on Hopper and on Blackwell.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from kernelrules.judge import facts_catalogue
from kernelrules.analyzers import facts_extract, sass
from kernelrules.arch import load_arch
from kernelrules.config import KernelConfig
from kernelrules.judge.facts import compiled_facts
from kernelrules.judge.facts_catalogue import CATALOGUE, FACTS
from kernelrules.judge.namespaces import FACTS as NAMESPACE_FACTS
from kernelrules.predict.register_model import RegisterModel, read_live_tensors
from kernelrules.predict.resource_model import learn, read_probe

ROOT = Path(__file__).resolve().parents[2]
IR = ROOT / "tests" / "fixtures" / "ir"
#: fixture file suffix -> the ``asm`` key it stands for (None: cuobjdump output, stubbed in)
SUFFIXES = {"ttir": "ttir", "ttgir": "ttgir", "ptx": "ptx", "ptxas.txt": "ptxas_log",
            "resources.txt": None, "sass.txt": None}
#: a small amdgcn listing with every resource field, comment and instruction class the AMD reader knows
AMDGCN = """\t.amdhsa_kernel matmul_kernel
\tv_mfma_f32_32x32x8_f16 a[0:15], v[0:1], v[2:3], a[0:15]
\tv_fma_f32 v1, v2, v3, v4
\tds_read_b128 v[0:3], v4
\tds_write_b128 v4, v[0:3]
\tscratch_store_dword off, v1, s0 ; 4-byte Folded Spill
\tscratch_load_dword v1, off, s0 ; 4-byte Folded Reload
; NumVgprs: 100
; Occupancy: 4
.amdgpu_metadata
    .agpr_count:     16
    .vgpr_count:     116
    .vgpr_spill_count: 1
    .sgpr_count:     40
    .sgpr_spill_count: 0
    .private_segment_fixed_size: 8
    .group_segment_fixed_size: 0
    .max_flat_workgroup_size: 256
.end_amdgpu_metadata
"""


def _fixtures() -> dict[str, dict]:
    return json.loads((IR / "manifest.json").read_text())["fixtures"]


def _extract_fixture(name: str, entry: dict, monkeypatch) -> dict:
    """``extract`` on one fixture's files; its cuobjdump outputs stand in for the tool."""
    asm: dict = {}
    for file_name in entry["files"]:
        suffix = file_name[len(name) + 1:]
        key = SUFFIXES[suffix]
        if key is not None:
            asm[key] = (IR / file_name).read_text()
    resources, listing = IR / f"{name}.resources.txt", IR / f"{name}.sass.txt"
    if resources.exists():
        asm["cubin"] = b"stub"
        monkeypatch.setattr(sass, "dump_resource_usage", lambda cubin, timeout: resources.read_text())
        monkeypatch.setattr(sass, "dump_sass", lambda cubin, timeout: listing.read_text() if listing.exists() else "")
    return facts_extract.extract(asm, entry["metadata"], sass_histogram=listing.exists())


def _two_mma_paths_ptx() -> str:
    """A PTX listing with wgmma and mma.sync instructions and the .maxntid/.maxnreg directives."""
    hopper = (IR / "matmul_sm90.ptx").read_text().replace(".reqntid 256", ".maxntid 256, 1, 1\n.maxnreg 128")
    return hopper + (IR / "matmul_m16_sm90.ptx").read_text()


@pytest.fixture(scope="module")
def analyzed() -> set[str]:
    """Fact names the analyzers produce on the fixtures (NVIDIA), an amdgcn listing and unparsable IR."""
    names: set[str] = set()
    with pytest.MonkeyPatch.context() as monkeypatch:
        for name, entry in _fixtures().items():
            names |= set(_extract_fixture(name, entry, monkeypatch))
    names |= set(facts_extract.extract({"ptx": _two_mma_paths_ptx()}, {}))
    names |= set(facts_extract.extract({"amdgcn": AMDGCN}, {"num_warps": 4, "shared": 0}))
    names |= set(facts_extract.extract({"ttgir": "not a TTGIR dump"}, {}))  # analysis_errors
    return names


def _compile_result(ok: bool, facts: dict | None = None) -> SimpleNamespace:
    return SimpleNamespace(ok=ok, facts=facts, compile_seconds=1.5, message="out of resource: shared memory",
                           error_kind=None if ok else "compile_error", error_line=None if ok else 42,
                           error_path="kernel.py")


@pytest.fixture(scope="module")
def recorded() -> set[str]:
    """Fact names of the facts record: an ok compile on Hopper and on gfx942, and a failed compile."""
    matmul = _fixtures()["matmul_m16_sm90"]
    with pytest.MonkeyPatch.context() as monkeypatch:
        extracted = _extract_fixture("matmul_m16_sm90", matmul, monkeypatch)
    amd = facts_extract.extract({"amdgcn": AMDGCN}, {"num_warps": 4, "shared": 0})
    names = set(compiled_facts(_compile_result(True, extracted), load_arch("hopper"), num_warps=4, timeout=30.0))
    names |= set(compiled_facts(_compile_result(True, amd), load_arch("gfx942"), num_warps=4))
    names |= set(compiled_facts(_compile_result(False), load_arch("hopper"), num_warps=4, timeout=30.0))
    return names


@pytest.fixture(scope="module")
def predicted() -> set[str]:
    """Fact names the resource model predicts, with a register model, on Hopper and Blackwell."""
    config = KernelConfig.from_dict({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 32, "num_warps": 4, "num_stages": 3})
    probe = read_probe(config, (IR / "matmul_m16_sm90.ttgir").read_text())
    names: set[str] = set()
    for arch in ("hopper", "blackwell"):
        model = learn([probe], load_arch(arch))
        tensors = read_live_tensors((IR / "softmax_sm90.ttgir").read_text(), {"BLOCK": 1024})
        model.registers = RegisterModel(tensors, base=20.0, slope=1.0, limits={})
        names |= set(model.predict(config))
    return names


def test_every_produced_fact_is_declared(analyzed, recorded, predicted):
    assert analyzed - set(FACTS) == set()
    assert recorded - set(FACTS) == set()
    assert predicted - set(FACTS) == set()


@pytest.mark.parametrize("stage", ["status", "compiled", "predicted", "both"])
def test_every_declared_fact_is_produced_where_its_stage_says(stage, analyzed, recorded, predicted):
    produced = {"status": recorded, "compiled": analyzed | recorded, "predicted": predicted,
                "both": (analyzed | recorded) & predicted}[stage]
    declared = {f.name for f in CATALOGUE if f.stage == stage}
    assert declared and declared - produced == set()


def test_only_the_judging_core_adds_facts_of_its_own():
    """``judged`` facts come from a second compile (vgpr_need: gfx942 without waves_per_eu) or from the list a
    config is judged in (stage_twins_before)."""
    assert [f.name for f in CATALOGUE if f.stage == "judged"] == ["stage_twins_before", "vgpr_need"]


def test_rows_are_well_formed():
    names = [f.name for f in CATALOGUE]
    assert len(names) == len(set(names))
    for fact in CATALOGUE:
        assert re.fullmatch(r"[a-z][a-z0-9_]*", fact.name) and fact.doc and "|" not in fact.doc
        assert fact.stage in facts_catalogue.STAGES and fact.vendor in facts_catalogue.VENDORS
        assert fact.reported in (None, *facts_catalogue.REPORTS)
    positions = sorted(f.summary for f in CATALOGUE if f.summary is not None)
    assert positions == list(range(1, len(positions) + 1))


def test_the_rule_namespace_is_the_catalogue():
    assert NAMESPACE_FACTS == {f.name: f.doc for f in CATALOGUE}


def test_reported_lists_keep_their_order():
    """The JSON records and the text summary print these keys in this order: outputs depend on it."""
    assert facts_catalogue.REPORTED_FACTS == (
        "origin", "compile_status", "compile_message", "compile_seconds", "shared_bytes", "shared_bytes_max",
        "registers", "spill_bytes", "mma_path", "accumulator_registers_per_thread", "pipelined", "dot_m", "dot_n",
        "dot_k", "active_blocks_per_sm", "active_warps_per_sm", "occupancy", "occupancy_limiter",
        "bank_conflict_ways", "local_memory_ops")
    assert facts_catalogue.CHECK_CONFIG_FACTS == facts_catalogue.REPORTED_FACTS + (
        "vgpr_need", "vgpr_spill_count", "scratch_bytes", "agpr_count", "waves_per_simd", "mfma_count", "fma_count")
    assert facts_catalogue.SUMMARY_FACTS == (
        "origin", "shared_bytes", "registers", "vgpr_need", "spill_bytes", "vgpr_spill_count", "mma_path",
        "active_warps_per_sm", "waves_per_simd", "occupancy_limiter", "compile_message")


def _analyzers_md_facts() -> set[str]:
    """Fact names in the first column of docs/analyzers.md's ``facts_extract.extract`` table."""
    text = (ROOT / "docs" / "analyzers.md").read_text(encoding="utf-8")
    section = text.split("## `facts_extract.extract", 1)[1].split("\n### ", 1)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`([a-z_0-9]+)`", line.split("|")[1]))
    return names


def test_analyzers_page_lists_exactly_the_declared_nvidia_analyzer_facts(analyzed):
    """docs/analyzers.md documents every fact the analyzers produce for NVIDIA targets, and only declared ones."""
    documented = _analyzers_md_facts()
    assert documented - set(FACTS) == set()
    amd_only = {f.name for f in CATALOGUE if f.vendor == "amd"}
    assert (analyzed - amd_only) - documented == set()


def test_facts_page_has_a_row_per_fact():
    page = facts_catalogue.markdown()
    assert all(f"| `{f.name}` | {f.doc} |" in page for f in CATALOGUE)
