"""The problem section's expressions: a whitelist interpreter over ast, never eval."""

from __future__ import annotations

import pytest

from kernelrules.expr import safeexpr
from kernelrules.expr.safeexpr import ExpressionError


@pytest.mark.parametrize("source, env, expected", [
    ("cdiv(M, BLOCK_M) * cdiv(N, BLOCK_N)", {"M": 100, "N": 64, "BLOCK_M": 32, "BLOCK_N": 64}, 4),
    ("2 * M * N * K", {"M": 2, "N": 3, "K": 4}, 48),
    ("max(M, 16) // 2 + (1 if M > 8 else 0)", {"M": 10}, 9),
    ("next_power_of_2(N) - N % 7", {"N": 33}, 64 - 5),
    ("x.shape[0] - 1", {"x": type("T", (), {"shape": (5, 6)})()}, 4),
    ("-M ** 2", {"M": 3}, -9),
])
def test_sizes_and_grids_evaluate(source, env, expected):
    assert safeexpr.evaluate(source, env, torch_allowed=False) == expected


def test_torch_reference_evaluates():
    torch = pytest.importorskip("torch")
    a = torch.randn(4, 3, dtype=torch.float64)
    b = torch.randn(3, 5, dtype=torch.float64)
    assert torch.equal(safeexpr.evaluate("a @ b", {"a": a, "b": b}), a @ b)
    got = safeexpr.evaluate("torch.softmax(a.float(), dim=-1).double().T", {"a": a})
    assert torch.allclose(got, torch.softmax(a.float(), dim=-1).double().T)
    got = safeexpr.evaluate("F.relu(a) + torch.nn.functional.gelu(a).to(torch.float64)", {"a": a})
    assert torch.allclose(got, torch.relu(a) + torch.nn.functional.gelu(a))
    assert safeexpr.evaluate("a.stride(0)", {"a": a}) == 3
    assert torch.equal(safeexpr.evaluate("a[:, :2]", {"a": a}), a[:, :2])


@pytest.mark.parametrize("source, refused", [
    ("__import__('os').system('true')", "__import__"),
    ("a.__class__", "__class__"),
    ("open('/etc/passwd')", "open()"),
    ("torch.load('x.pt')", "torch.load()"),
    ("torch.cuda.synchronize()", ".synchronize()"),
    ("torch.cuda.sum()", "torch attribute 'cuda'"),
    ("torch.nn.Linear(3, 3)", "torch.nn.Linear()"),
    ("a.numpy()", ".numpy()"),
    ("a.data_ptr", ".data_ptr"),
    ("[x for x in a]", "ListComp"),
    ("lambda: 1", "Lambda"),
    ("(a := 1)", "NamedExpr"),
    ("eval('1')", "eval()"),
    ("getattr(a, 'T')", "getattr()"),
    ("f(*args)", "the function f()"),
    ("torch.matmul(**kw)", "**kwargs"),
    ("a.__dict__['x']", "__dict__"),
    ("os.system", "the attribute .system"),
    ("b'bytes'", "the constant"),
])
def test_anything_outside_the_whitelist_is_refused_before_running(source, refused):
    with pytest.raises(ExpressionError) as info:
        safeexpr.parse(source)
    assert refused in str(info.value)
    assert "not allowed" in str(info.value)


def test_torch_is_refused_where_only_sizes_belong():
    with pytest.raises(ExpressionError, match="torch"):
        safeexpr.parse("torch.matmul(a, b)", torch_allowed=False)
    with pytest.raises(ExpressionError, match="torch"):
        safeexpr.parse("M * torch.float16", torch_allowed=False)


def test_unknown_names_and_huge_powers_are_errors():
    with pytest.raises(ExpressionError, match="Q not defined"):
        safeexpr.evaluate("M + Q", {"M": 1})
    with pytest.raises(ExpressionError, match="too large"):
        safeexpr.evaluate("2 ** 100000", {})
    with pytest.raises(ExpressionError, match="cannot parse"):
        safeexpr.parse("M +")
    assert safeexpr.parse("a @ b + c.T").names == {"a", "b", "c"}
