"""Guesses that compile (issue 14): argument types from the body and comments, and lint's search over
pointer types and constexpr values when the first guess does not compile."""

from __future__ import annotations

import json
from types import SimpleNamespace

from kernelrules.specify.constexpr_guess import alternatives, string_names
from kernelrules.discover.kernels import discover
from kernelrules.specify.guess_search import local_names, pointer_variants, retryable, settle
from kernelrules.specify.signatures import infer_signature, looks_like_stride

HEADER = "import triton\nimport triton.language as tl\n\n\n"


def signature_of(tmp_path, source, name):
    path = tmp_path / f"{name}.py"
    path.write_text(HEADER + source)
    (kernel,) = [k for k in discover([path]).kernels if k.name == name]
    return infer_signature(kernel)


def lint_json(run_cli, tmp_path, path):
    done = run_cli("lint", str(path), "--arch", "hopper", "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    return {k["name"]: k for k in json.loads(done.stdout)["kernels"]}, json.loads(done.stdout)["findings"]


# --------------------------------------------------------------------------- argument types from the body


GATHER = '''\
@triton.jit
def gather_rows(x_ptr, labels, lo_ptr, counts_ptr, out_ptr, x_row_stride, Scale_row_stride, n,
                BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    y = tl.load(labels + pid)
    y_local = y - 3
    start = tl.load(lo_ptr + pid)
    total = 0
    for e in range(4):
        total += tl.load(counts_ptr + e)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for i in range(start, n, BLOCK):
        offs = i + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + y_local * x_row_stride + offs, mask=offs < n).to(tl.float32)
    tl.store(out_ptr + pid * Scale_row_stride + total + tl.arange(0, BLOCK), acc)
'''


def test_pointers_whose_values_are_offsets_bounds_or_int_sums_hold_integers(tmp_path):
    sig = signature_of(tmp_path, GATHER, "gather_rows")
    assert sig.spec["labels"] == "*i64" and sig.provenance["labels"] == "dataflow"  # offset of x_ptr
    assert sig.spec["lo_ptr"] == "*i32" and sig.provenance["lo_ptr"] == "dataflow"  # a loop bound
    assert sig.spec["counts_ptr"] == "*i32"  # summed into an int loop-carried value
    assert sig.spec["x_ptr"] == "*fp16" and sig.spec["out_ptr"] == "*fp16"  # data: still the naming guess
    # A stride is an integer whatever else its name says (scale would be fp32, ptr a pointer).
    assert sig.spec["Scale_row_stride"] == 4096 and sig.spec["x_row_stride"] == 4096
    assert looks_like_stride("Mean_ptr_row_stride") and not looks_like_stride("strawberry")


def test_a_value_loaded_through_an_index_is_not_an_index(tmp_path):
    """``x = tl.load(x_ptr + idx)``: x_ptr's values come from where it points, not from idx."""
    source = '''\
@triton.jit
def scatter(x_ptr, idx_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    idx = tl.load(idx_ptr + offs)
    x = tl.load(x_ptr + idx)
    tl.store(out_ptr + offs, x * 2)
'''
    sig = signature_of(tmp_path, source, "scatter")
    assert sig.spec["idx_ptr"] == "*i32" and sig.spec["x_ptr"] == "*fp16" and sig.spec["out_ptr"] == "*fp16"


def test_a_type_in_a_parameter_comment_is_the_authors(tmp_path):
    source = '''\
@triton.jit
def chunk_sum(
    k,            # *f32 [B, T, H, D]
    beta,         # *bf16 [B, T, H]
    cu_seqlens,   # *i32 [N+1]
    sizes_ptr,    # int64[N] sizes of the output
    x_ptr,        # *Pointer* to the input: no type
    o, T,         # two on one line: no comment type for either
    BK: tl.constexpr,
):
    t = tl.arange(0, BK)
    bos = tl.load(cu_seqlens)
    tl.store(o + t, tl.load(k + bos + t) * tl.load(beta + t) + tl.load(x_ptr + t) + tl.load(sizes_ptr))
'''
    sig = signature_of(tmp_path, source, "chunk_sum")
    assert sig.spec["k"] == "*fp32" and sig.provenance["k"] == "comment"
    assert sig.spec["beta"] == "*bf16" and sig.spec["cu_seqlens"] == "*i32"
    assert sig.spec["o"] == "*fp16" and sig.provenance["o"] == "naming"
    assert sig.spec["sizes_ptr"] == "*i64" and sig.provenance["x_ptr"] == "naming"


# --------------------------------------------------------------------------- the search, with a fake compiler


def fake_probe(works):
    """A probe that compiles when ``works(spec, change)`` is true, recording every call."""
    calls = []

    def probe(spec, change):
        calls.append((dict(spec), dict(change)))
        ok = works(spec, change)
        return SimpleNamespace(ok=ok, error_kind=None if ok else "compile_error",
                               message="" if ok else "CompilationError: Both operands must be same dtype")
    return probe, calls


SPEC = {"x_ptr": "*fp16", "g_ptr": "*fp16", "idx_ptr": "*i32", "n": 4096}
PROVENANCE = {"x_ptr": "naming", "g_ptr": "naming", "idx_ptr": "dataflow", "n": "default"}


def test_settle_tries_other_pointer_types_for_guessed_fp16_pointers_only():
    probe, calls = fake_probe(lambda spec, change: spec["x_ptr"] == "*fp32")
    found = settle(probe, SPEC, PROVENANCE, {"MODE": 16})
    assert found.pointer_type == "fp32" and found.pointers == ("x_ptr", "g_ptr")
    assert found.spec["idx_ptr"] == "*i32" and found.spec["g_ptr"] == "*fp32" and not found.constexprs
    assert [c[0]["x_ptr"] for c in calls] == ["*fp16", "*bf16", "*fp32"]


def test_settle_changes_one_constexpr_then_combines_with_pointer_types():
    probe, calls = fake_probe(lambda spec, change: spec["x_ptr"] == "*bf16" and change.get("MODE") is True)
    found = settle(probe, SPEC, PROVENANCE, {"MODE": False, "BLOCK": 128})
    assert found.constexprs == {"MODE": True} and found.replaced == {"MODE": False}
    assert found.pointer_type == "bf16" and found.changed


def test_settle_stops_at_its_budget_and_on_failures_no_guess_causes():
    probe, calls = fake_probe(lambda spec, change: False)
    found = settle(probe, SPEC, PROVENANCE, {"A": 16, "B": 16, "C": 16}, budget=5)
    assert not found.changed and len(calls) == 6 and found.probes == 6
    not_defined = SimpleNamespace(ok=False, error_kind="compile_error", message="NameError('helper is not defined')")
    assert not retryable(not_defined, set()) and retryable(not_defined, {"helper"})
    assert not retryable(SimpleNamespace(ok=False, error_kind="timeout", message=""), set())
    assert pointer_variants({"x": "*fp16"}, {"x": "comment"}) == []


def test_a_first_probe_past_the_time_limit_tries_every_guessed_integer_smaller_once():
    calls = []

    def probe(spec, change):  # the guessed 16s and 128s compile for minutes; smaller ones compile
        calls.append(dict(change))
        slow = not change
        return SimpleNamespace(ok=not slow, error_kind="timeout" if slow else None, message="")

    found = settle(probe, SPEC, PROVENANCE, {"kernel_h": 16, "BLOCK": 128, "FLAG": False, "eps": 1e-6})
    assert calls == [{}, {"kernel_h": 2, "BLOCK": 32}]  # one more probe; flags and other values untouched
    assert found.constexprs == {"kernel_h": 2, "BLOCK": 32} and found.replaced == {"kernel_h": 16, "BLOCK": 128}
    assert found.failure == "ran past the compile time limit" and found.probes == 2

    calls.clear()
    still_slow = settle(lambda spec, change: calls.append(change) or SimpleNamespace(
        ok=False, error_kind="timeout", message=""), SPEC, PROVENANCE, {"kernel_h": 16})
    assert not still_slow.changed and len(calls) == 2  # no third try: each one may cost the whole limit
    calls.clear()
    nothing_guessed = settle(lambda spec, change: calls.append(change) or SimpleNamespace(
        ok=False, error_kind="timeout", message=""), SPEC, PROVENANCE, {"FLAG": True})
    assert not nothing_guessed.changed and len(calls) == 1


def test_string_constexprs_and_their_alternatives():
    import ast

    func = ast.parse("def k(a, b, P, E):\n    tl.dot(a, b, input_precision=P)\n    tl.load(a, eviction_policy=E)\n").body[0]
    assert string_names(func) == {"P": "tf32", "E": ""}
    assert alternatives("tf32") == ["ieee", "tf32x3"] and alternatives("")[0] == "evict_last"
    assert 4096 in alternatives(16) and local_names(func) == set()


# --------------------------------------------------------------------------- end to end, cross-compiled


KERNELS = '''\
@triton.jit
def exact_ratio(x_ptr, g_ptr, out_ptr, n, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    g = tl.load(g_ptr + offs, mask=offs < n, other=1.0)
    tl.store(out_ptr + offs, tl.math.div_rn(x, g), mask=offs < n)


@triton.jit
def scaled_copy(x_ptr, out_ptr, n, USE_SCALE: tl.constexpr, BLOCK: tl.constexpr = 128):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if USE_SCALE:
        s = 2.0
    tl.store(out_ptr + offs, x * s, mask=offs < n)


@triton.jit
def tile_dot(a_ptr, b_ptr, c_ptr, PRECISION: tl.constexpr, EVICT: tl.constexpr, BLOCK: tl.constexpr = 32):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :], eviction_policy=EVICT)
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b, input_precision=PRECISION))


@triton.jit
def pick_rows(x_ptr, y_ptr, out_ptr, n_cols, BLOCK: tl.constexpr = 128):
    row = tl.program_id(0)
    y = tl.load(y_ptr + row)
    tl.store(out_ptr + row, tl.load(x_ptr + row * n_cols + y))


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_stages=2)], key=["n"])
@triton.jit
def staged(x_ptr, out_ptr, n, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    tl.static_assert(num_stages == 2)
    for i in tl.range(0, n, BLOCK, num_stages=num_stages):
        offs = i + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.jit
def staged_default(x_ptr, out_ptr, n, BLOCK: tl.constexpr, num_stages: tl.constexpr):
    tl.static_assert(num_stages == 3)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
'''


def test_lint_finds_guesses_that_compile(run_cli, tmp_path):
    path = tmp_path / "guesses.py"
    path.write_text(HEADER + KERNELS)
    kernels, findings = lint_json(run_cli, tmp_path, path)
    assert not [f for f in findings if f["code"] == "CMP001"]
    for name, kernel in kernels.items():
        assert kernel["status"] == "analyzed", (name, kernel["message"])
        assert all(r["facts"]["compile_status"] == "ok" for r in kernel["results"]), name
    # div_rn wants fp32: the buffers whose loaded values it takes are read as *fp32 from that use (dataflow),
    # before any search (the search's retyping is unit-tested above).
    assert kernels["exact_ratio"]["signature_provenance"]["x_ptr"] == "dataflow"
    assert kernels["exact_ratio"]["signature_provenance"]["g_ptr"] == "dataflow"
    # `s` is defined only when USE_SCALE: False gave a NameError, True compiles.
    assert "USE_SCALE=True (False did not compile)" in kernels["scaled_copy"]["message"]
    assert "PRECISION=tf32" in kernels["tile_dot"]["message"] and "EVICT=" in kernels["tile_dot"]["message"]
    assert kernels["pick_rows"]["signature_provenance"]["y_ptr"] == "dataflow"
    # A constexpr named like a launch option holds the option (config's, else the default 3), not a guess.
    assert "num_stages" not in (kernels["staged"]["message"] or "") + kernels["staged_default"]["message"]


def test_tensor_descriptor_arguments_are_named_as_our_limit(run_cli, tmp_path):
    """``desc.load([m, 0])``: a host TensorDescriptor at launch whose block shape nothing in the source gives
    (the offset 0 names no constexpr), so the kernel is needs-spec saying so (never a CMP001 from an integer
    stand-in), even with an unread argument beside it (tests/specify/test_tensordesc.py: the readable ones)."""
    path = tmp_path / "descs.py"
    path.write_text(HEADER + '''\
@triton.jit
def tile_copy(desc_in, desc_out, bucket, BLOCK: tl.constexpr = 64):
    m = tl.program_id(0) * BLOCK
    desc_out.store([m, 0], desc_in.load([m, 0]))
''')
    kernels, findings = lint_json(run_cli, tmp_path, path)
    kernel = kernels["tile_copy"]
    assert kernel["status"] == "needs-spec" and "desc_in, desc_out are tensor descriptors" in kernel["message"]
    assert [f["code"] for f in findings] == ["LNT001"]


def test_loaded_values_cast_to_pointers_are_64_bit_addresses(tmp_path):
    """`tl.load(meta + i).to(out.dtype)` turns a loaded integer into a pointer: the buffer holds addresses
    (*i64); an int32 there is an MLIR error, which is a guess of ours (needs-spec), never a CMP001."""
    from kernelrules.compile.limits import type_error

    source = '''\
@triton.jit
def gather_pack(src_metadata, rows, pack, n, BLOCK: tl.constexpr):
    src = tl.load(src_metadata + 4 * tl.program_id(0)).to(pack.dtype)
    offs = tl.arange(0, BLOCK)
    tl.store(pack + offs, tl.load(src + tl.load(rows + offs)), mask=offs < n)
'''
    sig = signature_of(tmp_path, source, "gather_pack")
    assert sig.spec["src_metadata"] == "*i64" and sig.provenance["src_metadata"] == "dataflow"
    assert sig.spec["pack"] == "*fp16"
    assert type_error("RuntimeError: error encountered during parsing")
