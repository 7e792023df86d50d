"""[tool.kernelrules] settings: discovery, parsing, validation errors, merging with the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.lint.settings import Settings, find_pyproject, key_line, load_settings

FULL = '''\
[project]
name = "demo"

[tool.kernelrules]
arch = "ada, Hopper"
select = ["MEM", "reg001"]
ignore = ["MEM003"]
extend-select = ["LNT"]
fail-on = "warning"
compile-timeout = 12
cache-dir = ".kr-cache"
stage = "compiled"
jobs = 4

[tool.kernelrules.per-file-ignores]
"tests/*.py" = ["MEM"]
"legacy.py" = "REG001, LNT001"
'''


def write(directory: Path, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "pyproject.toml"
    path.write_text(text)
    return path


def test_defaults_without_a_pyproject(tmp_path):
    settings = load_settings([tmp_path])
    assert settings == Settings()
    assert settings.fail_on == "error" and settings.stage == "compiled" and settings.compile_timeout == 30.0


def test_full_table(tmp_path):
    pyproject = write(tmp_path, FULL)
    s = load_settings([tmp_path])
    assert s.source == pyproject
    assert s.arch == ["ada", "hopper"]
    assert s.select == ["MEM", "REG001"] and s.ignore == ["MEM003"] and s.extend_select == ["LNT"]
    assert s.fail_on == "warning" and s.stage == "compiled" and s.jobs == 4
    assert s.compile_timeout == 12.0
    assert s.cache_dir == str((tmp_path / ".kr-cache").resolve())
    assert s.per_file_ignores == {"tests/*.py": ["MEM"], "legacy.py": ["REG001", "LNT001"]}


def test_nearest_pyproject_with_the_table_wins(tmp_path):
    write(tmp_path, FULL)
    write(tmp_path / "pkg", '[project]\nname = "inner"\n')  # no [tool.kernelrules]: skipped
    inner = write(tmp_path / "pkg" / "sub", '[tool.kernelrules]\njobs = 2\n')
    kernel = tmp_path / "pkg" / "sub" / "k.py"
    kernel.write_text("")
    assert find_pyproject(kernel) == inner
    assert load_settings([kernel]).jobs == 2
    assert find_pyproject(tmp_path / "pkg") == tmp_path / "pyproject.toml"


def test_select_ignore_and_per_file_ignores(tmp_path):
    write(tmp_path, FULL)
    s = load_settings([tmp_path]).rule_selection()
    assert s.enabled("MEM001") and s.enabled("REG001") and s.enabled("LNT002")
    assert not s.enabled("MEM003")  # ignored
    assert not s.enabled("OCC001")  # not selected
    assert not s.enabled("MEM001", path=str(tmp_path / "tests" / "test_k.py"))
    assert not s.enabled("MEM001", path="tests/test_k.py")
    assert not s.enabled("REG001", path=str(tmp_path / "legacy.py"))
    assert s.enabled("REG001", path=str(tmp_path / "kernels" / "k.py"))
    assert Settings().rule_selection().enabled("ANY001")
    assert not Settings(ignore=["ALL"]).rule_selection().enabled("ANY001")


@pytest.mark.parametrize(("line", "message"), [
    ('fail-on = "fatal"', "fail-on must be one of error, warning, info"),
    ('stage = "runtime"', "stage must be one of config, compiled"),
    ("jobs = 0", "jobs must be a positive integer"),
    ("jobs = true", "jobs must be a positive integer"),
    ('compile-timeout = "soon"', "compile-timeout must be a positive, finite number"),
    ("select = [1, 2]", "select must be a list of strings"),
    ("per-file-ignores = 3", "per-file-ignores must be a table"),
    ("cache-dir = 7", "cache-dir must be a non-empty string"),
])
def test_wrong_types_name_the_file_key_and_line(tmp_path, line, message):
    pyproject = write(tmp_path, f'[project]\nname = "x"\n\n[tool.kernelrules]\narch = "ada"\n{line}\n')
    with pytest.raises(KernelrulesError) as caught:
        load_settings([tmp_path])
    text = str(caught.value)
    assert text.startswith(f"{pyproject}:6: ") and message in text


def test_unknown_key(tmp_path):
    pyproject = write(tmp_path, '[tool.kernelrules]\njobs = 2\nfail_on = "error"\n')
    with pytest.raises(KernelrulesError) as caught:
        load_settings([tmp_path])
    assert str(caught.value).startswith(f"{pyproject}:3: unknown key 'fail_on'")
    assert "fail-on" in str(caught.value)  # the hint lists the known keys


def test_invalid_toml(tmp_path):
    pyproject = write(tmp_path, "[tool.kernelrules\n")
    with pytest.raises(KernelrulesError, match="invalid TOML") as caught:
        load_settings([tmp_path])
    assert str(pyproject) in str(caught.value)


def test_key_line_only_looks_inside_the_table():
    text = '[tool.other]\njobs = 1\n[tool.kernelrules]\n"jobs" = 2\n'
    assert key_line(text, "jobs") == 4
    assert key_line(text, "stage") is None


def test_merge_cli_wins_and_skips_none(tmp_path):
    write(tmp_path, FULL)
    s = load_settings([tmp_path])
    merged = s.merge_cli(arch="blackwell", fail_on=None, jobs=8, **{"compile-timeout": 5})
    assert merged.arch == ["blackwell"] and merged.jobs == 8 and merged.compile_timeout == 5.0
    assert merged.fail_on == "warning"  # not given on the command line
    assert s.jobs == 4  # the original is unchanged
    assert merged.source == s.source


def test_merge_cli_checks_values_and_names():
    with pytest.raises(KernelrulesError, match="--fail-on must be one of"):
        Settings().merge_cli(fail_on="fatal")
    with pytest.raises(KernelrulesError, match="unknown setting 'colour'"):
        Settings().merge_cli(colour=True)
