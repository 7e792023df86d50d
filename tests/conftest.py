"""Shared test helpers: run the installed ``kernelrules`` command; kernels discovered from a source."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def kernelrules_command() -> list[str]:
    """The installed console script, falling back to ``python -m kernelrules``."""
    exe = shutil.which("kernelrules", path=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "kernelrules"]


@pytest.fixture
def run_cli(tmp_path):
    """Run ``kernelrules ARGS`` in a temporary directory; return the CompletedProcess."""

    def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
        env = dict(os.environ, NO_COLOR="1", COLUMNS="200", TERM="dumb")
        return subprocess.run(
            [*kernelrules_command(), *args], cwd=cwd or tmp_path, capture_output=True, text=True, env=env, timeout=300
        )

    return run


@pytest.fixture
def discovered(tmp_path):
    """``discovered(source, name="kernels.py")``: the kernels (helpers included) of ``source``, written
    dedented to ``tmp_path / name``, by name."""
    import textwrap

    from kernelrules.discover.kernels import discover

    def kernels(source: str, name: str = "kernels.py") -> dict:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return {kernel.name: kernel for kernel in discover([path]).kernels}

    return kernels


# Hypothesis: a reproducible profile for CI (derandomized, no deadline on a shared 2-core machine).
from hypothesis import settings as _settings  # noqa: E402

_settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
_settings.register_profile("dev", deadline=None)
_settings.load_profile("ci" if os.environ.get("CI") else "dev")
