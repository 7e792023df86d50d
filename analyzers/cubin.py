"""Local-memory instructions counted in a cubin's machine code, without disassembling it.

A spilling kernel's SASS listing is large: ``cuobjdump --dump-sass`` of a spilling fla-core
kernel for sm_90 printed 1 to 3.5 MB and took 0.6 to 0.8 s, most of a compile worker's
analysis time on a package with many spilling configs. All that listing gave the facts was
the LDL and STL instructions: their count (``local_memory_ops``) and the bytes they move
(``spill_stores``, ``spill_loads``).

Since Volta, every NVIDIA instruction is 128 bits, little-endian, with its opcode in the low
12 bits: ``0x983`` is LDL and ``0x387`` STL; the access size sits in bits 73-75 (U8, S8,
U16, S16, 32, 64, 128 bits). This module reads the ELF's ``.text.<kernel>`` sections and
counts those instructions. The encoding is not documented by NVIDIA; it was read off
cuobjdump's own listings, and ``tests/analyzers/test_cubin.py`` checks the counts and bytes
against cuobjdump on cross-compiles for every architecture listed in :data:`VERIFIED_SM`
(on 191 of 191 spilling sm_90 cubins of fla-core as well). Any other architecture, or a file
this reader does not understand, gives None and the caller disassembles as before.
"""

from __future__ import annotations

import re
import struct

#: Architectures (``sm``) whose cubins were checked against cuobjdump.
VERIFIED_SM = frozenset({80, 86, 89, 90, 100, 120})
#: Opcodes (low 12 bits) of LDL and STL.
LDL, STL = 0x983, 0x387
_LOW_BYTES = re.compile(rb"[\x83\x87]")
#: Bytes moved by each value of the access-size field (bits 73-75).
_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 8, 6: 16}
_EM_CUDA = 190


def cubin_sm(cubin: bytes) -> int | None:
    """The SM version a cubin was built for (``e_flags``), or None when it is not a 64-bit CUDA ELF."""
    if len(cubin) < 64 or cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        return None
    (machine,) = struct.unpack_from("<H", cubin, 0x12)
    if machine != _EM_CUDA:
        return None
    (flags,) = struct.unpack_from("<I", cubin, 0x30)
    # The ELF ABI of CUDA 12.8 and later keeps the SM in bits 8-15; the older one in bits 0-7.
    abi = cubin[8]  # EI_ABIVERSION
    return (flags >> 8) & 0xFF if abi >= 8 else flags & 0xFF


def text_sections(cubin: bytes) -> dict[str, bytes]:
    """The code sections (``.text.<function>``) of a 64-bit little-endian ELF, by name."""
    (shoff,) = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]

    def name(offset: int) -> str:
        start = names_at + offset
        return cubin[start:cubin.index(b"\0", start)].decode("ascii", "replace")

    return {name(h[0]): cubin[h[4]:h[4] + h[5]] for h in headers if name(h[0]).startswith(".text.")}


def local_memory_access(cubin: bytes) -> tuple[int, int, int] | None:
    """``(instructions, store bytes, load bytes)`` of the LDL/STL in a cubin's code; None when the
    cubin is not one of :data:`VERIFIED_SM` or cannot be read."""
    if cubin_sm(cubin) not in VERIFIED_SM:
        return None
    try:
        sections = text_sections(cubin)
    except (struct.error, ValueError, IndexError):
        return None
    count = stores = loads = 0
    for code in sections.values():
        if len(code) % 16:
            return None
        first_bytes = code[0::16]  # the opcode's low byte: 0x83 (LDL) or 0x87 (STL); look there only
        for found in _LOW_BYTES.finditer(first_bytes):
            at = found.start() * 16
            opcode = code[at] | ((code[at + 1] & 0x0F) << 8)
            if opcode not in (LDL, STL):
                continue
            size = _SIZE.get((code[at + 9] >> 1) & 7)  # bits 73-75: bits 1-3 of byte 9
            if size is None:
                return None
            count += 1
            if opcode == STL:
                stores += size
            else:
                loads += size
    return count, stores, loads
