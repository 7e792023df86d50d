"""Constexpr values a launcher derives from the launch's other arguments (:mod:`kernelrules.specify.launch_relations`):
``BK = next_power_of_2(K)`` follows the guessed ``K`` instead of a block-size guess of its own."""

from __future__ import annotations

import pytest

from kernelrules.specify.kernelspec import resolve

SOURCE = '''
import triton
import triton.language as tl

TILE = 32


@triton.autotune(configs=[triton.Config({"BT": 32}, num_warps=4)], key=["T"])
@triton.jit
def attn_kernel(q, o, T, H: tl.constexpr, HQ: tl.constexpr, G: tl.constexpr, K: tl.constexpr,
                BK: tl.constexpr, BV: tl.constexpr, BT: tl.constexpr, BM: tl.constexpr):
    i = tl.arange(0, BK)
    tl.store(o + i, tl.load(q + i))


def attn(q, o, varlen=False, hopper=True):
    B, T, H, K = q.shape
    HQ = o.shape[2]
    G = HQ // H
    BK = min(256, max(16, triton.next_power_of_2(K)))
    if hopper:
        BV = min(128, max(16, triton.next_power_of_2(K)))
    else:
        BV = min(64, max(16, triton.next_power_of_2(K)))
    BM = 64 if hopper else 32
    kernel = attn_kernel.fn if varlen else attn_kernel
    kernel[(T,)](q, o, T, H=H, HQ=HQ, G=G, K=K, BK=BK, BV=BV, BM=BM)


@triton.jit
def plain_kernel(x, BLOCK: tl.constexpr, N: tl.constexpr):
    i = tl.arange(0, BLOCK)
    tl.store(x + i, tl.load(x + i))


def plain(x):
    n = x.numel()
    for BLOCK in (64, 128):
        pass
    plain_kernel[(1,)](x, BLOCK=BLOCK, N=TILE * 2)


@triton.jit
def chunk_kernel(x, K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, BC: tl.constexpr):
    i = tl.arange(0, BK)
    tl.store(x + i, tl.load(x + i))


def chunk(x, cu_seqlens=None):
    B, T, K, V = x.shape
    BK, BV = min(K, 16), min(V, 32)
    BK, BV = max(BK, 16), max(BV, 16)
    if K > 64:
        BC = 32
    else:
        BC = K * 2
    if cu_seqlens is None:
        chunk_kernel[(1,)](x, K=K, V=V, BK=BK, BV=BV, BC=BC)
    else:
        chunk_kernel[(2,)](x, K=K, V=V, BK=BK, BV=BV, BC=BC + 16)


HEAD = 128


@triton.jit
def head_kernel(x, HEAD_DIM: tl.constexpr, BLOCK_D: tl.constexpr, WIDTH: tl.constexpr):
    i = tl.arange(0, BLOCK_D)
    tl.store(x + i, tl.load(x + i))


def head(x, HEAD=None):
    head_kernel[(1,)](x, HEAD_DIM=HEAD_CONST, BLOCK_D=triton.next_power_of_2(HEAD_CONST), WIDTH=HEAD)


HEAD_CONST = 96


def head_module_level(x):
    head_kernel[(2,)](x, HEAD_DIM=HEAD_CONST, BLOCK_D=triton.next_power_of_2(HEAD_CONST), WIDTH=HEAD_CONST + 1)
'''


@pytest.fixture
def kernels(discovered) -> dict:
    return discovered(SOURCE, "ops.py")


def test_a_block_size_follows_the_guessed_argument_it_is_derived_from(kernels):
    resolved = resolve(kernels["attn_kernel"])
    # K is guessed as any integer (16); BK = min(256, max(16, next_power_of_2(16))) = 16, not the block guess 128
    assert resolved.guessed["K"] == 16 and resolved.guessed["BK"] == 16
    assert resolved.guessed["G"] == 1  # HQ // H with both guessed 16
    # (resting on guesses, the derived values stay guesses: reported and never errors)
    assert resolved.provenance["BK"] == "default" and resolved.provenance["G"] == "default"
    config = resolved.sites[0][0]
    assert config.constexprs["BK"] == 16 and config.constexprs["BT"] == 32


def test_branches_that_agree_give_the_value_and_branches_that_differ_keep_the_guess(kernels):
    resolved = resolve(kernels["attn_kernel"])
    assert resolved.guessed["BV"] == 16  # min(128, ...) and min(64, ...) of 16 agree
    assert resolved.guessed["BM"] == 128  # 64 on one branch, 32 on the other: no single value, the block guess


def test_a_value_that_rests_on_no_guess_is_the_launchs(kernels):
    resolved = resolve(kernels["plain_kernel"])
    assert resolved.fixed["N"] == 64 and resolved.provenance["N"] == "call-site"  # TILE * 2, a module constant
    # BLOCK is a loop variable of the launcher: no single value, the block-size guess stands
    assert resolved.guessed == {"BLOCK": 128}


def test_a_spec_wins_over_a_derived_value(kernels):
    spec = {"attn_kernel": {"q": "*fp16", "o": "*fp16", "T": 128, "K": 128, "BK": 64}}
    resolved = resolve(kernels["attn_kernel"], spec=spec)
    assert resolved.fixed["BK"] == 64 and resolved.provenance["BK"] == "spec"


def test_a_value_derived_from_given_values_only_is_no_guess(kernels):
    spec = {"attn_kernel": {"q": "*fp16", "o": "*fp16", "T": 128, "K": 128}}
    resolved = resolve(kernels["attn_kernel"], spec=spec)
    assert resolved.fixed["BK"] == 128 and resolved.provenance["BK"] == "call-site"
    assert "BK" not in resolved.guessed
    # with K = 128 the branches of BV differ (128 and 64): BV keeps its guess
    assert resolved.guessed["BV"] == 16


def test_the_walk_follows_the_launchers_statements_in_order(kernels):
    resolved = resolve(kernels["chunk_kernel"])
    # BK, BV = min(K, 16), min(V, 32) then max(., 16) with K = V = 16 guessed; K > 64 is false: BC = K * 2
    assert {n: resolved.guessed[n] for n in ("K", "V", "BK", "BV", "BC")} == {"K": 16, "V": 16, "BK": 16, "BV": 16,
                                                                            "BC": 32}
    spec = {"chunk_kernel": {"x": "*fp16", "K": 128, "V": 64}}
    resolved = resolve(kernels["chunk_kernel"], spec=spec)
    assert {n: resolved.fixed[n] for n in ("BK", "BV", "BC")} == {"BK": 16, "BV": 32, "BC": 32}
    assert resolved.guessed == {}  # every value rests on the spec's K and V


def test_a_launcher_too_deep_to_walk_leaves_the_name_guesses(discovered):
    depth = 60  # nested ifs whose tests cannot be evaluated: every level walks both branches
    body = "".join("    " * (i + 1) + f"if flag{i}:\n" for i in range(depth))
    source = ("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
              "def deep_kernel(x, K: tl.constexpr, BK: tl.constexpr):\n    tl.store(x, tl.load(x))\n\n\n"
              "def launch(x, K):\n" + body + "    " * (depth + 1) + "BK = triton.next_power_of_2(K)\n"
              "    deep_kernel[(1,)](x, K=K, BK=BK)\n")
    kernel = discovered(source, "deep.py")["deep_kernel"]
    resolved = resolve(kernel)
    # BK is assigned on one branch only of each if: no single value, so the name guess stands (and nothing raises)
    assert resolved.guessed == {"K": 16, "BK": 128}


def test_the_guess_search_first_undoes_the_derived_values(kernels):
    from kernelrules.lint.linter import _name_guesses_first

    resolved = resolve(kernels["attn_kernel"])
    assert resolved.name_guesses == {"BK": 128, "G": 16}  # the guesses by name that BK=16 and G=1 replaced
    asked = []
    propose = _name_guesses_first(lambda message, change: asked.append(dict(change)) or [{"K": 32}],
                                  dict(resolved.name_guesses))
    assert propose("reshape() cannot change total number of elements", {}) == [{"BK": 128, "G": 16}, {"K": 32}]
    assert propose("next error", {"K": 32}) == [{"K": 32}]  # later rounds: the kernel's own proposals only
    assert asked == [{}, {"K": 32}]


def test_a_module_constant_passed_to_the_launch_is_not_shadowed_by_a_guess(kernels):
    # HEAD_DIM=HEAD_CONST passes a module constant (96): its value is the launch's, not the guess 16, and
    # BLOCK_D = next_power_of_2(HEAD_CONST) follows it (sglang's kpool kernel launches this way)
    resolved = resolve(kernels["head_kernel"])
    assert resolved.fixed["HEAD_DIM"] == 96 and resolved.provenance["HEAD_DIM"] == "call-site"
    assert resolved.fixed["BLOCK_D"] == 128 and resolved.provenance["BLOCK_D"] == "call-site"
    # the first launch's WIDTH=HEAD is the launcher's own parameter, which hides the module's HEAD = 128:
    # no value there, so the second launch's HEAD_CONST + 1 is taken
    assert resolved.fixed["WIDTH"] == 97
