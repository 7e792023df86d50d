"""The hostile-input matrix (issue 18): hundreds of generated bad inputs, every command and format.

Each case (tests/hostile/) writes bad files into a fresh directory and runs one
``kernelrules`` command on them. Whatever the input, the command must end as the case
expects: refused (exit 2, exactly one ``kernelrules: error:`` line naming the problem,
no file written), a usage error of the argument parser (exit 2), or judged (exit 0 or 1;
a bad Python file is an LNT004 finding, not the end of the run). Never a traceback, never
``internal error``, and within the bounds of issue 18: 10 s and 1 GB per input.

The cases run in-process in two long-lived children (tests/hostile/runner.py), about
0.1 s each; a few run end to end through the installed command to show that the two agree.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from hostile.cases import all_cases
from hostile.model import CASE_MEMORY_BYTES, CASE_SECONDS, JUDGED, REFUSED, USAGE
from hostile.runner import child_environment, run_cases

CASES = all_cases()
BY_NAME = {c.name: c for c in CASES}

#: Cases also run through the installed ``kernelrules`` command, one subprocess each: the in-process
#: runner must agree with it (exit code and error line). One or two per input format.
END_TO_END = [
    "yaml/prune-space/alias-bomb", "yaml/arch-file/fifo", "yaml/lint-spec/huge-int", "python/lint/undecodable",
    "python/spec/syntax-error", "json/trace/deep-nesting", "json/pin-show/ms-nan", "json/report/text-file",
    "cli/lint--timeout=nan", "cli/check-config/true-block", "toml/huge-int", "cli/lint/format",
    "cli/usage/pin-show/flag-value", "cli/top/unknown-command",
]


@pytest.fixture(scope="module")
def results(request):
    """Run the selected cases once for the module (``-k`` selects a slice)."""
    selected = [item.callspec.params["case"].name for item in request.session.items
                if getattr(item, "callspec", None) is not None and "case" in item.callspec.params
                and item.module is request.module]
    if any(item.name.startswith("test_the_installed_command_agrees") for item in request.session.items):
        selected += [name for name in END_TO_END if name not in selected]
    start = time.monotonic()
    found = run_cases(selected or [c.name for c in CASES])
    slowest = sorted((r.get("seconds", float("inf")), n) for n, r in found.items())[-3:]
    print(f"\nhostile matrix: {len(found)} cases in {time.monotonic() - start:.1f} s; slowest: "
          + ", ".join(f"{n} {s:.1f} s" for s, n in reversed(slowest)))
    return found


def test_the_matrix_is_large_and_covers_every_format():
    groups = {c.group.split(":")[0] for c in CASES}
    assert len([c for c in CASES if not c.slow]) >= 300
    assert {"python", "yaml", "json", "cli"} <= groups


def test_every_command_has_its_usage_errors_in_the_matrix():
    """Each command and group of the CLI has cases for its usage errors, each naming it in its one line."""
    import typer

    from kernelrules.cli import app

    def paths(command, path=()):
        yield path
        for name, sub in (getattr(command, "commands", None) or {}).items():
            yield from paths(sub, (*path, name))

    usage = [c for c in CASES if c.expect == USAGE]
    for path in paths(typer.main.get_command(app)):
        prefix = " ".join(("kernelrules", *path)) + ": error: "
        named = [c for c in usage if c.argv[:len(path)] == path and c.message.startswith(prefix)]
        assert named, f"no usage-error case for {prefix!r}"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _param(case):
    return pytest.param(case, id=case.name, marks=[pytest.mark.slow] if case.slow else [])


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_hostile_case(case, results):
    got = results[case.name]
    assert "killed" not in got, f"{case.name}: {got['killed']}"
    assert got["escaped"] is None, f"{case.name}: an exception escaped main(): {got['escaped']}"
    stderr, stdout = got["stderr"], got["stdout"]
    context = f"{case.name}: exit {got['code']}\nstderr: {stderr[-2000:]}\nstdout: {stdout[-1000:]}"
    assert "Traceback" not in stderr + stdout, context
    assert "internal error" not in stderr, context
    if case.expect == REFUSED:
        assert got["code"] == 2, context
        lines = _lines(stderr)
        assert len(lines) == 1 and lines[0].startswith("kernelrules: error: "), context
        assert case.message in lines[0], f"{context}\nexpected in the error line: {case.message!r}"
        assert got["new_files"] == [], f"{context}\nleft behind: {got['new_files']}"
    elif case.expect == USAGE:
        assert got["code"] == 2, context
        lines = _lines(stderr)
        assert len(lines) == 1 and re.match(r"kernelrules( [a-z-]+)*: error: .*\S", lines[0]), context
        assert case.message in lines[0], f"{context}\nexpected in the error line: {case.message!r}"
        assert lines[0].endswith("--help')") or " (try " not in lines[0], context
        assert stdout == "", context
        assert got["new_files"] == [], f"{context}\nleft behind: {got['new_files']}"
    else:
        assert case.expect == JUDGED
        assert got["code"] in case.exits, context
        assert len(_lines(stderr)) <= 1, context
        assert case.message in stderr + stdout, f"{context}\nexpected: {case.message!r}"
        if case.finding:
            report = json.loads(stdout)
            assert case.finding in {f["code"] for f in report["findings"]}, context
        unexpected = [p for p in got["new_files"] if not any(p == w or p.startswith(w + "/") for w in case.writes)]
        assert unexpected == [], f"{context}\nleft behind: {unexpected}"
    assert got["seconds"] <= CASE_SECONDS, f"{case.name}: took {got['seconds']:.1f} s"
    assert got["memory_bytes"] <= CASE_MEMORY_BYTES, f"{case.name}: peak memory grew {got['memory_bytes'] >> 20} MB"


def _run_installed(name: str, root: Path) -> dict:
    from conftest import kernelrules_command

    case, directory = BY_NAME[name], root / name.replace("/", "_")
    directory.mkdir(parents=True)
    case.materialize(directory)
    done = subprocess.run([*kernelrules_command(), *case.argv], cwd=directory, capture_output=True, text=True,
                          env=child_environment(root / "cache"), timeout=120)
    return {"code": done.returncode, "stderr": done.stderr}


@pytest.fixture(scope="module")
def installed():
    """The END_TO_END cases run by the installed command, two at a time."""
    with tempfile.TemporaryDirectory(prefix="kernelrules-hostile-e2e-") as tmp:
        with ThreadPoolExecutor(max_workers=2) as pool:
            return dict(zip(END_TO_END, pool.map(lambda n: _run_installed(n, Path(tmp)), END_TO_END)))


@pytest.mark.parametrize("name", END_TO_END)
def test_the_installed_command_agrees(name, results, installed):
    """The in-process runner sees what a user of the real command sees: same exit code, same error line."""
    inside, outside = results[name], installed[name]
    assert outside["code"] == inside["code"], (name, outside, inside["stderr"])
    assert "Traceback" not in outside["stderr"]
    first = [_without_folders((_lines(run["stderr"]) or [""])[0]).removeprefix("python -m ")
             for run in (outside, inside)]
    assert first[0] == first[1], (name, outside, inside["stderr"])


def _without_folders(line: str) -> str:
    """``line`` with the folders of absolute paths left out: the two runs use different directories."""
    return re.sub(r"(?:/[^/\s:]+)+/(?=[^/\s:]+)", "", line)
