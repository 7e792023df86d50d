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

from hostile.cases_yaml import alias_bomb  # 9**9 scalars if expanded (once grew past 1.7 GB)




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

    repo = Path(__file__).resolve().parents[2]
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


def test_unknown_rule_selectors_are_refused(run_cli, tmp_path):
    """ruff refuses unknown codes; `--select NOPE999` once reported nothing with exit 0."""
    (tmp_path / "k.py").write_text("x = 1\n")
    done = run_cli("lint", "k.py", "--arch", "hopper", "--select", "NOPE999")
    assert done.returncode == 2 and "unknown rule selector 'NOPE999' in select" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert run_cli("lint", "k.py", "--arch", "hopper", "--select", "MEM,LNT", "--ignore", "REG00").returncode == 0
    (tmp_path / "pyproject.toml").write_text('[tool.kernelrules]\nper-file-ignores = {"*.py" = ["XYZ"]}\n')
    done = run_cli("lint", "k.py", "--arch", "hopper")
    assert done.returncode == 2 and "unknown rule selector 'XYZ'" in done.stderr and "pyproject.toml" in done.stderr


def test_sarif_uris_are_percent_encoded():
    from kernelrules.lint.reporters import artifact_uri

    assert artifact_uri("x #1.py") == "x%20%231.py" and artifact_uri("c%41.py") == "c%2541.py"
    assert artifact_uri("dir/ok.py") == "dir/ok.py" and artifact_uri("/a b/k.py") == "file:///a%20b/k.py"


def test_the_same_file_given_twice_is_linted_once(run_cli, tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "k.py").write_text("x = 1\n")
    from kernelrules.discover.kernels import iter_python_files

    assert len(list(iter_python_files([tmp_path / "d", tmp_path / "d" / "k.py", tmp_path / "d" / ".." / "d" / "k.py"]))) == 1


def _worker_pids(scratch_root):
    """Processes whose working directory is a compile worker's scratch directory under ``scratch_root``."""
    import os

    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
            except OSError:
                continue
            if cwd.startswith(str(scratch_root)) and "kernelrules-worker-" in cwd:
                found.append(int(entry))
    return found


def test_a_killed_lint_leaves_no_worker_and_no_scratch(tmp_path):
    """kill -9 of `kernelrules lint` while its workers compile: within a few seconds no worker
    survives and no scratch directory is left (workers watch their parent)."""
    import os
    import signal
    import subprocess
    import sys

    from conftest import kernelrules_command

    scratch_root = tmp_path / "tmp"
    scratch_root.mkdir()
    (tmp_path / "k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': b}, num_warps=w) for b in (64, 128, 256, 512)"
        " for w in (1, 2, 4, 8)], key=['n'])\n@triton.jit\n"
        "def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):\n"
        "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n"
        "    tl.store(y_ptr + offs, tl.exp(tl.load(x_ptr + offs, mask=offs < n)), mask=offs < n)\n")
    env = dict(os.environ, TMPDIR=str(scratch_root))
    proc = subprocess.Popen([*kernelrules_command(), "lint", "k.py", "--arch", "hopper,ada", "--cache-dir", "c"],
                            cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _worker_pids(scratch_root) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        assert _worker_pids(scratch_root), "no compile worker started"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        deadline = time.monotonic() + 10
        while (_worker_pids(scratch_root) or list(scratch_root.glob("kernelrules-worker-*"))) \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _worker_pids(scratch_root) == []
        assert list(scratch_root.glob("kernelrules-worker-*")) == []
    finally:
        if proc.poll() is None:
            proc.kill()
    assert sys.platform.startswith("linux")


def test_true_is_not_a_block_size(run_cli):
    done = run_cli("check-config", "--arch", "hopper", "BLOCK_M=true", "num_warps=4")
    assert done.returncode == 2 and "BLOCK_M is a block size: give an integer, got True" in done.stderr
    assert run_cli("check-config", "--arch", "hopper", "HAS_BIAS=true", "BLOCK_M=64").returncode in (0, 1)


def _space(tmp_path, constraint):
    import shutil
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    shutil.copy(examples / "matmul.py", tmp_path / "matmul.py")
    text = (examples / "matmul.space.yaml").read_text().replace("\nspace:", f"\nconstraints: [{constraint!r}]\nspace:")
    (tmp_path / "s.yaml").write_text(text)
    return "s.yaml"


def test_constraints_that_exclude_every_config_are_an_error(run_cli, tmp_path):
    done = run_cli("prune", _space(tmp_path, "config.BLOCK_M > 100000"), "--arch", "hopper")
    assert done.returncode == 2 and "the constraints exclude all 1875 configs" in done.stderr


def test_a_huge_expression_is_not_echoed_whole(run_cli, tmp_path):
    from kernelrules.errors import MAX_MESSAGE, KernelrulesError

    huge = " + ".join(["config.BLOCK_M"] * 20000) + " > 0 and"  # 340,000 characters, a syntax error at the end
    start = time.monotonic()
    done = run_cli("prune", _space(tmp_path, huge), "--arch", "hopper")
    assert done.returncode == 2 and len(done.stderr) < MAX_MESSAGE + 200 and "characters left out" in done.stderr
    assert time.monotonic() - start < 30
    assert len(str(KernelrulesError("x" * 10**6, hint="y" * 10**6))) < 2 * MAX_MESSAGE + 200


def test_credentials_are_masked_in_every_error_line():
    from kernelrules.errors import KernelrulesError, mask_credentials

    text = "cannot open postgresql+psycopg://tuner:S3CRET@db:5432/x and redis://:pw@h/0"
    assert mask_credentials(text) == "cannot open postgresql+psycopg://tuner:***@db:5432/x and redis://:***@h/0"
    assert "S3CRET" not in str(KernelrulesError(text, hint="retry postgresql://u:S3CRET@h/db"))
    assert mask_credentials("sqlite:///x.db and http://host:8080/path") == "sqlite:///x.db and http://host:8080/path"


LATIN1_KERNEL = (b"# -*- coding: latin-1 -*-\n# caf\xe9\nimport triton\nimport triton.language as tl\n\n\n"
                 b"@triton.jit\ndef k(x_ptr, BLOCK: tl.constexpr = 64):\n    # r\xe9sum\xe9\n"
                 b"    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n")


def test_one_bad_file_is_one_finding_and_the_rest_is_judged(run_cli, tmp_path):
    """A Latin-1 file with its PEP 263 cookie is read as Python reads it; undecodable bytes, a FIFO named
    *.py and a symlink loop are each a finding for that file (LNT004), and the good files are still judged."""
    import os

    (tmp_path / "latin.py").write_bytes(LATIN1_KERNEL)
    (tmp_path / "crlf.py").write_bytes(LATIN1_KERNEL.split(b"\n", 1)[1].replace(b"\xe9", b"e").replace(b"\n", b"\r\n"))
    (tmp_path / "bad.py").write_bytes(b"x = '\xff\xfe'\n")
    os.mkfifo(tmp_path / "fifo.py")
    os.symlink(tmp_path / "loop_a.py", tmp_path / "loop_b.py")
    os.symlink(tmp_path / "loop_b.py", tmp_path / "loop_a.py")
    start = time.monotonic()
    done = run_cli("lint", ".", "--arch", "hopper", "--stage", "config", "--format", "json", "--cache-dir", "c")
    assert time.monotonic() - start < 60 and "Traceback" not in done.stderr and done.returncode == 1, done.stderr
    import json

    report = json.loads(done.stdout)
    assert sorted(k["path"] for k in report["kernels"] if k["status"] == "analyzed") == ["crlf.py", "latin.py"]
    problems = {f["path"]: f["message"] for f in report["findings"] if f["code"] == "LNT004"}
    assert set(problems) == {"bad.py", "fifo.py", "loop_a.py", "loop_b.py"}, problems
    assert "not a regular file" in problems["fifo.py"] and "cannot decode" in problems["bad.py"]


def test_the_config_stage_never_passes_silently_when_its_probes_fail(run_cli, tmp_path):
    """Issue 18 group 2: probe compiles that time out leave no resource model; the configs are still
    judged by the rules that need none, and an LNT005 warning says what was not checked."""
    import json
    import shutil
    from pathlib import Path

    shutil.copy(Path(__file__).resolve().parents[2] / "examples" / "matmul.py", tmp_path / "matmul.py")
    args = ("lint", "matmul.py", "--arch", "hopper", "--stage", "config", "--cache-dir", "c", "--format", "json")
    report = json.loads(run_cli(*args, "--timeout", "0.001").stdout)
    (warning,) = [f for f in report["findings"] if f["code"] == "LNT005"]
    assert warning["severity"] == "warning" and "were not checked" in warning["message"]
    assert warning["message"].startswith("sm_90: configs judged without resource predictions (no probe compiled")
    assert run_cli(*args[:-2], "--timeout", "0.001", "--fail-on", "warning", "-q").returncode == 1
    normal = json.loads(run_cli(*args).stdout)  # probes that compile: a model, no LNT005
    assert not [f for f in normal["findings"] if f["code"] == "LNT005"]


MARKED = '''\
import triton
import triton.language as tl


@triton.constexpr_function
def width(n):
    __import__("pathlib").Path("{mark}_helper").write_text("ran")
    return n


@triton.jit
def plain(x_ptr, n, B: tl.constexpr = 64):
    offs = tl.arange(0, B)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def by_default(x_ptr, n, B: tl.constexpr = 64 + 0 * __import__("pathlib").Path("{mark}_default").write_text("x")):
    offs = tl.arange(0, B)
    tl.store(x_ptr + offs, 1.0, mask=offs < n)


@triton.jit
def by_helper(x_ptr, n, B: tl.constexpr = 64):
    offs = tl.arange(0, width(B))
    tl.store(x_ptr + offs, 1.0, mask=offs < n)
'''


@pytest.mark.parametrize("stage", ["config", "compiled"])
def test_lint_runs_no_user_code_without_import(run_cli, tmp_path, stage):
    """Issue 18 group 1: a planted marker in a jit default and in a constexpr_function never runs
    without --import (in lint's process or its compile workers); the kernels that need them are
    needs-spec saying why, the plain kernel of the same file is analyzed."""
    import json

    mark = tmp_path / "MARK"
    (tmp_path / "k.py").write_text(MARKED.format(mark=mark))
    done = run_cli("lint", "k.py", "--arch", "hopper", "--stage", stage, "--format", "json", "--cache-dir", "c")
    assert "Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr
    assert list(tmp_path.glob("MARK*")) == []
    kernels = {k["name"]: k for k in json.loads(done.stdout)["kernels"]}
    assert kernels["plain"]["status"] == "analyzed"
    if stage == "compiled":
        assert kernels["by_default"]["status"] == "needs-spec"
        assert "the default of `B` in `by_default`" in kernels["by_default"]["message"]
        assert "--import" in kernels["by_default"]["message"]
        assert "`width` is a @triton.constexpr_function" in kernels["by_helper"]["message"]
        allowed = run_cli("lint", "k.py", "--arch", "hopper", "--format", "json", "--cache-dir", "c", "--import")
        assert {k["name"]: k["status"] for k in json.loads(allowed.stdout)["kernels"]}["by_helper"] == "analyzed"
        assert (tmp_path / "MARK_default").exists() and (tmp_path / "MARK_helper").exists()  # with consent, they ran


def test_huge_values_are_refused_before_they_are_computed(run_cli, tmp_path):
    """`"x" * 3_000_000_000` (3 GB) and chained powers (minutes) in module constants and autotune lists:
    refused by the bounds before computing, in the discovery interpreter and in the rebuilt module."""
    import json

    from kernelrules.bounds import MAX_INT_BITS, UNKNOWN, TooLarge, bounded_value

    known = {}
    assert bounded_value(ast_expr("2 ** 12 * 3"), known) == 12288
    assert bounded_value(ast_expr("tl.float16"), known) is UNKNOWN
    for text in ('"x" * 3_000_000_000', "10 ** 64 ** 2", "1 << 100000", "[0] * 10 ** 6", f"(2 ** {MAX_INT_BITS}) * 2 ** 64"):
        with pytest.raises(TooLarge):
            bounded_value(ast_expr(text), known)
    (tmp_path / "k.py").write_text(
        "import triton\nimport triton.language as tl\nA = 10**64\nB = A**64\nC = B**64\nS = 'x' * 3_000_000_000\n\n\n"
        "@triton.autotune(configs=[triton.Config({'BLOCK': 64 + 0 * C})], key=['n'])\n@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, 1.0, mask=offs < n)\n\n\n@triton.jit\n"
        "def plain(x_ptr, n, BLOCK: tl.constexpr = 64):\n    offs = tl.arange(0, BLOCK)\n"
        "    tl.store(x_ptr + offs, 1.0, mask=offs < n)\n")
    start = time.monotonic()
    done = run_cli("lint", "k.py", "--arch", "hopper", "--format", "json", "--cache-dir", "c")
    assert time.monotonic() - start < 60 and done.returncode in (0, 1), done.stderr
    report = json.loads(done.stdout)
    assert any(f["code"] == "LNT002" and "larger than" in f["message"] for f in report["findings"])
    assert {k["name"]: k["status"] for k in report["kernels"]}["plain"] == "analyzed"


def ast_expr(text):
    import ast

    return ast.parse(text, mode="eval").body


def test_outputs_are_written_whole_or_not_at_all(tmp_path, monkeypatch):
    """report, spec and space outputs go through write_text_atomic: a failed write leaves the old file
    and no temporary file behind."""
    import os

    from kernelrules.atomicio import write_text_atomic

    target = tmp_path / "out.yaml"
    write_text_atomic(target, "old\n")

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_text_atomic(target, "new\n" * 1000)
    assert target.read_text() == "old\n" and [p.name for p in tmp_path.iterdir()] == ["out.yaml"]


def test_an_integer_too_large_for_triton_is_a_space_file_error(run_cli, tmp_path):
    from pathlib import Path
    import shutil

    examples = Path(__file__).resolve().parents[2] / "examples"
    shutil.copy(examples / "matmul.py", tmp_path / "matmul.py")
    (tmp_path / "s.yaml").write_text((examples / "matmul.space.yaml").read_text().replace("  M: 4096", f"  M: {2**70}"))
    done = run_cli("prune", "s.yaml", "--arch", "hopper")
    assert done.returncode == 2 and "s.yaml: argument 'M'" in done.stderr and "64-bit" in done.stderr
    assert "internal error" not in done.stderr
