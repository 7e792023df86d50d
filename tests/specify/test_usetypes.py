"""Argument types read from how a kernel uses its values (kernelrules.specify.usetypes, argflow)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from kernelrules.discover.kernels import discover
from kernelrules.specify.signatures import infer_signature


def signature(tmp_path: Path, body: str, name: str = "kern", files: dict[str, str] | None = None):
    for file, text in (files or {}).items():
        (tmp_path / file).write_text("import triton\nimport triton.language as tl\n" + textwrap.dedent(text))
    path = tmp_path / "mod.py"
    path.write_text("import triton\nimport triton.language as tl\n" + textwrap.dedent(body), encoding="utf-8")
    return infer_signature(discover([path]).by_name(name)[0], use_sidecar=False)


def test_an_augmented_pointer_step_does_not_make_the_step_a_pointer(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(x_ptr, out_ptr, stride_chunk, n_chunks, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            ptrs = x_ptr + offs
            out_ptrs = out_ptr + offs
            for c in range(n_chunks):
                tl.store(out_ptrs, tl.load(ptrs))
                ptrs += stride_chunk
                out_ptrs += stride_chunk
        """)
    assert sig.spec["stride_chunk"] == 4096 and sig.provenance["stride_chunk"] == "default"
    assert sig.spec["x_ptr"] == "*fp16"


def test_scalars_used_as_offsets_or_loop_bounds_are_integers_whatever_their_name_or_float_use(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(x_ptr, out_ptr, group_size, H_scale, width, eps, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            base = pid * width
            inv = 1.0 / group_size
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for off in range(0, group_size, BLOCK):
                acc += tl.load(x_ptr + base + off + tl.arange(0, BLOCK)).to(tl.float32)
            s = tl.load(x_ptr + pid * H_scale)
            clamp = tl.minimum(acc, width - 1.0)
            tl.store(out_ptr + tl.arange(0, BLOCK), clamp * inv * s + eps)
        """)
    # group_size: a loop bound (and 1.0 / group_size); H_scale: an offset (named like a float);
    # width: through a local into an offset (and combined with 1.0 elsewhere).
    assert sig.spec["group_size"] == 4096 and sig.spec["H_scale"] == 4096 and sig.spec["width"] == 4096
    assert sig.provenance["group_size"] == "default"
    assert sig.spec["eps"] == "fp32"


def test_scalars_reaching_float_only_math_are_floats(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(out_ptr, start, step, n, BLOCK: tl.constexpr):
            idx = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + idx, tl.exp2(start + idx * step), mask=idx < n)
        """)
    assert sig.spec["start"] == "fp32" and sig.spec["step"] == "fp32" and sig.provenance["start"] == "dataflow"
    assert sig.spec["n"] == 4096


def test_buffers_whose_values_are_shifted_masked_or_floor_divided_hold_integers(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(packed_ptr, codes, counts, locks, out_ptr, n, BITS: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            MASK: tl.constexpr = (1 << BITS) - 1
            word = tl.load(packed_ptr + offs)
            lo = word & MASK
            hi = tl.load(codes + offs) >> 4
            blocks = tl.cdiv(tl.load(counts + offs), BLOCK)
            tl.store(out_ptr + offs, (lo + hi + blocks).to(tl.float32))
            tl.atomic_xchg(locks + tl.program_id(0), 1)
        """)
    assert {k: sig.spec[k] for k in ("packed_ptr", "codes", "counts", "locks")} == dict.fromkeys(
        ("packed_ptr", "codes", "counts", "locks"), "*i32")
    assert sig.provenance["codes"] == "dataflow" and sig.spec["out_ptr"] == "*fp16"


def test_a_value_cast_before_its_use_says_nothing_of_its_buffer(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            a = tl.load(x_ptr + offs).to(tl.int32) & 7
            b = tl.exp(tl.load(y_ptr + offs).to(tl.float32))
            tl.store(out_ptr + offs, a + b)
        """)
    assert sig.spec["x_ptr"] == "*fp16" and sig.provenance["x_ptr"] == "naming"
    assert sig.spec["y_ptr"] == "*fp16"


def test_float_only_math_and_boolean_uses_type_buffers(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(decay, enabled, flags, logits, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            d = tl.exp(-tl.load(decay + offs))
            ok = tl.load(enabled + tl.program_id(0)) & (offs < n)
            row = tl.load(flags + tl.program_id(0))
            tl.store(logits + offs, 0.0, mask=row)
            tl.store(out_ptr + offs, d, mask=ok)
        """)
    assert sig.spec["decay"] == "*fp32" and sig.spec["enabled"] == "*i1" and sig.spec["flags"] == "*i1"
    assert sig.spec["logits"] == "*fp16"


def test_an_atomic_returns_the_old_value_of_its_buffer(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(counts_ptr, sorted_ptr, expert_ids, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            e = tl.load(expert_ids + offs)
            rank = tl.atomic_add(counts_ptr + e, 1)
            tl.store(sorted_ptr + rank, offs)
        """)
    assert sig.spec["counts_ptr"] == "*i32" and sig.provenance["counts_ptr"] == "dataflow"


def test_uses_in_helpers_count_for_the_arguments_passed_to_them(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def decode(table_ptr, row, width, BLOCK: tl.constexpr):
            pay = tl.load(table_ptr + row * width + tl.arange(0, BLOCK))
            return (pay & 0x0F).to(tl.float32)

        @triton.jit
        def kern(table, out_ptr, w_scale, BLOCK: tl.constexpr):
            pid = tl.program_id(0)
            tl.store(out_ptr + tl.arange(0, BLOCK), decode(table, pid, w_scale, BLOCK))
        """)
    assert sig.spec["table"] == "*i32" and sig.spec["w_scale"] == 4096


def test_pointers_passed_to_helpers_of_other_files_and_through_where(tmp_path):
    (tmp_path / "__init__.py").write_text("")
    sig = signature(tmp_path, """
        from .helpers import store_row

        @triton.jit
        def kern(X, Y, Z, ptr0, ptr1, n, BLOCK: tl.constexpr):
            which = tl.program_id(1)
            src = tl.where(which == 0, ptr0, ptr1)
            store_row(Y, tl.load(src + tl.arange(0, BLOCK)), BLOCK)
            tl.store(Z + tl.arange(0, BLOCK), tl.load(X + n))
        """, files={"helpers.py": """
        @triton.jit
        def store_row(dst, values, BLOCK: tl.constexpr):
            tl.store(dst + tl.arange(0, BLOCK), values)
        """})
    assert sig.spec["Y"] == "*fp16" and sig.spec["ptr0"] == "*fp16" and sig.spec["ptr1"] == "*fp16"
    assert sig.spec["n"] == 4096


def test_kernels_typed_from_their_uses_compile_at_lint(run_cli, tmp_path):
    """End to end: each kernel below failed to compile with the old guesses (a pointer step typed a
    pointer, a loop bound fp32, bit operations on fp16, exp of fp16, an fp16 lock); now each is analyzed
    on the first try, with no CMP001."""
    path = tmp_path / "uses.py"
    path.write_text("import triton\nimport triton.language as tl\n\n" + textwrap.dedent('''
        @triton.jit
        def stepped(x_ptr, out_ptr, stride_chunk, n_chunks, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            ptrs = x_ptr + offs
            for c in range(n_chunks):
                tl.store(out_ptr + c * BLOCK + offs, tl.load(ptrs))
                ptrs += stride_chunk

        @triton.jit
        def group_mean(x_ptr, out_ptr, group_size, BLOCK: tl.constexpr):
            acc = tl.zeros((BLOCK,), dtype=tl.float32)
            for off in range(0, group_size, BLOCK):
                acc += tl.load(x_ptr + off + tl.arange(0, BLOCK)).to(tl.float32)
            tl.store(out_ptr + tl.arange(0, BLOCK), acc * (1.0 / group_size))

        @triton.jit
        def unpack(packed_ptr, decay, locks, out_ptr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            word = tl.load(packed_ptr + offs)
            q = ((word >> 4) & 15).to(tl.float32) * tl.exp(-tl.load(decay + offs))
            tl.store(out_ptr + offs, q)
            tl.atomic_xchg(locks + tl.program_id(0), 1)
        '''))
    done = run_cli("lint", str(path), "--arch", "hopper", "--format", "json", "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode in (0, 1), done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)
    kernels = {k["name"]: k for k in report["kernels"]}
    assert not [f for f in report["findings"] if f["code"] == "CMP001"]
    for name in ("stepped", "group_mean", "unpack"):
        assert kernels[name]["status"] == "analyzed", (name, kernels[name]["message"])
        assert "did not compile" not in str(kernels[name]["signature_provenance"]), name
    assert kernels["unpack"]["signature_provenance"]["packed_ptr"] == "dataflow"


def test_offsets_that_become_pointers_by_an_augmented_add_root_at_the_pointer(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(src, out_ptr, stride_tb, BLOCK: tl.constexpr):
            base = src + tl.program_id(0) * stride_tb
            t_ptr = tl.arange(0, BLOCK)
            t_ptr += base
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(t_ptr))
        """)
    assert sig.spec["src"] == "*fp16" and sig.spec["stride_tb"] == 4096


def test_errors_a_wrong_argument_type_causes_are_read_as_such():
    """These compile errors come from an argument typed wrong (a lock guessed fp16, an offset guessed a
    pointer, a float buffer used as a mask): with guessed types they make a kernel needs-spec, not CMP001."""
    from kernelrules.compile.limits import type_error

    for message in ("atomic_xchg does not support fp16", "TypeError('cannot add pointers together')",
                    "Mask must have boolean scalar type",
                    "create_assert(): incompatible function arguments. The following argument types are supported:"):
        assert type_error(message), message
    assert not type_error("NameError: name 'undefined_helper' is not defined")


def test_values_cast_to_pointers_with_tl_cast_are_addresses(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(data_ptrs, strides, out_ptr, BLOCK: tl.constexpr):
            bid = tl.program_id(0)
            base = tl.load(data_ptrs + bid)
            base = tl.cast(base, tl.pointer_type(tl.uint8))
            tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(base + tl.arange(0, BLOCK) * tl.load(strides + bid)))
        """)
    assert sig.spec["data_ptrs"] == "*i64" and sig.provenance["data_ptrs"] == "dataflow"


def test_both_branches_of_an_if_give_a_value_one_type(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(lens_a, lens_b, cand_ptr, arg_ptr, out_ptr, n):
            req = tl.program_id(0)
            if tl.load(lens_a + req) < tl.load(lens_b + req):
                bonus = tl.load(cand_ptr + req).to(tl.int64)
            else:
                bonus = tl.load(arg_ptr + req)
            tl.store(out_ptr + req, bonus)
        """)
    assert sig.spec["arg_ptr"] == "*i64" and sig.provenance["arg_ptr"] == "dataflow"
    assert sig.spec["cand_ptr"] == "*fp16"


def test_an_argmax_is_an_index_whatever_its_buffer_holds(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(score_ptr, arg_ptr, out_ptr, BLOCK: tl.constexpr):
            s = tl.load(score_ptr + tl.arange(0, BLOCK), other=float("-inf"))
            best = tl.argmax(s, axis=0)
            tl.store(out_ptr, tl.load(arg_ptr + best))
        """)
    assert sig.spec["score_ptr"] == "*fp16" and sig.provenance["score_ptr"] == "naming"


def test_an_index_made_of_a_size_does_not_make_the_size_a_float(tmp_path):
    sig = signature(tmp_path, """
        @triton.jit
        def kern(x_ptr, out_ptr, H_out, W_out, scale_h, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            y_out = row % H_out
            blocks = tl.cdiv(W_out, BLOCK)
            src = tl.floor((y_out + 0.5) * scale_h)
            tl.store(out_ptr + row * blocks + tl.arange(0, BLOCK), tl.load(x_ptr + src.to(tl.int32)))
        """)
    assert sig.spec["H_out"] == 4096 and sig.spec["W_out"] == 4096 and sig.spec["scale_h"] == "fp32"
