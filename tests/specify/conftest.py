"""Fixtures of the specify tests: kernels discovered from a source written to a temporary file."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Callable

import pytest

from kernelrules.discover.kernels import DiscoveredKernel, discover


@pytest.fixture
def discovered(tmp_path: Path) -> Callable[..., dict[str, DiscoveredKernel]]:
    """``discovered(source, name="kernels.py")``: the kernels (helpers included) of ``source``, written
    dedented to ``tmp_path / name``, by name."""

    def kernels(source: str, name: str = "kernels.py") -> dict[str, DiscoveredKernel]:
        path = tmp_path / name
        path.write_text(textwrap.dedent(source))
        return {kernel.name: kernel for kernel in discover([path]).kernels}

    return kernels
