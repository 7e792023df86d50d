"""``LNT006 autotune-side-effect``: arguments an autotuned kernel updates in place or accumulates into
(:mod:`kernelrules.lint.side_effects`), read from the source, never run."""

from __future__ import annotations

import json
import textwrap

import pytest

from kernelrules.discover.kernels import cached_module, discover
from kernelrules.lint.findings import LINT_CODES
from kernelrules.lint.side_effects import autotune_side_effects

HEADER = '''\
import triton
import triton.language as tl
import kernelrules

CONFIGS = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})]
'''


def effects(tmp_path, source: str, name: str = "k.py") -> dict[str, object]:
    """The LNT006 effects of every launchable kernel of ``source``, by argument."""
    path = tmp_path / name
    path.write_text(HEADER + textwrap.dedent(source))
    found = discover([path])
    assert not [p for p in found.problems if p.kind == "syntax-error"]
    module = cached_module(path)
    return {e.argument: e for k in found.kernels if not k.is_helper for e in autotune_side_effects(module, k)}


# Each case: (id, kernel source, {argument: text its message must hold}); an empty dict: no finding.
CASES = [
    ("in-place", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            tl.store(x_ptr + offs, x * 2)
        ''', {"x_ptr": 'in place: each of the autotuner\'s timing runs reads what the run before it wrote; '
                       'add restore_value=["x_ptr"]'}),
    ("atomic-add-into-output", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(a_ptr, c_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.atomic_add(c_ptr + offs, tl.load(a_ptr + offs))
        ''', {"c_ptr": '`c_ptr` is accumulated with tl.atomic_add (line 11): each timing run adds to what the '
                       'runs before it left; add reset_to_zero=["c_ptr"]'}),
    ("covered-by-reset-to-zero", '''
        @triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["c_ptr"])
        @triton.jit
        def k(a_ptr, c_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.atomic_add(c_ptr + offs, tl.load(a_ptr + offs))
        ''', {}),
    ("covered-by-restore-value", '''
        @triton.autotune(configs=CONFIGS, key=["n"], restore_value=("x_ptr",))
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
        ''', {}),
    ("pre-hook", '''
        def zero_c(nargs):
            nargs["c_ptr"].zero_()

        @triton.autotune(configs=CONFIGS, key=["n"], pre_hook=zero_c)
        @triton.jit
        def k(a_ptr, c_ptr, n, BLOCK: tl.constexpr):
            tl.atomic_add(c_ptr + tl.arange(0, BLOCK), 1.0)
        ''', {}),
    ("config-pre-hook", '''
        def zero_c(nargs):
            nargs["c_ptr"].zero_()

        @triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=zero_c), triton.Config({"BLOCK": 128})],
                         key=["n"])
        @triton.jit
        def k(c_ptr, n, BLOCK: tl.constexpr):
            tl.atomic_add(c_ptr + tl.arange(0, BLOCK), 1.0)
        ''', {}),
    ("post-hook", '''
        def put_back(nargs, exception):
            pass

        @triton.autotune(configs=CONFIGS, key=["n"], post_hook=put_back)
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
        ''', {}),
    ("output-only-stored", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.zeros([BLOCK], tl.float32), mask=offs < n)
        ''', {}),
    ("load-one-store-another", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)
        ''', {}),
    ("alias-local-and-augassign", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, stride, n, BLOCK: tl.constexpr):
            row = tl.program_id(0)
            x_ptr += row * stride
            offs = tl.arange(0, BLOCK)
            p = x_ptr + offs
            x = tl.load(p)
            tl.store(x_ptr + offs, x - tl.max(x, 0))
        ''', {"x_ptr": "is loaded (line 14) and stored at the same address (line 15)"}),
    ("helper-stores-to-its-parameter", '''
        @triton.jit
        def _write(ptr, value):
            tl.store(ptr, value)

        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            x = tl.load(x_ptr + offs)
            _write(x_ptr + offs, x * 2)
        ''', {"x_ptr": "stored at the same address (line 16, in _write())"}),
    ("helper-updates-in-place-by-keyword", '''
        @triton.jit
        def _bump(ptr, offs):
            tl.store(ptr + offs, tl.load(ptr + offs) + 1)

        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(counts_ptr, n, BLOCK: tl.constexpr):
            _bump(offs=tl.arange(0, BLOCK), ptr=counts_ptr)
        ''', {"counts_ptr": 'add restore_value=["counts_ptr"]'}),
    ("masked-store", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            mask = offs < n
            x = tl.load(x_ptr + offs, mask=mask, other=0.0)
            tl.store(x_ptr + offs, tl.exp(x), mask=mask)
        ''', {"x_ptr": "in place"}),
    ("block-pointers", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, n, stride, BLOCK: tl.constexpr):
            p = tl.make_block_ptr(base=x_ptr, shape=(n, n), strides=(stride, 1), offsets=(tl.program_id(0) * BLOCK, 0),
                                  block_shape=(BLOCK, BLOCK), order=(1, 0))
            x = tl.load(p, boundary_check=(0, 1))
            tl.store(p, x * 0.5, boundary_check=(0, 1))
        ''', {"x_ptr": "in place"}),
    ("single-config", '''
        @triton.autotune(configs=[triton.Config({"BLOCK": 64})], key=["n"])
        @triton.jit
        def k(x_ptr, c_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
            tl.atomic_add(c_ptr, 1)
        ''', {}),
    ("not-autotuned", '''
        @triton.jit
        def k(x_ptr, c_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2)
            tl.atomic_add(c_ptr, 1)
        ''', {}),
    ("lock-with-atomic-cas", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(lock_ptr, y_ptr, n, BLOCK: tl.constexpr):
            while tl.atomic_cas(lock_ptr, 0, 1) == 1:
                pass
            tl.store(y_ptr + tl.arange(0, BLOCK), 1.0)
            tl.atomic_xchg(lock_ptr, 0)
        ''', {"lock_ptr": 'tl.atomic_cas (line 10), a lock, counter or flag whose state each timing run leaves to '
                          'the next; add reset_to_zero=["lock_ptr"]'}),
    ("two-constexpr-branches", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, y_ptr, n, SCALE: tl.constexpr, WRITE_BACK: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if SCALE:
                v = tl.load(x_ptr + offs) * 2
            else:
                v = tl.load(y_ptr + offs)
            if WRITE_BACK:
                tl.store(x_ptr + offs, v)
        ''', {"x_ptr": "when SCALE and WRITE_BACK, in place"}),
    ("atomic-on-pointer-from-two-arguments", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(idx_ptr, out_ptr, stride_out, n, BLOCK: tl.constexpr):
            i = tl.load(idx_ptr + tl.program_id(0))
            tl.atomic_add(out_ptr + i * stride_out + tl.arange(0, BLOCK), 1.0)
        ''', {"out_ptr": "tl.atomic_add"}),
    ("scratch-written-then-read-back", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, ws_ptr, y_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(ws_ptr + offs, tl.load(x_ptr + offs) * 2)
            tl.debug_barrier()
            tl.store(y_ptr + offs, tl.load(ws_ptr + offs) + 1)
        ''', {}),
    ("read-one-region-write-another", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(u_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            history = tl.load(u_ptr + offs, mask=offs < n)
            tl.store(u_ptr + n + offs, history * 2)
        ''', {}),
    ("idempotent-atomic-max", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, amax_ptr, n, BLOCK: tl.constexpr):
            tl.atomic_max(amax_ptr, tl.max(tl.abs(tl.load(x_ptr + tl.arange(0, BLOCK))), 0))
        ''', {}),
    ("atomic-max-whose-old-value-is-used", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(best_ptr, y_ptr, n, BLOCK: tl.constexpr):
            old = tl.atomic_max(best_ptr, tl.program_id(0))
            tl.store(y_ptr + tl.program_id(0), old)
        ''', {"best_ptr": "the old value it returns is used"}),
    ("masked-fill-is-idempotent", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(inp, mask_ptr, value, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            fill = tl.load(mask_ptr + offs).to(tl.int1)
            orig = tl.load(inp + offs)
            tl.store(inp + offs, tl.where(fill, tl.full([BLOCK], value, dtype=orig.dtype), orig))
        ''', {}),
    ("contradicting-branches", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(x_ptr, y_ptr, n, FORWARD: tl.constexpr, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if FORWARD:
                tl.store(y_ptr + offs, tl.load(x_ptr + offs))
            else:
                tl.store(x_ptr + offs, tl.load(y_ptr + offs))
        ''', {}),
    ("branch-no-config-reaches", '''
        @triton.autotune(configs=[triton.Config({"BLOCK": 64, "SPLIT_K": 1}),
                                  triton.Config({"BLOCK": 128, "SPLIT_K": 1})], key=["n"])
        @triton.jit
        def k(c_ptr, n, BLOCK: tl.constexpr, SPLIT_K: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if SPLIT_K == 1:
                tl.store(c_ptr + offs, 1.0)
            else:
                tl.atomic_add(c_ptr + offs, 1.0)
        ''', {}),
    ("branch-one-config-reaches", '''
        @triton.autotune(configs=[triton.Config({"BLOCK": 64, "SPLIT_K": 1}),
                                  triton.Config({"BLOCK": 128, "SPLIT_K": 4})], key=["n"])
        @triton.jit
        def k(c_ptr, n, BLOCK: tl.constexpr, SPLIT_K: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            if SPLIT_K == 1:
                tl.store(c_ptr + offs, 1.0)
            else:
                tl.atomic_add(c_ptr + offs, 1.0)
        ''', {"c_ptr": "tl.atomic_add"}),
    ("existing-reset-to-zero-list", '''
        @triton.autotune(configs=CONFIGS, key=["n"], reset_to_zero=["d_ptr"])
        @triton.jit
        def k(c_ptr, d_ptr, n, BLOCK: tl.constexpr):
            tl.atomic_add(c_ptr, 1)
            tl.atomic_add(d_ptr, 1)
        ''', {"c_ptr": 'add "c_ptr" to reset_to_zero: reset_to_zero=["d_ptr", "c_ptr"]'}),
    ("kernelrules-autotune", '''
        @kernelrules.autotune(configs=CONFIGS, key=["n"], arch="ada")
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
        ''', {"x_ptr": "in place"}),
    ("tensor-descriptor", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(w_ptr, n, BLOCK: tl.constexpr):
            desc = tl.make_tensor_descriptor(w_ptr, shape=[n, n], strides=[n, 1], block_shape=[BLOCK, BLOCK])
            tile = desc.load([tl.program_id(0) * BLOCK, 0])
            desc.store([tl.program_id(0) * BLOCK, 0], tile + 1)
        ''', {"w_ptr": "in place"}),
    ("pointer-array-argument", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(ptrs, n, BLOCK: tl.constexpr):
            p = tl.load(ptrs + tl.program_id(0)).to(tl.pointer_type(tl.float32))
            x = tl.load(p + tl.arange(0, BLOCK))
            tl.store(p + tl.arange(0, BLOCK), x * 2)
        ''', {}),
    ("atomic-cas-that-only-reads", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(flags_ptr, y_ptr, n, BLOCK: tl.constexpr):
            tl.store(flags_ptr + tl.program_id(0), 1)
            seen = tl.atomic_cas(flags_ptr + tl.program_id(0) - 1, 0, 0)
            tl.store(y_ptr + tl.program_id(0), seen)
        ''', {}),
    ("unreadable-keyword-options", '''
        @triton.autotune(configs=CONFIGS, key=["n"], **options_from_somewhere())
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
        ''', {}),
    ("readable-keyword-options", '''
        CACHE = {"cache_results": True} if triton.__version__ > "3" else {}

        @triton.autotune(configs=CONFIGS, key=["n"], **CACHE)
        @triton.jit
        def k(x_ptr, n, BLOCK: tl.constexpr):
            offs = tl.arange(0, BLOCK)
            tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1)
        ''', {"x_ptr": "in place"}),
    ("scratch-under-one-constexpr-through-a-helper", '''
        @triton.jit
        def _finish(dg, o, USE_G: tl.constexpr):
            if USE_G:
                tl.store(dg + o, tl.load(dg + o) - 1.0)

        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(dg, n, USE_G: tl.constexpr, BLOCK: tl.constexpr):
            o = tl.arange(0, BLOCK)
            if USE_G:
                tl.store(dg + o, 1.0)
            _finish(dg, o, USE_G=USE_G)
        ''', {}),
    ("accumulate-in-a-loop", '''
        @triton.autotune(configs=CONFIGS, key=["n"])
        @triton.jit
        def k(h_ptr, n, BLOCK: tl.constexpr):
            acc = tl.zeros([BLOCK], tl.float32)
            for t in range(n):
                p = h_ptr + t * BLOCK + tl.arange(0, BLOCK)
                acc += tl.load(p)
                if t > 0:
                    tl.store(p, acc)
        ''', {"h_ptr": "in place"}),
]


@pytest.mark.parametrize("source, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_seeded_kernels(tmp_path, source, expected):
    found = effects(tmp_path, source)
    assert set(found) == set(expected), {k: v.message for k, v in found.items()}
    for argument, text in expected.items():
        assert text in found[argument].message, found[argument].message


def test_fix_texts(tmp_path):
    inplace = effects(tmp_path, CASES[0][1], "a.py")["x_ptr"]
    assert inplace.fix == 'add restore_value=["x_ptr"]'
    atomic = effects(tmp_path, CASES[1][1], "b.py")["c_ptr"]
    assert atomic.fix.startswith('add reset_to_zero=["c_ptr"] (zeroed before every run, the real one too; '
                                 'add restore_value=["c_ptr"] instead')


def test_discovery_records_the_autotune_protections(tmp_path):
    path = tmp_path / "d.py"
    path.write_text(HEADER + textwrap.dedent('''
        NAMES = ["a_ptr"]

        @triton.autotune(CONFIGS, ["n"], None, NAMES, ("b_ptr",), post_hook=None)
        @triton.jit
        def k(a_ptr, b_ptr, n, BLOCK: tl.constexpr):
            pass

        @triton.autotune(configs=CONFIGS, key=["n"], pre_hook=lambda nargs: None, reset_to_zero=unknown())
        @triton.jit
        def j(a_ptr, n, BLOCK: tl.constexpr):
            pass
        '''))
    k, j = discover([path]).kernels
    assert (k.autotune.reset_to_zero, k.autotune.restore_value, k.autotune.pre_hook, k.autotune.post_hook) == \
        (["a_ptr"], ["b_ptr"], None, None)
    assert (k.autotune.line, k.autotune.column) == (9, 1)
    assert j.autotune.pre_hook == "lambda nargs: None"
    assert "reset_to_zero cannot be read" in j.autotune.side_effect_lists_error


def test_lint_code_is_registered():
    code = LINT_CODES["LNT006"]
    assert (code.name, code.severity) == ("autotune-side-effect", "error")


CLI_KERNEL = '''\
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 256})], key=["n"]){comment}
@triton.jit
def scale_inplace(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(x_ptr + offs, x * 2, mask=offs < n)
'''


def test_cli_reports_ignores_and_suppresses(run_cli, tmp_path):
    (tmp_path / "kern.py").write_text(CLI_KERNEL.replace("{comment}", ""))
    args = ("lint", "kern.py", "--arch", "ada", "--stage", "config", "--cache-dir", "cache")
    result = run_cli(*args)
    assert result.returncode == 1, result.stderr
    assert ('kern.py:5:2: LNT006 `x_ptr` is loaded (line 9) and stored at the same address (line 10), in place: '
            "each of the autotuner's timing runs reads what the run before it wrote; add restore_value=[\"x_ptr\"] "
            "[autotune-side-effect]") in result.stdout
    assert '  fix: add restore_value=["x_ptr"]' in result.stdout
    report = json.loads(run_cli(*args, "--format", "json").stdout)
    (finding,) = [f for f in report["findings"] if f["code"] == "LNT006"]
    assert (finding["line"], finding["severity"], finding["kernel"], finding["fix"]) == \
        (5, "error", "scale_inplace", 'add restore_value=["x_ptr"]')
    ignored = run_cli(*args, "--ignore", "LNT006")
    assert ignored.returncode == 0 and "LNT006" not in ignored.stdout
    (tmp_path / "kern.py").write_text(CLI_KERNEL.replace("{comment}", "  # kernelrules: ignore[LNT006]"))
    suppressed = run_cli(*args)
    assert suppressed.returncode == 0 and "LNT006" not in suppressed.stdout and "1 suppressed" in suppressed.stdout
