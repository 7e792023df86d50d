"""Tuning a torch.compile (Inductor) kernel: the generated space, the loop under --interpret, a broken kernel."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("optuna")
pytest.importorskip("torch")

from kernelrules.errors import KernelrulesError  # noqa: E402
from kernelrules.space import load_space  # noqa: E402
from kernelrules.tune import tune  # noqa: E402
from kernelrules.tune.driver import Tuner, TuneOptions  # noqa: E402
from kernelrules.tune.inductor_space import generate  # noqa: E402
from kernelrules.tune.problem import load_problem  # noqa: E402

KERNELS = Path(__file__).parent.parent / "fixtures" / "tune" / "inductor_kernels.py"
POINTWISE, REDUCTION, BROKEN = "triton_poi_fused_add_relu_0", "triton_red_fused_sum_1", "triton_poi_fused_add_relu_2"


def write_space(tmp_path: Path, name: str, edit=None) -> Path:
    out = tmp_path / f"{name}.tune.yaml"
    generated = generate(KERNELS, name, out)
    assert generated.todo == []
    out.write_text(edit(generated.text) if edit else generated.text)
    return out


def test_the_generated_space_reads_inductors_tunables_and_shapes(tmp_path):
    pointwise = load_space(write_space(tmp_path, POINTWISE))
    assert pointwise.space == {"XBLOCK": [16, 32, 64, 128, 256], "num_warps": [1, 2, 4, 8]}
    assert pointwise.fixed == {"num_stages": 1} and pointwise.signature["xnumel"] == 256
    spec = load_problem(pointwise)
    assert spec.sizes == {"xnumel": 256} and spec.grid == ["cdiv(xnumel, XBLOCK)"]
    assert {k: v.shape for k, v in spec.inputs.items()} == {"in_ptr0": ["xnumel"], "in_ptr1": ["16"]}  # bias % 16
    assert spec.outputs["out_ptr0"].shape == ["xnumel"] and spec.reference == {}
    assert spec.reference_config == {"XBLOCK": 128, "num_warps": 4, "num_stages": 1}

    reduction = load_space(write_space(tmp_path, REDUCTION))
    assert reduction.space == {"XBLOCK": [1, 2, 4, 8], "R0_BLOCK": [16, 32, 64], "num_warps": [1, 2, 4, 8],
                               "num_stages": [1, 2, 3]}
    assert [c.source for c in reduction.constraints] == ["config.XBLOCK * config.R0_BLOCK <= 4096"]
    spec = load_problem(reduction)
    assert spec.sizes == {"xnumel": 8, "r0_numel": 64}
    assert spec.inputs["in_ptr0"].shape == ["512"]  # r0_1 + 64*x0: row stride 64 baked in, literal at edge sizes
    assert spec.outputs["out_ptr0"].shape == ["xnumel"]
    assert spec.reference_config == {"XBLOCK": 1, "R0_BLOCK": 64, "num_warps": 4, "num_stages": 1}


DYNAMIC = '''
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics

@triton_heuristics.reduction(
    size_hints={'x': 16, 'r': 128},
    filename=__file__,
    triton_meta={'signature': {'in_out_ptr0': '*fp16', 'in_ptr0': '*fp16', 'ks0': 'i64', 'xnumel': 'i32',
                               'rnumel': 'i32'}, 'device': 0, 'constants': {},
                 'configs': [AttrsDescriptor(divisible_by_16=(0, 1), equal_to_1=())]},
    inductor_meta={})
@triton.jit
def triton_red_fused_mean_0(in_out_ptr0, in_ptr0, ks0, xnumel, rnumel, XBLOCK : tl.constexpr, RBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    x0 = xindex
    _tmp = tl.full([XBLOCK, RBLOCK], 0, tl.float32)
    for roffset in range(0, rnumel, RBLOCK):
        rindex = roffset + tl.arange(0, RBLOCK)[None, :]
        r1 = rindex
        tmp0 = tl.load(in_ptr0 + (r1 + ks0*x0), (rindex < rnumel) & (xindex < xnumel), other=0.0)
        _tmp = _tmp + tmp0
    tmp1 = tl.load(in_out_ptr0 + (x0), xindex < xnumel)
    tl.store(in_out_ptr0 + (x0), tmp1 + tl.sum(_tmp, 1)[:, None], xindex < xnumel)
'''


def test_what_cannot_be_inferred_is_todo_and_refused(tmp_path, run_cli):
    kernel = tmp_path / "dyn.py"
    kernel.write_text(DYNAMIC)
    generated = generate(kernel, None, tmp_path / "dyn.tune.yaml")
    assert generated.todo == ["problem.ks0", "problem.inputs.in_ptr0.shape"]
    assert "RBLOCK: [16, 32, 64, 128]" in generated.text  # the older rnumel/RBLOCK names
    assert "in_out_ptr0: {shape: [xnumel], dtype: fp16, in_place: true}" in generated.text
    assert "ks0: TODO  # TODO:" in generated.text
    done = run_cli("space", "--from-inductor", str(kernel), "-o", str(tmp_path / "dyn.tune.yaml"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "problem.ks0, problem.inputs.in_ptr0.shape could not be inferred" in done.stderr
    with pytest.raises(KernelrulesError, match=r"problem\.ks0, problem\.inputs\.in_ptr0\.shape are still TODO"):
        load_problem(load_space(tmp_path / "dyn.tune.yaml"))
    several = run_cli("space", "--from-inductor", str(KERNELS), "-o", "-")
    assert several.returncode == 2 and "3 Inductor kernels; name one as FILE:NAME" in several.stderr
    unknown = run_cli("space", "--from-inductor", f"{KERNELS}:nope", "-o", "-")
    assert unknown.returncode == 2 and "no Inductor kernel named 'nope'" in unknown.stderr


def test_cli_generates_and_tunes_a_pointwise_kernel(tmp_path, run_cli):
    space = tmp_path / "add_relu.tune.yaml"
    done = run_cli("space", "--from-inductor", f"{KERNELS}:{POINTWISE}", "-o", str(space))
    assert done.returncode == 0, done.stderr
    done = run_cli("tune", str(space), "--arch", "ampere", "--interpret", "--json", "--trials", "4", "--top-k", "2",
                   "--rounds", "1", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    trials, summary = [line for line in lines if line["type"] == "trial"], lines[-1]
    assert len(trials) == 4 and summary["type"] == "summary"
    for record in trials:
        assert record["status"] in ("better", "slower") and record["ms"] > 0
        assert set(record["config"]) == {"XBLOCK", "num_warps", "num_stages"}
        assert [c["output"] for c in record["checks"]] == ["out_ptr0"] * 4  # three seeds and the edge shape
    assert summary["winner"]["triton_config"].startswith('triton.Config({"XBLOCK": ')
    assert summary["final"]["baseline"] == "the kernel at the reference config (XBLOCK=128, num_warps=4, num_stages=1)"
    assert any("compiled stage is off" in note and "triton_helpers" in note for note in summary["notes"])


def test_a_reduction_is_tuned_against_its_reference_config(tmp_path):
    result = tune(write_space(tmp_path, REDUCTION), arch="ampere", interpret=True, trials=3, stage="config",
                  storage=str(tmp_path / "r.db"), cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1, seed=1)
    timed = [r for r in result.records if r["status"] in ("better", "slower")]
    assert len(timed) == 3 and all(c["max_abs_error"] < 1e-3 for r in timed for c in r["checks"])
    assert result.summary["winner"]["config"]["R0_BLOCK"] in (16, 32, 64)


def test_a_broken_kernel_and_a_wrong_reference_config_are_caught(tmp_path):
    def only_four_warps(text: str) -> str:
        return text.replace("num_warps: [1, 2, 4, 8]", "num_warps: [4]")

    space = write_space(tmp_path, BROKEN, only_four_warps)
    result = tune(space, arch="ampere", interpret=True, sampler="grid", stage="config", storage=str(tmp_path / "b.db"),
                  cache_dir=str(tmp_path / "cache"), top_k=1, rounds=1)
    status = {r["config"]["XBLOCK"]: r["status"] for r in result.records}
    assert {k: v for k, v in status.items() if v == "wrong_result"} == {16: "wrong_result", 32: "wrong_result"}
    wrong = next(r for r in result.records if r["config"]["XBLOCK"] == 16)
    assert "out_ptr0: 192 of 256 elements are NaN" in wrong["error"]
    assert result.summary["winner"]["config"]["XBLOCK"] >= 64

    bad_reference = tmp_path / "bad_reference.tune.yaml"
    bad_reference.write_text(space.read_text().replace("reference: {config: {XBLOCK: 128", "reference: {config: {XBLOCK: 16"))
    with pytest.raises(KernelrulesError, match=r"reference config \(XBLOCK=16, num_warps=4, num_stages=1\) leaves 192 "
                                               r"of 256 elements of out_ptr0 unwritten"):
        Tuner(bad_reference, TuneOptions(arch="ampere", interpret=True, stage="config", cache_dir=str(tmp_path / "c"),
                                         storage=str(tmp_path / "bad.db"))).run()
    unknown_key = tmp_path / "unknown_key.tune.yaml"
    unknown_key.write_text(space.read_text().replace("reference: {config: {XBLOCK: 128", "reference: {config: {BLOCK: 8"))
    with pytest.raises(KernelrulesError, match="reference.config: BLOCK is not a key of the space"):
        load_problem(load_space(unknown_key))


EMBEDDED = """
from torch._inductor.async_compile import AsyncCompile
async_compile = AsyncCompile()

triton_poi_fused_neg_0 = async_compile.triton('triton_poi_fused_neg_0', '''
import triton
import triton.language as tl
from torch._inductor.runtime import triton_helpers, triton_heuristics

@triton_heuristics.pointwise(size_hints={'x': 64}, filename=__file__,
    triton_meta={'signature': {'in_ptr0': '*fp32', 'out_ptr0': '*fp32', 'xnumel': 'i32', 'XBLOCK': 'constexpr'},
                 'device': 0, 'constants': {}, 'configs': []}, inductor_meta={}, min_elem_per_thread=0)
@triton.jit
def triton_poi_fused_neg_0(in_ptr0, out_ptr0, xnumel, XBLOCK : tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    tl.store(out_ptr0 + (xindex), -tl.load(in_ptr0 + (xindex), xindex < xnumel), xindex < xnumel)
''', device_str='cuda')
"""


def test_the_worker_loads_a_kernel_embedded_in_output_code(tmp_path):
    from kernelrules.tune.launch import load_kernel

    path = tmp_path / "output_code.py"
    path.write_text(textwrap.dedent(EMBEDDED))
    kernel = load_kernel(str(path), "triton_poi_fused_neg_0")
    assert kernel.src.lstrip().startswith("def triton_poi_fused_neg_0(")  # the source read from its lines in the file
    assert "in_ptr0: {shape: [xnumel]" in generate(path, None, tmp_path / "neg.tune.yaml").text
