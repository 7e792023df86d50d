"""Build the wheel, install it into a fresh virtual environment outside the repository, run it.

The wheel itself is installed with ``--no-deps``; the fresh environment reaches the
dependencies of the test environment through a ``.pth`` path entry, so the test needs
no network and no second copy of Triton. What it checks is the packaging: the data files
(rules, profiles, schemas, grammar) and the ``kernelrules.analyzers`` mapping ship in
the wheel, and the command works from a directory that is not the repository.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        check=True,
        cwd=out,
    )
    return next(out.glob("kernelrules-*.whl"))


def test_wheel_contains_data_and_analyzers(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "kernelrules/analyzers/__init__.py" in names
    assert any(n.startswith("kernelrules/rules/") and n.endswith(".yaml") for n in names)
    assert any(n.startswith("kernelrules/arch_profiles/") and n.endswith(".yaml") for n in names)
    assert "kernelrules/schemas/rule.schema.json" in names
    assert "kernelrules/expr/grammar.lark" in names
    assert not any(n.startswith(("tests/", "rules/", "analyzers/")) for n in names)


def test_fresh_venv_runs_the_command(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", "--no-deps", "--no-index", str(wheel)], check=True)
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True, capture_output=True, text=True,
    ).stdout.strip()
    Path(site, "_outer_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
    exe = str(bindir / "kernelrules")
    for args, expect in (
        (["--version"], "kernelrules 0."),
        (["arch", "list"], "sm_89"),
        (["rules", "list"], "CFG004"),
    ):
        result = subprocess.run([exe, *args], cwd=workdir, capture_output=True, text=True, env=env, timeout=120)
        assert result.returncode == 0, result.stderr
        assert expect in result.stdout
    # Lint from a source checkout's root: its kernelrules/ folder must not shadow the installed
    # package in the compile workers (the resource-model probes compile there).
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    shutil.copytree(REPO / "kernelrules", checkout / "kernelrules")
    shutil.copy(REPO / "examples" / "matmul.py", checkout / "matmul.py")
    linted = subprocess.run([exe, "lint", "matmul.py", "--arch", "ada", "--stage", "config", "--format", "json",
                             "--cache-dir", str(tmp_path / "cache")],
                            cwd=checkout, capture_output=True, text=True, env=env, timeout=300)
    assert linted.returncode == 1, linted.stderr
    codes = {f["code"] for f in json.loads(linted.stdout)["findings"]}
    assert "MEM001" in codes and "CMP001" not in codes
    where = subprocess.run(
        [str(python), "-c", "import kernelrules, kernelrules.analyzers; print(kernelrules.__file__)"],
        cwd=workdir, capture_output=True, text=True, env=env, check=True,
    ).stdout
    assert str(env_dir) in where, "the fresh environment must import its own installed copy"
