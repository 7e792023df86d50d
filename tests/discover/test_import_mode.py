"""The opt-in import mode: runtime-only configs, and a torch stand-in when torch is missing."""

import sys
import textwrap

import pytest

from kernelrules.discover import import_mode
from kernelrules.discover.kernels import discover
from kernelrules.errors import KernelrulesError

GPU_GATED = '''\
import torch
import triton
import triton.language as tl

_MAJOR, _ = torch.cuda.get_device_capability()
_WARPS = [8] if _MAJOR >= 9 else [4]


@triton.autotune(configs=[triton.Config({"BLOCK": 256}, num_warps=w) for w in _WARPS], key=["n"])
@triton.jit
def gated_kernel(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, 0.0, mask=offs < n)
'''


def test_torch_stand_in_lets_a_gpu_gated_module_import(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # "import torch" fails as on a machine without torch
    path = tmp_path / "gated.py"
    path.write_text(GPU_GATED)
    (kernel,) = discover([path]).kernels
    from kernelrules.arch import load_arch

    sites, note = import_mode.imported_configs(kernel, load_arch("hopper"))
    assert [s.config.num_warps for s in sites] == [8]  # the stand-in reports the target's capability, 9.0
    assert "stand-in" in note and "--import" in note
    assert sys.modules["torch"] is None  # restored after the import


def test_a_module_that_fails_to_import_is_one_clear_error(tmp_path):
    path = tmp_path / "broken_import.py"
    path.write_text(textwrap.dedent("""\
        import triton
        import triton.language as tl
        raise RuntimeError("needs a GPU")

        @triton.autotune(configs=CONFIGS, key=[])
        @triton.jit
        def k(x_ptr, BLOCK: tl.constexpr):
            pass
        """))
    (kernel,) = discover([path]).kernels
    with pytest.raises(KernelrulesError, match="needs a GPU"):
        import_mode.imported_configs(kernel)
