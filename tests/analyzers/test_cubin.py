"""LDL/STL counted in a cubin's machine code agree with cuobjdump's disassembly, on every verified arch."""

from __future__ import annotations

import struct
import textwrap

import pytest

from kernelrules.analyzers import cubin, sass
from kernelrules.analyzers.facts_extract import extract
from kernelrules.compile.compilejob import CompileJob, compile_job

pytest.importorskip("triton")

HOARD = textwrap.dedent('''\
    import triton
    import triton.language as tl


    @triton.jit
    def hoard(x_ptr, y_ptr, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        x = tl.load(x_ptr + offs)
        y = tl.exp(x - tl.max(x, axis=0))
        tl.store(y_ptr + offs, y / tl.sum(y, axis=0) + x)
''')


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cubin")
    path = folder / "hoard.py"
    path.write_text(HOARD)
    built = {}

    def compiled(arch: int, block: int):
        if (arch, block) not in built:
            job = CompileJob(path=str(path), kernel="hoard", signature={"x_ptr": "*fp32", "y_ptr": "*fp32"},
                             constexprs={"BLOCK": block}, options={"num_warps": 1}, target=("cuda", arch, 32))
            with pytest.MonkeyPatch.context() as patch:
                patch.setenv("TRITON_CACHE_DIR", str(folder / "triton"))
                result = compile_job(job)
            assert result.ok, result.message
            built[(arch, block)] = result
        return built[(arch, block)]

    return compiled


def _disassembled(code: bytes) -> tuple[int, int, int]:
    functions = sass.parse_sass(sass.dump_sass(code))
    histogram = sass.opcode_histogram(functions)
    return (histogram["LDL"] + histogram["STL"], *sass.local_memory_bytes(functions))


ARCHS = [90] + [pytest.param(a, marks=pytest.mark.slow) for a in sorted(cubin.VERIFIED_SM - {90})]


@pytest.mark.parametrize("arch", ARCHS)
def test_counts_and_bytes_match_the_disassembly(build, arch):
    """8192 fp32 values per thread on one warp spill thousands of LDL/STL of several widths."""
    code = build(arch, 8192).asm["cubin"]
    assert cubin.cubin_sm(code) == arch
    counted = cubin.local_memory_access(code)
    assert counted == _disassembled(code)
    assert counted[0] > 100 and counted[1] > 0 and counted[2] > 0


def test_a_kernel_without_local_memory_counts_zero(build):
    code = build(90, 256).asm["cubin"]
    assert cubin.local_memory_access(code) == _disassembled(code) == (0, 0, 0)


def test_extract_gives_the_same_facts_as_the_disassembly(build):
    result = build(90, 8192)
    fast = extract(result.asm, result.metadata)
    full = extract(result.asm, result.metadata, sass_histogram=True)
    keys = ("local_memory_ops", "spill_stores", "spill_loads", "registers", "spill_bytes")
    assert {k: fast[k] for k in keys} == {k: full[k] for k in keys}
    assert fast["local_memory_ops"] > 0
    assert "sass_opcodes" in full and "sass_opcodes" not in fast


def test_unverified_arch_or_unreadable_file_gives_none(build):
    code = bytearray(build(90, 8192).asm["cubin"])
    assert cubin.local_memory_access(b"not an elf") is None
    assert cubin.local_memory_access(bytes(code[:80])) is None
    flags = struct.unpack_from("<I", code, 0x30)[0]
    struct.pack_into("<I", code, 0x30, (flags & ~0xFF) | 75)  # an sm_75 cubin: never checked
    assert cubin.cubin_sm(bytes(code)) == 75 and cubin.local_memory_access(bytes(code)) is None
