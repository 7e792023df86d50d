"""The CLI's last exit handler: once Triton's library is loaded, what the interpreter prints to stderr while it
tears down (Triton 3.9's nanobind leak report) goes nowhere; before that, and kernelrules' own output, is kept."""

from __future__ import annotations

import subprocess
import sys

import pytest

PROGRAM = """
import os, sys
{load}
from kernelrules.cli import _quiet_teardown
sys.stderr.write("before\\n")
_quiet_teardown()
os.write(2, b"teardown noise\\n")
"""


@pytest.mark.parametrize("load, kept", [("import triton._C.libtriton", False), ("", True)])
def test_teardown_output_is_quiet_only_once_libtriton_is_loaded(load, kept):
    done = subprocess.run([sys.executable, "-c", PROGRAM.format(load=load)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert "before" in done.stderr
    assert ("teardown noise" in done.stderr) is kept
