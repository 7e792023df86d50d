"""Unit tests of the fixes the hostile-input matrix (tests/cli/test_hostile_matrix.py) found.

Each test names the matrix case that found the bug; the matrix checks the whole command, these
check the function that was fixed.
"""

from __future__ import annotations

import os
import time

import pytest

from kernelrules.errors import KernelrulesError


@pytest.mark.parametrize("make, fragment", [
    (lambda p: os.mkfifo(p), "not a regular file"),  # case yaml/*/fifo: read_text waited for a writer forever
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: os.symlink(p, p), "cannot read file"),
    (lambda p: None, "file not found"),
    (lambda p: p.write_bytes(b"a: \xff\n"), "not UTF-8"),
])
def test_data_files_are_read_without_blocking(tmp_path, make, fragment):
    from kernelrules.inputfile import read_input_text
    from kernelrules.yamlio import load_file

    path = tmp_path / "x.yaml"
    make(path)
    for read in (lambda: read_input_text(path, 1 << 20), lambda: load_file(path)):
        with pytest.raises(KernelrulesError, match=fragment) as info:
            read()
        assert info.value.path == str(path)


def test_an_oversize_file_is_refused_before_it_is_read(tmp_path):
    from kernelrules.inputfile import read_input_text

    path = tmp_path / "big.json"
    path.write_bytes(b"x" * 2000)
    with pytest.raises(KernelrulesError, match="is 2000 bytes; kernelrules reads such files up to 1000 bytes"):
        read_input_text(path, 1000)
    assert read_input_text(path, 2000) == "x" * 2000


@pytest.mark.parametrize("text, fragment", [
    ("a: &a [1, 2]\nb: *a\n", "aliases"),  # case yaml/arch-file/*-alias: libyaml expanded them for the schema
    ("a: 1\n" + "#" * (1 << 20), "up to"),  # case yaml/arch-file/oversize-comment: accepted whole
])
def test_arch_files_have_the_yaml_bounds(tmp_path, text, fragment):
    from kernelrules.arch import load_arch
    from kernelrules.errors import ProfileError

    path = tmp_path / "p.yaml"
    path.write_text(text)
    with pytest.raises(ProfileError, match=fragment):
        load_arch("ada", extra_files=[path])
    os.mkfifo(tmp_path / "fifo.yaml")
    with pytest.raises(ProfileError, match="not a regular file"):
        load_arch("ada", extra_files=[tmp_path / "fifo.yaml"])


def test_an_integer_of_thousands_of_digits_is_a_located_yaml_error(tmp_path):
    """Case yaml/*/huge-int: PyYAML's int() raised ValueError (4300-digit limit): an internal error."""
    from kernelrules.arch import load_arch
    from kernelrules.yamlio import load_text

    with pytest.raises(KernelrulesError, match="cannot convert") as info:
        load_text("a: 1\nb: " + "9" * 5000 + "\n", "big.yaml")
    assert (info.value.path, info.value.line) == ("big.yaml", 2)
    (tmp_path / "p.yaml").write_text("family: x\nn: " + "9" * 5000 + "\n")
    with pytest.raises(KernelrulesError, match="p.yaml:2:4: invalid YAML: cannot convert"):
        load_arch("ada", extra_files=[tmp_path / "p.yaml"])


def test_a_yaml_file_just_under_the_size_bound_loads_in_seconds():
    """Case yaml/*/long-list: a 0.9 MB flow list took 13-19 s with the pure-Python parser (bound: 10 s)."""
    from kernelrules.yamlio import load_text

    import yaml

    from kernelrules import yamlio

    # the fix is libyaml's parser where PyYAML has it, read in one pass (1.0 s here against 2.8 s when
    # composing nodes first); the time bound only guards against a hang (the pure-Python parser's
    # 13-19 s on an idle machine), wide enough for a loaded CI worker
    assert yamlio._LOADER is getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    start = time.monotonic()
    doc = load_text("items: [" + ", ".join("1" for _ in range(300000)) + "]\n", "long.yaml")
    assert len(doc.data["items"]) == 300000 and doc.where(("items", 299999)) == (1, 8 + 3 * 299999 + 1)
    assert time.monotonic() - start < 30


SAFE_YAML = [
    "a: 1\nb: [1, 2.5, x, null, true, 2020-01-01, '3', 012, 0x1F, 1_000, 1:30, .inf, ~, yes]\nc: {d: e}\n",
    "- 1\n- !!str 2\n- !!int '7'\n- !!binary aGVsbG8=\n- 1234567890123456789012\n- \"0\"\n- 0\n",
    "k:\n  - {a: [1, {b: c}]}\n  - []\n  - {}\n", "null", "plain text", "? x\n: y\n",
]


@pytest.mark.parametrize("text", SAFE_YAML)
def test_the_one_pass_loader_reads_what_pyyaml_safe_load_reads(text):
    """Case yaml/*/long-list: load_text builds data from parse events in one pass (3x faster); it must
    construct every scalar and collection as yaml.safe_load does."""
    import yaml

    from kernelrules.yamlio import load_text

    assert load_text(text, "s.yaml").data == yaml.safe_load(text)


def test_positions_of_the_one_pass_loader():
    from kernelrules.yamlio import load_text

    doc = load_text("a: 1\nb:\n  - x\n  - {c: 2}\n", "s.yaml")
    assert doc.where(("a",)) == (1, 1) and doc.where(("a", "<value>")) == (1, 4)
    assert doc.where(("b", 1, "c")) == (4, 6) and doc.where(("b", 1, "c", "<value>")) == (4, 9)
    assert doc.where(("b", 0)) == (3, 5) and doc.where(("b", 1, "missing")) == (4, 5)


@pytest.mark.parametrize("text, fragment, line", [
    ("a: 1\n<<: {b: 2}\n", "merge keys (<<) and aliases are not accepted", 2),
    ("a: 1\na: 2\n", "duplicate key 'a'", 2),
    ("? [1]\n: 2\n", "a mapping key must be a scalar", 1),
    ("--- a\n--- b\n", "but found another document", 2),
    ("a: !!python/object:os.system x\n", "could not determine a constructor", 1),
])
def test_the_one_pass_loader_refuses_with_a_line(text, fragment, line):
    from kernelrules.yamlio import load_text

    with pytest.raises(KernelrulesError, match=fragment.replace("(", r"\(").replace(")", r"\)")) as info:
        load_text(text, "s.yaml")
    assert (info.value.path, info.value.line) == ("s.yaml", line)


@pytest.mark.parametrize("target", ["no/such/dir/out.yaml", "d"])
def test_an_output_that_cannot_be_written_is_one_error(tmp_path, target):
    """Cases python/spec/output-in-missing-dir and output-is-a-directory: an internal error (OSError)."""
    from kernelrules.atomicio import write_output

    (tmp_path / "d").mkdir()
    with pytest.raises(KernelrulesError, match="cannot write the file") as info:
        write_output(tmp_path / target, "x\n")
    assert info.value.path == str(tmp_path / target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d"] and list((tmp_path / "d").iterdir()) == []


def test_spec_writes_the_skeleton_when_only_the_autotune_list_cannot_be_evaluated(run_cli, tmp_path):
    """Case python/spec/recursion: spec refused the whole file, advising "--import or a spec file"
    (spec has no --import, and it writes the spec file). The list says nothing about the signature."""
    (tmp_path / "k.py").write_text(
        "import triton\nimport triton.language as tl\n\n\ndef make(n):\n    return make(n + 1)\n\n\n"
        "@triton.autotune(configs=make(1), key=['n'])\n@triton.jit\n"
        "def k(x_ptr, n, BLOCK: tl.constexpr):\n    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)\n")
    done = run_cli("spec", "k.py", "-o", "-")
    assert done.returncode == 0 and "x_ptr:" in done.stdout, done.stderr
    assert done.stderr.startswith("kernelrules: warning: k.py:") and "recursive call of make()" in done.stderr
    (tmp_path / "bad.py").write_text("import triton\ndef k(:\n")
    done = run_cli("spec", "bad.py", "-o", "-")
    assert done.returncode == 2 and "bad.py:2: syntax error" in done.stderr


@pytest.mark.parametrize("text", ["", "a", "a\n", "a\r\nb\rc\nd", "x\fy\v\n\n\u2028z", "\n\n", "a\r", "\r\n"])
def test_source_lines_split_as_ast_does(text):
    import ast

    from kernelrules.discover.pyast import _source_lines

    assert _source_lines(text) == ast._splitlines_no_ff(text)


def test_source_lines_of_a_huge_line_are_fast():
    """Case python/lint/huge-line: a 900 kB string constant made lint take 14 s (ast._splitlines_no_ff)."""
    from kernelrules.discover.pyast import _source_lines

    start = time.monotonic()
    assert len(_source_lines("S = '" + "x" * 900000 + "'\nT = 1\n")) == 2
    assert time.monotonic() - start < 1


def test_a_file_too_deep_for_pythons_parser_is_a_problem_not_a_crash(tmp_path):
    """Case python/lint/deep-unary: ast.parse raised MemoryError (parser stack overflow): an internal error."""
    from kernelrules.discover.kernels import Problem, read_module

    path = tmp_path / "bad.py"
    path.write_text("import triton\nx = " + "-" * 200000 + "1\n")
    problem = read_module(path)
    assert isinstance(problem, Problem) and problem.kind == "syntax-error" and "nested too deeply" in problem.message


@pytest.mark.parametrize("text, fragment", [
    ("[" * 100000 + "]" * 100000, "nested too deeply"),  # case json/pin-show/deep-nesting: RecursionError
    ('{"n": ' + "9" * 5000 + "}", "more than 4300 digits"),  # case json/*/huge-int: ValueError
    ('{"ms": NaN}', "NaN is not JSON"),  # case json/pin-show/ms-nan: a NaN timing was shown as "nan ms"
    ('{"ms": -Infinity}', "-Infinity is not JSON"),
    ('{"n": 1e999}', "out of range"),
])
def test_json_inputs_are_strict_json(tmp_path, text, fragment):
    from kernelrules.inputfile import loads_json
    from kernelrules.pinned import load_table
    from kernelrules.specify.trace import load_trace

    with pytest.raises(KernelrulesError, match=fragment):
        loads_json(text, shown="x.json")
    (tmp_path / "p.json").write_text(text)
    with pytest.raises(KernelrulesError, match=fragment):
        load_table(tmp_path / "p.json")
    (tmp_path / "t.jsonl").write_text('{"format": "kernelrules-trace", "schema_version": 1}\n' + text + "\n")
    with pytest.raises(KernelrulesError, match=f"t.jsonl:2: invalid JSON: .*{fragment}"):
        load_trace(tmp_path / "t.jsonl")


def test_json_inputs_are_read_without_blocking(tmp_path):
    """Cases json/pin-show/fifo and json/*/oversize: a FIFO hung pin show; an 80 MB table was read whole."""
    from kernelrules.pinned import MAX_TABLE_BYTES, load_table
    from kernelrules.specify.trace import load_trace

    os.mkfifo(tmp_path / "fifo.json")
    for load in (load_table, load_trace):
        with pytest.raises(KernelrulesError, match="not a regular file"):
            load(tmp_path / "fifo.json")
    (tmp_path / "big.json").write_bytes(b" " * (MAX_TABLE_BYTES + 1))
    with pytest.raises(KernelrulesError, match="up to"):
        load_table(tmp_path / "big.json")


@pytest.mark.parametrize("content, fragment", [
    (b"", r"not an SQLite database \(the file is empty\)"),  # case json/report/empty-file: SQLite wrote tables into it
    (b"not a database\n", "not an SQLite database"),  # case json/report/text-file: DatabaseError, internal error
])
def test_report_refuses_what_is_not_an_sqlite_file(tmp_path, content, fragment):
    from kernelrules.tune.report import open_study

    (tmp_path / "study.db").write_bytes(content)
    with pytest.raises(KernelrulesError, match=fragment):
        open_study(str(tmp_path / "study.db"), None)
    assert (tmp_path / "study.db").read_bytes() == content and len(list(tmp_path.iterdir())) == 1


def test_a_damaged_sqlite_file_is_a_storage_error(tmp_path):
    """Case json/report/truncated-sqlite: a valid header and nothing else was an internal DatabaseError."""
    from kernelrules.tune.study import open_storage

    (tmp_path / "s.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 84)
    with pytest.raises(KernelrulesError, match="cannot open the study storage"):
        open_storage(f"sqlite:///{tmp_path / 's.db'}")


def test_pin_merge_with_a_symlink_loop_is_one_error(run_cli, tmp_path):
    """Case json/pin-merge/symlink-loop: Path.resolve() raised RuntimeError (an internal error)."""
    os.symlink("loop.json", tmp_path / "loop.json")
    done = run_cli("pin", "merge", "out.json", "loop.json")
    assert done.returncode == 2 and done.stderr.startswith("kernelrules: error: loop.json: cannot read file")
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize("arch", ["", ",,,"])
def test_prune_with_no_architecture_is_refused(run_cli, tmp_path, arch):
    """Case cli/prune/arch-empty: `prune --arch ""` judged nothing and exited 0."""
    from pathlib import Path

    examples = Path(__file__).resolve().parents[2] / "examples"
    (tmp_path / "matmul.py").write_text((examples / "matmul.py").read_text())
    (tmp_path / "s.yaml").write_text((examples / "matmul.space.yaml").read_text())
    done = run_cli("prune", "s.yaml", "--arch", arch)
    assert done.returncode == 2 and "no target architecture" in done.stderr


def test_a_trace_whose_program_cannot_start_leaves_no_file(tmp_path):
    """Case cli/trace/missing-program: the header was written and left behind as if it were a trace."""
    from kernelrules.specify.trace import TraceError, run_trace

    with pytest.raises(TraceError, match="cannot run"):
        run_trace([str(tmp_path / "no-such-program")], tmp_path / "t.jsonl")
    assert list(tmp_path.iterdir()) == []


def test_check_config_refuses_an_unknown_dtype(run_cli):
    """Case cli/check-config/dtype-unknown: `--dtype fp99` was judged as if no dtype had been given."""
    done = run_cli("check-config", "--arch", "hopper", "--dtype", "fp99", "BLOCK_M=64")
    assert done.returncode == 2 and "unknown dtype 'fp99'" in done.stderr
    assert run_cli("check-config", "--arch", "hopper", "--dtype", "fp8e4nv", "--dtype", "fp32",
                   "BLOCK_M=64").returncode in (0, 1)


@pytest.mark.parametrize("content, fragment", [
    ('[tool.kernelrules]\njobs = ' + "9" * 5000 + "\n", "invalid TOML"),  # tomllib's int(): ValueError
    ("[tool.kernelrules]\nsrc = " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),  # RecursionError
    (b'[tool.kernelrules]\narch = "\xff"\n', "not UTF-8"),  # UnicodeDecodeError
])
def test_a_hostile_pyproject_is_one_error(tmp_path, content, fragment):
    """Cases toml/huge-int, toml/deep-nesting, toml/invalid-utf8: each was an internal error."""
    from kernelrules.lint.settings import load_settings

    path = tmp_path / "pyproject.toml"
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    with pytest.raises(KernelrulesError, match=fragment) as info:
        load_settings([tmp_path / "k.py"])
    assert info.value.path == str(path)


def test_a_nul_byte_in_an_arch_file_is_a_located_error(tmp_path):
    """Case yaml/arch-file/nul-byte: the bounds check let libyaml's ReaderError escape (an internal error)."""
    from kernelrules.arch import load_arch
    from kernelrules.errors import ProfileError

    (tmp_path / "p.yaml").write_bytes(b"family: x\nbad: a\x00b\n")
    with pytest.raises(ProfileError, match="p.yaml.*invalid YAML"):
        load_arch("ada", extra_files=[tmp_path / "p.yaml"])
