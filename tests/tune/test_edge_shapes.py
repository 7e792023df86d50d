"""The signatures of a problem's edge shapes (kernelrules.tune.edge_shapes), which tune's gate compiles beside each
candidate so that the benchmark worker's correctness launches at those shapes hit the Triton cache."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from kernelrules.space import load_space
from kernelrules.tune.edge_shapes import ShapeOnly, edge_signatures
from kernelrules.tune.problem import load_problem

REPO = Path(__file__).resolve().parents[2]
SMALL = REPO / "tests" / "fixtures" / "tune" / "matmul_small.yaml"


def problem(tmp_path: Path, text: str):
    shutil.copy(REPO / "examples" / "matmul.py", tmp_path / "matmul.py")
    path = tmp_path / "space.tune.yaml"
    path.write_text(text.replace("../../../examples/matmul.py", "matmul.py"))
    space = load_space(path)
    return space, load_problem(space)


def test_a_stand_in_has_the_shape_and_contiguous_strides_of_a_tensor():
    t = ShapeOnly((2, 3, 5), "fp16")
    assert t.stride() == (15, 5, 1) and t.stride(0) == 15 and t.size(1) == 3 and t.shape == (2, 3, 5)
    assert t.numel() == 30 and t.dim() == 3 and t.ndim == 3 and t.element_size() == 2
    torch = pytest.importorskip("torch")
    real = torch.empty((2, 3, 5), dtype=torch.float16)
    assert real.stride() == t.stride() and real.numel() == t.numel()


def test_the_edge_signature_has_the_sizes_and_strides_of_the_edge_shape(tmp_path):
    space, spec = problem(tmp_path, SMALL.read_text())
    [edge] = edge_signatures(spec, space.signature)
    assert edge == {**space.signature, "M": 31, "N": 30, "K": 29, "stride_am": 29, "stride_bk": 30, "stride_cm": 30}


def test_edge_shapes_that_give_the_problems_own_signature_or_repeat_another_are_left_out(tmp_path):
    text = SMALL.read_text().replace("edge_sizes: [{M: 31, N: 30, K: 29}]",
                                     "edge_sizes: [{M: 32}, {M: 31}, {M: 31}, {N: 30}]")
    space, spec = problem(tmp_path, text)
    edges = edge_signatures(spec, space.signature)
    assert [(e["M"], e["N"]) for e in edges] == [(31, 32), (32, 30)]


def test_none_when_the_stand_ins_cannot_reproduce_the_space_signature(tmp_path):
    """A space file whose signature disagrees with its own problem's args (here a stride), or an argument
    the stand-ins cannot evaluate: the gate compiles no edge shape and the worker's JIT compiles them, as before."""
    wrong = SMALL.read_text().replace("  stride_am: 32\n", "  stride_am: 64\n")
    space, spec = problem(tmp_path, wrong)
    assert edge_signatures(spec, space.signature) == []
    unreadable = SMALL.read_text().replace("stride_am: a.stride(0)", "stride_am: a.float().stride(0)")
    space, spec = problem(tmp_path, unreadable)
    assert edge_signatures(spec, space.signature) == []


def test_a_problem_without_edge_sizes_or_with_a_harness_has_none(tmp_path):
    space, spec = problem(tmp_path, SMALL.read_text().replace("edge_sizes: [{M: 31, N: 30, K: 29}]", "edge_sizes: []"))
    assert edge_signatures(spec, space.signature) == []
    spec.edge_sizes, spec.harness = [{"M": 31, "N": 30, "K": 29}], ("harness.py", "Harness")
    assert edge_signatures(spec, space.signature) == []


def test_the_gates_stream_compiles_each_candidate_at_the_edge_shapes_into_the_shared_triton_cache(tmp_path):
    """End to end without a GPU: a candidate wanted from the gate's compile stream gets its verdict, and its
    binaries at the problem's own and edge shapes both land in the Triton cache the workers would share."""
    pytest.importorskip("triton")
    from kernelrules.arch import load_arch
    from kernelrules.compile.cache import ResultCache
    from kernelrules.config import KernelConfig
    from kernelrules.tune.gate import Gate

    space, spec = problem(tmp_path, SMALL.read_text())
    shared = tmp_path / "triton-cache"
    gate = Gate(space, load_arch("sm_90"), jobs=2, cache=ResultCache(tmp_path / "cache"), triton_cache_dir=str(shared),
                edge_signatures=edge_signatures(spec, space.signature))
    config = KernelConfig(constexprs={"BLOCK_M": 16, "BLOCK_N": 32, "BLOCK_K": 16, "GROUP_SIZE_M": 8},
                          num_warps=4, num_stages=2)
    stream = gate.stream()
    try:
        stream.want(config)
        verdicts: dict = {}
        while not verdicts:
            stream.wait(5.0)
            verdicts = stream.pop([config])
        assert verdicts[config.key()].passed
        deadline = time.monotonic() + 120

        def binaries() -> int:
            return len(list(shared.rglob("matmul_kernel.cubin")))

        while binaries() < 2 and time.monotonic() < deadline:
            stream.wait(0.2)
        assert binaries() == 2  # the problem's shape and the edge shape's, each its own binary
    finally:
        stream.close()
        gate.close()


# -- a harness problem: the worker reads the edge shapes' signatures from the harness's own launch -------------

HARNESS = REPO / "tests" / "fixtures" / "tune" / "harness.yaml"


def harness_problem(tmp_path: Path, launch: str | None = None):
    """The fixture harness problem (faulty.py through scale_harness.py), its launch optionally rewritten."""
    folder = REPO / "tests" / "fixtures" / "tune"
    for name in ("harness.yaml", "faulty.py", "scale_harness.py"):
        shutil.copy(folder / name, tmp_path / name)
    if launch is not None:
        path = tmp_path / "scale_harness.py"
        path.write_text(path.read_text().replace('kernel[grid](tensors["x"], tensors["y"], self.n, **config)', launch))
    space = load_space(tmp_path / "harness.yaml")
    return space, load_problem(space)


def read_edges(space, spec):
    pytest.importorskip("torch")
    from kernelrules.tune.harness_edges import harness_edge_signatures
    from kernelrules.tune.launch import HarnessRunner

    runner = HarnessRunner(spec, "cpu")
    configs = [c.to_dict() for c in space.configs()]
    return harness_edge_signatures(runner, spec, [configs[0], configs[-1]], dict(space.signature),
                                   lambda sizes: runner.make(sizes, 0))


def test_a_harness_problems_edge_signature_is_read_from_its_launch_without_launching(tmp_path):
    space, spec = harness_problem(tmp_path)
    assert space.signature == {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 64}
    assert read_edges(space, spec) == [{"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 50}]


def test_no_harness_edge_signatures_when_they_cannot_be_trusted(tmp_path):
    """A launch whose integer depends on the config (one binary per config), a harness that launches
    twice, or one whose own-size launch disagrees with the space file: none (the worker compiles them)."""
    per_config = 'kernel[grid](tensors["x"], tensors["y"], self.n + config["BLOCK"] - 16, **config)'
    assert read_edges(*harness_problem(tmp_path, per_config)) == []
    twice = 'kernel[grid](tensors["x"], tensors["y"], self.n, **config); kernel[grid](tensors["x"], tensors["y"], self.n, **config)'
    assert read_edges(*harness_problem(tmp_path, twice)) == []
    other_dtype = 'kernel[grid](tensors["x"].double(), tensors["y"], self.n, **config)'
    assert read_edges(*harness_problem(tmp_path, other_dtype)) == []
    raises = 'kernel.run(tensors["x"], tensors["y"], self.n, grid=grid, **config)'
    assert read_edges(*harness_problem(tmp_path, raises)) == []


def test_the_gate_takes_learned_edge_signatures_once_and_only_with_a_shared_cache(tmp_path):
    from kernelrules.arch import load_arch
    from kernelrules.tune.gate import Gate

    space, _spec = harness_problem(tmp_path)
    edge = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 50}
    config = next(iter(space.configs()))
    without = Gate(space, load_arch("ampere"), stage="compiled")
    try:
        assert not without.add_edge_signatures([edge]) and without.edge_jobs(config) == []
    finally:
        without.close()
    shared = Gate(space, load_arch("ampere"), stage="compiled", triton_cache_dir=str(tmp_path / "triton"))
    try:
        assert shared.add_edge_signatures([edge])
        assert not shared.add_edge_signatures([{**edge, "n": 40}])  # the first signatures stay
        [job] = shared.edge_jobs(config)
        assert job.signature["n"] == 50 and shared.job(config).signature["n"] == 64
    finally:
        shared.close()


def test_the_driver_sends_the_probe_and_compiles_the_learned_edges_of_the_first_candidates_too(tmp_path):
    from kernelrules.tune.driver import Tuner, TuneOptions
    from kernelrules.tune.gate import Gate

    space, _spec = harness_problem(tmp_path)
    tuner = Tuner(tmp_path / "harness.yaml", TuneOptions(arch="ampere", stage="compiled"))
    probe = tuner._edge_probe(str(tmp_path / "triton"))
    assert probe["space_signature"] == space.signature
    assert [c["BLOCK"] for c in probe["edge_probe_configs"]] == [16, 32]
    assert tuner._edge_probe(None) == {}  # no shared Triton cache (--interpret): nothing to fill

    class Worker:
        info = {"edge_signatures": [{"x_ptr": "*fp32", "y_ptr": "*fp32", "n": 50}]}

    class Stream:
        jobs: list = []
        owners: list = []

        def side(self, jobs, config=None):
            self.jobs.extend(jobs)
            self.owners.append(config)

    tuner.gate = Gate(space, tuner.arch, stage="compiled", triton_cache_dir=str(tmp_path / "triton"))
    try:
        stream, first = Stream(), list(space.configs())[:1]
        tuner._learn_harness_edges([Worker()], stream, first)
        assert [j.signature["n"] for j in stream.jobs] == [50]
        assert stream.owners == first  # the first candidate's verdict waits for them (CompileStream.side)
        assert [j.signature["n"] for j in tuner.gate.edge_jobs(first[0])] == [50]
        assert any("edge-shape signature" in n for n in tuner.notes)
    finally:
        tuner.gate.close()
