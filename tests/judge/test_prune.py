"""Space files and ``kernelrules prune``: loading, config-stage judging with predictions, compiling."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.adapters.prune_api import prune
from kernelrules.space import SpaceFileError, load_space

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_SPACE = REPO / "examples" / "matmul.space.yaml"

SMALL = """\
kernel: matmul.py:matmul_kernel
signature: {a_ptr: "*fp16", b_ptr: "*fp16", c_ptr: "*fp16", M: 4096, N: 4096, K: 4096,
            stride_am: 4096, stride_ak: 1, stride_bk: 4096, stride_bn: 1, stride_cm: 4096, stride_cn: 1}
fixed: {GROUP_SIZE_M: 8}
space:
  BLOCK_M: [64, 128]
  BLOCK_N: [128]
  BLOCK_K: [64]
  num_stages: [3, 5]
  num_warps: [4]
"""


@pytest.fixture
def small_space(tmp_path):
    shutil.copy(REPO / "examples" / "matmul.py", tmp_path / "matmul.py")
    path = tmp_path / "small.space.yaml"
    path.write_text(SMALL)
    return path


def test_example_space_loads():
    space = load_space(EXAMPLE_SPACE)
    assert space.size() == 1875
    assert space.kernel_info() == {"name": "matmul_kernel", "dtypes": ["fp16"]}
    first = next(space.configs())
    assert first.to_dict()["GROUP_SIZE_M"] == 8 and first.num_warps == 2


@pytest.mark.parametrize(
    "old,new,fragment,line",
    [
        ("fixed:", "fixd:", "fixd", None),
        ("num_warps: [4]", "num_warps: [four]", "num_warps", 10),
        ("kernel: matmul.py", "kernel: missing.py", "missing.py", 1),
        ("space:", "constraints: ['config.BLOCK_M < nosuch(2)']\nspace:", "nosuch", 5),
        ("BLOCK_K: [64]", "BLOCK_K: [64]\n  GROUP_SIZE_M: [4]", "both fixed and searched", None),
        ("BLOCK_M: [64, 128]", "BLOCK_M: 64", "BLOCK_M", 6),
    ],
)
def test_bad_space_files_are_located_errors(small_space, old, new, fragment, line):
    small_space.write_text(SMALL.replace(old, new, 1))
    with pytest.raises(SpaceFileError) as info:
        load_space(small_space)
    text = str(info.value)
    assert "small.space.yaml" in text and fragment in text and "\n" not in text
    if line is not None:
        assert f"small.space.yaml:{line}:" in text


def test_constraints_filter_the_space(small_space):
    small_space.write_text(SMALL.replace("space:", "constraints: ['config.BLOCK_M * config.num_stages <= 384']\nspace:"))
    configs = [c.to_dict() for c in load_space(small_space).configs()]
    assert len(configs) == 3
    assert all(c["BLOCK_M"] * c["num_stages"] <= 384 for c in configs)


def test_config_stage_prune_predicts_and_rejects(small_space, tmp_path):
    result = prune(small_space, "ada,hopper", cache_dir=tmp_path / "cache")
    records = {(r.verdict.arch, r.verdict.config.constexprs["BLOCK_M"], r.verdict.config.num_stages): r
               for r in result.records}
    assert len(records) == 8
    # sm_89 (mma.sync): (num_stages - 1) buffers; sm_90 (wgmma): num_stages buffers.
    assert records[("sm_89", 128, 3)].facts["shared_bytes"] == 2 * (128 * 64 + 64 * 128) * 2
    assert records[("sm_90", 128, 3)].facts["shared_bytes"] == 3 * (128 * 64 + 64 * 128) * 2
    assert records[("sm_90", 128, 3)].facts["mma_path"] == "wgmma"
    rejected = records[("sm_89", 128, 5)].verdict
    assert rejected.verdict == "reject" and [d.code for d in rejected.diagnostics] == ["MEM001"]
    assert rejected.repair.num_stages == 4  # one stage fewer fits in 101376 bytes
    assert records[("sm_90", 128, 5)].verdict.verdict == "pass"  # 163840 bytes fit in 232448
    record = records[("sm_89", 128, 5)].to_json()
    assert set(record) == {"config", "arch", "verdict", "stage", "diagnostics", "facts", "repair"}
    assert record["stage"] == "config" and record["facts"]["origin"] == "predicted"


def test_compile_stage_judges_compiled_facts(small_space, tmp_path):
    small_space.write_text(SMALL.replace("BLOCK_M: [64, 128]", "BLOCK_M: [64]").replace("[3, 5]", "[3]"))
    result = prune(small_space, "ada", compile=True, cache_dir=tmp_path / "cache", jobs=1)
    (record,) = result.records
    assert record.verdict.stage == "compiled"
    facts = record.facts
    assert facts["origin"] == "compiled" and facts["compile_status"] == "ok"
    assert facts["shared_bytes"] == 2 * (64 * 64 + 64 * 128) * 2
    assert facts["mma_path"] == "mma_sync" and facts["pipelined"] is True
    assert 0 < facts["registers"] <= 255 and facts["active_warps_per_sm"] >= 4


BROKEN_KERNEL = '''\
import triton
import triton.language as tl


@triton.jit
def tiny_dot(a_ptr, c_ptr, BLOCK: tl.constexpr, BLOCK_K: tl.constexpr):
    r = tl.arange(0, BLOCK)
    k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + r[:, None] * BLOCK_K + k[None, :])
    b = tl.load(a_ptr + k[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))
'''


def test_a_config_that_does_not_compile_is_a_diagnostic(tmp_path):
    (tmp_path / "tiny.py").write_text(BROKEN_KERNEL)
    space = tmp_path / "tiny.space.yaml"
    space.write_text(textwrap.dedent("""\
        kernel: tiny.py:tiny_dot
        signature: {a_ptr: "*fp16", c_ptr: "*fp32"}
        space: {BLOCK: [16], BLOCK_K: [8, 16], num_warps: [4]}
        """))
    result = prune(space, "ada", compile=True, cache_dir=tmp_path / "cache", jobs=1)
    by_k = {r.verdict.config.constexprs["BLOCK_K"]: r for r in result.records}
    assert by_k[16].verdict.verdict == "pass"
    bad = by_k[8].verdict
    assert bad.verdict == "reject"
    assert {d.code for d in bad.diagnostics} & {"CMP001", "DOT001"}
    message = " ".join(d.message for d in bad.diagnostics)
    assert "K >= 16" in message or "K is 8" in message


def test_signature_that_does_not_fit_is_one_error(small_space, tmp_path):
    small_space.write_text(SMALL.replace("stride_cn: 1}", "stride_cn: 1, extra: 3}"))
    with pytest.raises(KernelrulesError) as info:
        prune(small_space, "ada", cache_dir=tmp_path / "cache")
    assert "extra" in str(info.value)


def test_prune_cli_json_and_exit_codes(run_cli, small_space):
    result = run_cli("prune", str(small_space), "--arch", "ada", "--format", "json", "--cache-dir", "cache")
    assert result.returncode == 1, result.stderr
    data = json.loads(result.stdout)
    assert len(data["results"]) == 4
    assert {r["verdict"] for r in data["results"]} == {"pass", "reject"}
    bad = run_cli("prune", "nowhere.yaml", "--arch", "ada")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "nowhere.yaml" in bad.stderr


def test_prune_cli_bad_space_is_one_line_exit_2(run_cli, small_space):
    small_space.write_text(SMALL.replace("fixed:", "fixd:"))
    result = run_cli("prune", str(small_space), "--arch", "ada")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "fixd" in result.stderr and "small.space.yaml:" in result.stderr


def test_stage_twins_before_counts_compiled_configs_that_differ_only_in_num_stages():
    from kernelrules.config import KernelConfig
    from kernelrules.judge.stages import stage_twins_before

    def c(block, stages=None, warps=4):
        return KernelConfig.from_dict({"BLOCK": block, "num_warps": warps, **({} if stages is None else {"num_stages": stages})})

    listed = [(c(256, 1), True), (c(256, 2), True), (c(256), True), (c(256, 3), False), (c(256, 4), True),
              (c(512, 2), True), (c(256, 2, warps=8), True), (c(256, 2), True)]
    # an unset num_stages is a twin too; a failed compile answers nothing for the configs after it
    assert stage_twins_before(listed) == [0, 1, 2, 3, 3, 0, 0, 4]
