"""Recording Triton launches of a user's command (kernelrules.specify.trace, kernelrules.specify.trace_hook)."""

from __future__ import annotations

import json
import os
import sys
import textwrap
from pathlib import Path

import pytest

from kernelrules.specify import trace_hook
from kernelrules.errors import KernelrulesError
from kernelrules.specify.trace import (
    SCHEMA_VERSION,
    TracedLaunch,
    TraceError,
    launches_for,
    load_trace,
    run_trace,
    trace_signature,
    write_trace,
)

HEADER = json.dumps({"schema_version": SCHEMA_VERSION, "format": "kernelrules-trace"})


def launch(n: int = 4096, **changes) -> TracedLaunch:
    fields = dict(kernel="add_kernel", path="/src/k.py", line=4, args={"x_ptr": "*fp16", "n": n, "eps": "fp32",
                                                                       "bias": None, "desc": "unknown:Thing"},
                  constexprs={"BLOCK": 256, "ACT": "relu", "EVEN": True}, options={"num_warps": 4},
                  specialization={"x_ptr": ["aligned_16"]}, mode="interpreter")
    fields.update(changes)
    return TracedLaunch(**fields)


# --------------------------------------------------------------------------- file format


def test_round_trip_groups_and_dedupes(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    other = launch(kernel="other", path="/src/o.py")
    write_trace(path, [launch(), launch(1000), launch(), other])
    trace = load_trace(path)
    assert set(trace) == {("/src/k.py", "add_kernel"), ("/src/o.py", "other")}
    assert [x.args["n"] for x in trace[("/src/k.py", "add_kernel")]] == [4096, 1000]
    assert trace[("/src/k.py", "add_kernel")][0] == launch()
    assert launches_for(trace, "/src/o.py", "other") == [other]


def test_duplicate_lines_from_several_processes_are_merged(tmp_path: Path) -> None:
    record = json.dumps(trace_hook_record())
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join([HEADER, record, "", record]) + "\n", encoding="utf-8")
    assert len(load_trace(path)[("/src/k.py", "k")]) == 1


def trace_hook_record() -> dict:
    return {"kernel": "k", "path": "/src/k.py", "line": 1, "mode": "jit", "args": {"n": 16}, "constexprs": {},
            "options": {}, "specialization": {"n": ["divisible_by_16"]}}


def test_trace_signature_is_spec_format() -> None:
    assert trace_signature(launch()) == {"x_ptr": "*fp16", "n": 4096, "eps": "fp32", "BLOCK": 256, "EVEN": True}
    assert trace_signature(launch(), constexprs=False) == {"x_ptr": "*fp16", "n": 4096, "eps": "fp32"}


@pytest.mark.parametrize("lines, message", [
    ([HEADER, "{not json"], r"t\.jsonl:2:2: invalid JSON"),
    (['{"kernel": "k"}'], r"t\.jsonl:1: not a kernelrules trace"),
    ([json.dumps({"schema_version": 99, "format": "kernelrules-trace"})], r"t\.jsonl:1: unsupported trace schema"),
    ([HEADER, "[1, 2]"], r"t\.jsonl:2: a trace record must be a JSON object"),
    ([HEADER, json.dumps({"kernel": "k", "path": "p", "args": [], "constexprs": {}, "options": {}})],
     r"t\.jsonl:2: trace record needs 'args'"),
    ([HEADER, json.dumps({**trace_hook_record(), "line": "x"})], r"t\.jsonl:2: trace record has a malformed"),
    ([], r"t\.jsonl: empty trace file"),
])
def test_broken_trace_files(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match=message):
        load_trace(path)


def test_missing_trace_file(tmp_path: Path) -> None:
    with pytest.raises(KernelrulesError, match="absent.jsonl: cannot read trace file"):
        load_trace(tmp_path / "absent.jsonl")


# --------------------------------------------------------------------------- the recorder, in process


class FakeTensor:
    """What the recorder needs of a tensor: a dtype and an address."""

    def __init__(self, dtype: str, address: int = 4096) -> None:
        self.dtype = dtype
        self.address = address

    def data_ptr(self) -> int:
        return self.address


def test_describe_arguments() -> None:
    assert trace_hook.describe_argument(FakeTensor("torch.float16")) == ("*fp16", ["aligned_16"])
    assert trace_hook.describe_argument(FakeTensor("torch.float8_e4m3fn", 4100)) == ("*fp8e4nv", [])
    assert trace_hook.describe_argument(FakeTensor("torch.bool")) == ("*i1", ["aligned_16"])
    assert trace_hook.describe_argument(1) == (1, ["equal_to_1"])
    assert trace_hook.describe_argument(64) == (64, ["divisible_by_16"])
    assert trace_hook.describe_argument(1000) == (1000, [])
    assert trace_hook.describe_argument(0.5) == ("fp32", [])
    assert trace_hook.describe_argument(True) == ("i1", [])
    assert trace_hook.describe_argument(None) == (None, [])
    assert trace_hook.describe_argument(object()) == ("unknown:object", [])
    assert trace_hook.int_type(2**40) == "i64" and trace_hook.int_type(-5) == "i32"


def test_build_record_of_a_jit_function(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    module = tmp_path / "kmod.py"
    module.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["n"])
        def scale_kernel(x_ptr, n, alpha, BLOCK: tl.constexpr, EVEN: tl.constexpr = True):
            pass
    '''), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        import kmod  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(tmp_path))
    record = trace_hook.build_record(kmod.scale_kernel, (FakeTensor("torch.bfloat16"), 64),
                                     {"alpha": 2.0, "BLOCK": 128, "num_warps": 2}, "jit")
    assert record == {"kernel": "scale_kernel", "path": str(module), "line": 6, "mode": "jit",
                      "args": {"x_ptr": "*bf16", "n": 64, "alpha": "fp32"},
                      "constexprs": {"BLOCK": 128, "EVEN": True}, "options": {"num_warps": 2},
                      "specialization": {"x_ptr": ["aligned_16"]}}  # do_not_specialize: n is not tagged


# --------------------------------------------------------------------------- the command, end to end


def test_run_trace_records_without_gpu_or_torch(tmp_path: Path) -> None:
    """The child defines a kernel and calls its run(); the record is written before Triton needs a driver."""
    pytest.importorskip("triton")
    script = tmp_path / "launch.py"
    script.write_text(textwrap.dedent('''
        import triton
        import triton.language as tl

        class Tensor:
            dtype = "torch.float16"
            def data_ptr(self):
                return 256

        @triton.jit
        def copy_kernel(src_ptr, dst_ptr, n, BLOCK: tl.constexpr):
            pass

        for n in (1000, 1000, 2048):
            try:
                copy_kernel[(1,)](Tensor(), Tensor(), n, BLOCK=128, num_warps=2)
            except Exception:
                pass  # no GPU, no driver: the launch itself cannot run here
        raise SystemExit(3)
    '''), encoding="utf-8")
    output = tmp_path / "trace.jsonl"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    assert run_trace([sys.executable, str(script)], output, env=env) == 3
    launches = launches_for(load_trace(output), script, "copy_kernel")
    assert [trace_signature(x) for x in launches] == [
        {"src_ptr": "*fp16", "dst_ptr": "*fp16", "n": 1000, "BLOCK": 128},
        {"src_ptr": "*fp16", "dst_ptr": "*fp16", "n": 2048, "BLOCK": 128}]
    assert launches[0].options == {"num_warps": 2}
    assert launches[1].specialization["n"] == ["divisible_by_16"]
    assert launches[0].line == 11


def test_run_trace_keeps_a_shadowed_sitecustomize(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['SHADOWED_RAN'] = '1'\n", encoding="utf-8")
    script = tmp_path / "check.py"
    script.write_text("import os, sys\nsys.exit(0 if os.environ.get('SHADOWED_RAN') == '1' else 5)\n")
    env = dict(os.environ, PYTHONPATH=str(other))
    assert run_trace([sys.executable, str(script)], tmp_path / "t.jsonl", env=env) == 0
    assert load_trace(tmp_path / "t.jsonl") == {}


def test_run_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="no command"):
        run_trace([], tmp_path / "t.jsonl")
    with pytest.raises(TraceError, match="cannot run"):
        run_trace([str(tmp_path / "no-such-program")], tmp_path / "t.jsonl")


INTERPRETED = '''
import torch
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, scale, stride_am, stride_ak, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr):
    rm = tl.arange(0, BLOCK_M)
    rk = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak)
    b = tl.load(b_ptr + rk[:, None] * BLOCK_M + rm[None, :])
    tl.store(c_ptr + rm[:, None] * BLOCK_M + rm[None, :], tl.dot(a, b) * scale)

for n in (1000, 4096):
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    add_kernel[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
    assert torch.allclose(out, x + y)
for m in (16, 32):
    a = torch.randn(m, 16, dtype=torch.float16)
    b = torch.randn(16, m, dtype=torch.float16)
    c = torch.empty(m, m, dtype=torch.float32)
    dot_kernel[(1,)](a, b, c, 0.5, a.stride(0), a.stride(1), BLOCK_M=m, BLOCK_K=16, num_warps=4)
'''


def test_interpreter_trace_with_cpu_torch(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("numpy")  # Triton's interpreter needs it
    script = tmp_path / "kernels.py"
    script.write_text(INTERPRETED, encoding="utf-8")
    output = tmp_path / "trace.jsonl"
    rc = run_trace([sys.executable, str(script)], output, env=dict(os.environ, TRITON_INTERPRET="1"))
    assert rc == 0
    trace = load_trace(output)
    adds = launches_for(trace, script, "add_kernel")
    assert [trace_signature(x) for x in adds] == [
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": 1000, "BLOCK": 256},
        {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n": 4096, "BLOCK": 256}]
    assert all(x.mode == "interpreter" for x in adds)
    assert adds[1].specialization["n"] == ["divisible_by_16"]
    dots = launches_for(trace, script, "dot_kernel")
    assert [trace_signature(x) for x in dots] == [
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp32", "scale": "fp32", "stride_am": 16, "stride_ak": 1,
         "BLOCK_M": m, "BLOCK_K": 16} for m in (16, 32)]
    assert dots[0].specialization["stride_ak"] == ["equal_to_1"]
    assert dots[0].options == {"num_warps": 4}
