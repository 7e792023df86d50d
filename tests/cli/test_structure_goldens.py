"""Golden outputs of the installed command, captured before the structure step (issue 15).

The structure step moves modules and seams but must not change what a user sees: the JSON of
``lint`` on every example for every architecture, ``prune`` of the example spaces,
``check-config`` samples, ``rules list`` and ``arch show``. Each case runs the installed
``kernelrules`` in a temporary directory with a fresh compile cache and compares its output,
less wall-clock fields (``compile_seconds``), with the file under ``tests/snapshots/structure/``.

``KERNELRULES_UPDATE_SNAPSHOTS=1`` rewrites the files after an intended change. The compiled-stage
lint of every (example, architecture) pair takes minutes, so CI runs two of them, the config stage
on sm_90, one prune, every check-config and rules case and three arch cases; the rest are marked
slow (``pytest -m ""`` runs them all, as the structure step did before and after each move).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest


REPO = Path(__file__).resolve().parents[2]
GOLDENS = Path(__file__).parent.parent / "snapshots" / "structure"
EXAMPLES = ("attention_fwd", "fused_pointwise", "layernorm", "matmul", "matmul_amd", "softmax")
ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120", "gfx942")
FAST_COMPILED = {("matmul", "sm_89"), ("softmax", "sm_90")}
CI_ARCHS = {"sm_90"}
CI_ARCH_SHOWS = {"sm_90", "gfx942", "rtx4090"}
VOLATILE_KEYS = {"compile_seconds"}


def _stable(value):
    """The JSON value without wall-clock fields, so that two runs of one build compare equal."""
    if isinstance(value, dict):
        return {key: _stable(item) for key, item in value.items() if key not in VOLATILE_KEYS}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _compact_lines(value: dict) -> str:
    """A large JSON object as one line per key, and per element of a list value (smaller, still diffable)."""
    lines = []
    for key in sorted(value):
        item = value[key]
        items = item if isinstance(item, list) else [item]
        lines.append(json.dumps(key) + (":" if isinstance(item, list) else "="))
        lines += [json.dumps(element, sort_keys=True, separators=(",", ":")) for element in items]
    return "\n".join(lines)


def _golden(name: str, stdout: str, returncode: int, compact: bool = False) -> None:
    """Compare one command's exit code and (normalised) output with its golden file."""
    try:
        value = _stable(json.loads(stdout))
    except json.JSONDecodeError:
        body = stdout
    else:
        body = _compact_lines(value) if compact else json.dumps(value, indent=2, sort_keys=True)
    text = f"exit {returncode}\n{body}\n"
    path = GOLDENS / name
    if os.environ.get("KERNELRULES_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert path.exists(), f"no golden {path}; capture it with KERNELRULES_UPDATE_SNAPSHOTS=1"
    assert text == path.read_text(), f"output differs from {path}; rerun with KERNELRULES_UPDATE_SNAPSHOTS=1 if intended"


@pytest.fixture
def workdir(tmp_path):
    """A copy of examples/ in a temporary directory (paths in the output stay relative)."""
    shutil.copytree(REPO / "examples", tmp_path / "examples")
    return tmp_path


@pytest.fixture
def run_in(run_cli, workdir, tmp_path_factory):
    """Run the command in the work directory with a compile cache of its own."""
    cache = tmp_path_factory.mktemp("cache")

    def run(*args: str):
        return run_cli(*args, "--cache-dir", str(cache), cwd=workdir) if args[0] in {"lint", "prune"} else run_cli(
            *args, cwd=workdir
        )

    return run


def _compiled_cases():
    for example in EXAMPLES:
        for arch in ARCHS:
            marks = () if (example, arch) in FAST_COMPILED else (pytest.mark.slow,)
            yield pytest.param(example, arch, marks=marks, id=f"{example}-{arch}")


def _config_cases():
    for example in EXAMPLES:
        for arch in ARCHS:
            marks = () if arch in CI_ARCHS else (pytest.mark.slow,)
            yield pytest.param(example, arch, marks=marks, id=f"{example}-{arch}")


@pytest.mark.parametrize(("example", "arch"), list(_config_cases()))
def test_lint_config_stage(run_in, example, arch):
    result = run_in("lint", f"examples/{example}.py", "--arch", arch, "--stage", "config", "--format", "json")
    _golden(f"lint-config-{example}-{arch}.json", result.stdout, result.returncode)


@pytest.mark.parametrize(("example", "arch"), list(_compiled_cases()))
def test_lint_compiled_stage(run_in, example, arch):
    result = run_in("lint", f"examples/{example}.py", "--arch", arch, "--format", "json")
    _golden(f"lint-compiled-{example}-{arch}.json", result.stdout, result.returncode)


@pytest.mark.parametrize("space", ["matmul.space.yaml"])
@pytest.mark.parametrize("arch", ["sm_90", pytest.param("sm_80", marks=pytest.mark.slow),
                                  pytest.param("sm_120", marks=pytest.mark.slow)])  # wgmma, mma_sync, consumer Blackwell
def test_prune(run_in, space, arch):
    result = run_in("prune", f"examples/{space}", "--arch", arch, "--format", "json")
    _golden(f"prune-{space}-{arch}.jsonl", result.stdout, result.returncode, compact=True)


CHECK_CONFIGS = {
    "big-tile-ada": ["--arch", "ada", "BLOCK_M=256", "BLOCK_N=256", "BLOCK_K=64", "num_warps=8", "num_stages=4"],
    "small-hopper": ["--arch", "hopper", "BLOCK_M=64", "BLOCK_N=64", "BLOCK_K=32", "num_warps=4", "num_stages=2"],
    "fp8-ampere": ["--arch", "ampere", "--dtype", "fp8e4nv", "BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64"],
    "mi300": ["--arch", "mi300x", "BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64", "num_warps=8", "waves_per_eu=2"],
    "kernel-ada-nocompile": [
        "--arch", "ada", "--kernel", "examples/matmul.py", "--no-compile",
        "BLOCK_M=128", "BLOCK_N=256", "BLOCK_K=64", "GROUP_SIZE_M=8", "num_warps=8", "num_stages=4",
    ],
    "space-sm90-nocompile": [
        "--arch", "sm_90", "--space", "examples/matmul.space.yaml", "--no-compile",
        "BLOCK_M=128", "BLOCK_N=128", "BLOCK_K=64", "num_warps=4", "num_stages=3",
    ],
}


@pytest.mark.parametrize("name", sorted(CHECK_CONFIGS))
def test_check_config(run_in, name):
    result = run_in("check-config", *CHECK_CONFIGS[name], "--format", "json")
    _golden(f"check-config-{name}.json", result.stdout, result.returncode)


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_rules_list(run_in, fmt):
    result = run_in("rules", "list", "--format", fmt)
    _golden(f"rules-list.{fmt}", result.stdout, result.returncode)


@pytest.mark.parametrize("arch", [a if a in CI_ARCH_SHOWS else pytest.param(a, marks=pytest.mark.slow)
                                  for a in (*ARCHS, "h200", "rtx4090", "mi300x")])
def test_arch_show(run_in, arch):
    result = run_in("arch", "show", arch)
    _golden(f"arch-show-{arch}.txt", result.stdout, result.returncode)

