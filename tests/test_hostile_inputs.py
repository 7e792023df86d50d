"""Tiny hostile inputs are refused quickly with a one-line error (issue 18, group 3, first slice).

A 324-byte YAML alias bomb, 900-deep nesting, an oversize file, deep JSON in a trace and
non-finite time limits each end in exit code 2 with one ``kernelrules: error:`` line that
names the file (and line where there is one), within seconds, never a traceback.
"""

from __future__ import annotations

import time

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.yamlio import MAX_BYTES, MAX_DEPTH, load_text


def alias_bomb() -> str:
    """Nine levels of nine-fold aliases: 9**9 scalars if expanded (once grew past 1.7 GB)."""
    lines = ['a: &a ["x","x","x","x","x","x","x","x","x"]']
    for i in range(8):
        prev, name = chr(97 + i), chr(98 + i)
        lines.append(f"{name}: &{name} [" + ",".join([f"*{prev}"] * 9) + "]")
    return "\n".join(lines) + "\n"


def test_yaml_aliases_are_refused_with_their_line():
    with pytest.raises(KernelrulesError) as info:
        load_text(alias_bomb(), "bomb.yaml")
    assert "alias" in info.value.message and info.value.line == 2


def test_yaml_nesting_is_capped():
    with pytest.raises(KernelrulesError) as info:
        load_text("a: " + "[" * 900 + "]" * 900 + "\n", "deep.yaml")
    assert f"deeper than {MAX_DEPTH}" in info.value.message
    assert load_text("a: " + "[" * 10 + "]" * 10 + "\n", "ok.yaml").data == {"a": [[[[[[[[[[]]]]]]]]]]}


def test_yaml_size_is_capped():
    with pytest.raises(KernelrulesError, match="up to"):
        load_text("a: 1\n" + "#" * MAX_BYTES, "big.yaml")


@pytest.mark.parametrize("name, text", [
    ("bomb", alias_bomb()),
    ("deep", "kernel: k.py:k\nsignature: " + "[" * 900 + "]" * 900 + "\n"),
])
def test_space_file_bombs_exit_2_fast(run_cli, tmp_path, name, text):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    start = time.monotonic()
    result = run_cli("prune", str(path), "--arch", "hopper")
    assert time.monotonic() - start < 30
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("kernelrules: error:") and f"{name}.yaml:" in lines[0]
    assert "Traceback" not in result.stderr


def test_deep_json_in_a_trace_is_one_line(run_cli, tmp_path):
    trace = tmp_path / "t.jsonl"
    trace.write_text("[" * 100000 + "]" * 100000 + "\n")
    result = run_cli("lint", str(tmp_path), "--arch", "hopper", "--trace", str(trace))
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "t.jsonl:1:" in result.stderr and "nested too deeply" in result.stderr


@pytest.mark.parametrize("args", [
    ["prune", "SPACE", "--arch", "hopper", "--timeout", "nan"],
    ["prune", "SPACE", "--arch", "hopper", "--timeout", "-1"],
    ["lint", "KERNEL", "--arch", "hopper", "--timeout", "inf"],
])
def test_time_limits_must_be_finite_and_positive(run_cli, args):
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    args = [str(repo / "examples" / "matmul.space.yaml") if a == "SPACE" else
            str(repo / "examples" / "matmul.py") if a == "KERNEL" else a for a in args]
    result = run_cli(*args)
    assert result.returncode == 2
    assert "positive, finite" in result.stderr and "Traceback" not in result.stderr


def test_compile_timeout_nan_in_pyproject_is_refused(run_cli, tmp_path):
    (tmp_path / "pyproject.toml").write_text("[tool.kernelrules]\ncompile-timeout = nan\n")
    (tmp_path / "k.py").write_text("x = 1\n")
    result = run_cli("lint", str(tmp_path / "k.py"), "--arch", "hopper", cwd=tmp_path)
    assert result.returncode == 2
    assert "compile-timeout" in result.stderr and "pyproject.toml" in result.stderr
