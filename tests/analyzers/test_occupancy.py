"""Occupancy arithmetic: hand-checked cases from cuda_occupancy.h, and properties."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernelrules.analyzers.occupancy import (
    LIMITER_ORDER,
    UNLIMITED,
    OccupancyLimits,
    carveout_steps_in_bytes,
    occupancy,
)

KIB = 1024

# hardware-facts.md A.1 (CCCL arch_traits.h and cuda_occupancy.h), one dict per target,
# spelled with the flat arch-profile keys.
COMMON = {
    "warp_size": 32,
    "max_threads_per_block": 1024,
    "registers_per_sm": 65536,
    "registers_per_block": 65536,
    "max_registers_per_thread": 255,
    "register_allocation_unit": 256,
    "register_sub_partitions": 4,
    "shared_memory_per_block": 49152,
    "reserved_shared_memory_per_block": 1024,
    "shared_memory_allocation_granularity": 128,
}
SM80 = COMMON | {
    "max_warps_per_sm": 64,
    "max_blocks_per_sm": 32,
    "shared_memory_per_sm": 167936,
    "shared_memory_per_block_optin": 166912,
    "shared_memory_carveout_steps": [0, 8, 16, 32, 64, 100, 132, 164],  # KiB, as in A.1
    "block_barriers_per_sm": 64,
}
SM86 = COMMON | {
    "max_warps_per_sm": 48,
    "max_blocks_per_sm": 16,
    "shared_memory_per_sm": 102400,
    "shared_memory_per_block_optin": 101376,
    "shared_memory_carveout_steps": [0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB],
    "block_barriers_per_sm": 16,
}
SM89 = COMMON | {
    "max_warps_per_sm": 48,
    "max_blocks_per_sm": 24,
    "shared_memory_per_sm": 102400,
    "shared_memory_per_block_optin": 101376,
    "shared_memory_carveout_steps": [0, 8 * KIB, 16 * KIB, 32 * KIB, 64 * KIB, 100 * KIB],
    "block_barriers_per_sm": 24,
}
SM90 = COMMON | {
    "max_warps_per_sm": 64,
    "max_blocks_per_sm": 32,
    "shared_memory_per_sm": 233472,
    "shared_memory_per_block_optin": 232448,
    "shared_memory_carveout_steps": [s * KIB for s in (0, 8, 16, 32, 64, 100, 132, 164, 196, 228)],
    "block_barriers_per_sm": 64,
}
PROFILES = {"sm_80": SM80, "sm_86": SM86, "sm_89": SM89, "sm_90": SM90}
LIMITS = {name: OccupancyLimits.from_mapping(d) for name, d in PROFILES.items()}


# ----------------------------------------------------------------- hand-checked cases


def test_hardware_facts_example_sm89_is_shared_memory_bound():
    """hardware-facts.md "Occupancy example": 128x128x64, 4 warps, 3 stages on sm_89."""
    occ = occupancy(LIMITS["sm_89"], num_warps=4, registers_per_thread=254, shared_bytes=65536)
    # 254*32 = 8128 -> 8192 per warp; 16384/8192 = 2 warps per sub-partition -> 8 warps -> 2 blocks
    assert occ.registers_per_warp_allocated == 8192
    assert occ.blocks_by_registers == 2
    # 65536 + 1024 reserved = 66560 (a multiple of 128); 100 KiB carveout holds one
    assert occ.shared_per_block_allocated == 66560
    assert occ.carveout_bytes == 102400
    assert occ.blocks_by_shared_memory == 1
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm) == (1, 4)
    assert occ.occupancy == pytest.approx(4 / 48)
    assert occ.limiter == "shared_memory"
    assert occ.launchable and occ.reason == ""


def test_sm90_128_registers_8_warps_is_register_bound():
    occ = occupancy(LIMITS["sm_90"], num_warps=8, registers_per_thread=128, shared_bytes=0)
    # 128*32 = 4096 per warp; 16384/4096 = 4 per sub-partition -> 16 warps -> 2 blocks of 8
    assert occ.registers_per_warp_allocated == 4096
    assert occ.blocks_by_registers == 2
    assert occ.blocks_by_warps == 8
    # no dynamic shared memory still takes the reserved 1 KiB: 233472 / 1024 = 228
    assert occ.shared_per_block_allocated == 1024
    assert occ.blocks_by_shared_memory == 228
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.limiter) == (2, 16, "registers")
    assert occ.occupancy == pytest.approx(0.25)


def test_sm90_one_small_warp_is_block_bound():
    occ = occupancy(LIMITS["sm_90"], num_warps=1, registers_per_thread=32, shared_bytes=0)
    # 1024 registers per warp -> 64 warps by registers, 64 by warp slots, 32 block slots
    assert (occ.blocks_by_registers, occ.blocks_by_warps, occ.blocks_by_block_limit) == (64, 64, 32)
    assert (occ.active_blocks_per_sm, occ.limiter) == (32, "blocks")
    assert occ.occupancy == pytest.approx(0.5)


def test_sm80_167_registers_rounds_up_to_the_allocation_unit():
    """128x128x64, 8 warps, 3 stages on sm_80 (hardware-facts.md B.4: 167 regs, 65536 B)."""
    occ = occupancy(LIMITS["sm_80"], num_warps=8, registers_per_thread=167, shared_bytes=65536)
    # 167*32 = 5344 -> 5376; 16384 // 5376 = 3 per sub-partition -> 12 warps -> 1 block of 8
    assert occ.registers_per_warp_allocated == 5376
    assert occ.blocks_by_registers == 1
    assert occ.blocks_by_shared_memory == 167936 // 66560 == 2
    assert (occ.active_blocks_per_sm, occ.limiter, occ.occupancy) == (1, "registers", 8 / 64)


def test_sm86_small_gemm_is_register_bound_at_half_occupancy():
    """64x64x32, 4 warps, 2 stages on sm_86 (hardware-facts.md B.4: 80 regs, 8192 B)."""
    occ = occupancy(LIMITS["sm_86"], num_warps=4, registers_per_thread=80, shared_bytes=8192)
    # 2560 per warp; 16384 // 2560 = 6 -> 24 warps -> 6 blocks; smem 102400 // 9216 = 11
    assert (occ.blocks_by_registers, occ.blocks_by_shared_memory, occ.blocks_by_warps) == (6, 11, 12)
    assert (occ.active_blocks_per_sm, occ.active_warps_per_sm, occ.occupancy) == (6, 24, 0.5)


@pytest.mark.parametrize(
    ("preference", "carveout", "blocks"),
    [
        (None, 233472, 13),  # default: the full 228 KiB; 233472 // 17408 = 13
        (50, 135168, 7),  # 50% = 116736 B -> aligned up to the 132 KiB step
        (0, 32768, 1),  # max L1: 0 B is smaller than a block, so the block's 17408 B -> 32 KiB
        (100, 233472, 13),
    ],
)
def test_carveout_preference_follows_the_header(preference, carveout, blocks):
    occ = occupancy(
        LIMITS["sm_90"], num_warps=4, registers_per_thread=32, shared_bytes=16384, carveout_preference=preference
    )
    assert occ.shared_per_block_allocated == 17408
    assert (occ.carveout_bytes, occ.blocks_by_shared_memory) == (carveout, blocks)
    assert occ.active_blocks_per_sm == blocks and occ.limiter == "shared_memory"


def test_ties_report_the_first_limiter_in_order():
    # sm_89, 254 regs, 4 warps: 2 blocks by registers; 40960 + 1024 = 41984 -> 102400 // 41984 = 2
    occ = occupancy(LIMITS["sm_89"], num_warps=4, registers_per_thread=254, shared_bytes=40960)
    assert occ.limiters == ("registers", "shared_memory")
    assert occ.limiter == "registers"


def test_barrier_limit_never_binds_with_one_barrier():
    for limits in LIMITS.values():
        occ = occupancy(limits, num_warps=1, registers_per_thread=16, shared_bytes=0)
        assert occ.limiter == "blocks"
        assert occ.blocks_by_barriers >= occ.blocks_by_block_limit


def test_granularity_rounds_shared_memory_up_to_128_bytes():
    occ = occupancy(LIMITS["sm_89"], num_warps=4, registers_per_thread=32, shared_bytes=1)
    assert occ.shared_per_block_allocated == 1152  # 1 + 1024 -> 1152


# ----------------------------------------------------------------- launchability


def test_shared_memory_over_optin_is_not_launchable():
    """128x128x64, 8 warps, 5 stages: 131072 B on sm_89 (hardware-facts.md B.4 footnote 5)."""
    occ = occupancy(LIMITS["sm_89"], num_warps=8, registers_per_thread=167, shared_bytes=131072)
    assert not occ.launchable
    assert occ.active_blocks_per_sm == 0 and occ.limiter == "shared_memory"
    assert "101376" in occ.reason and "OutOfResources" in occ.reason
    assert occ.carveout_bytes == 0


def test_sm90_full_optin_is_launchable_and_one_byte_more_is_not():
    # docs/validation.md: 232448 B launched on an H200 (the ptxas 1 KiB section is the reserved part)
    full = occupancy(LIMITS["sm_90"], num_warps=4, registers_per_thread=32, shared_bytes=232448)
    assert full.launchable and full.active_blocks_per_sm == 1
    assert full.shared_per_block_allocated == 233472 == full.carveout_bytes
    over = occupancy(LIMITS["sm_90"], num_warps=4, registers_per_thread=32, shared_bytes=232449)
    assert not over.launchable


def test_static_shared_memory_reduces_the_dynamic_budget():
    # maxDynamicSharedSizeBytes = optin - static once Triton opts in (shared > 48 KiB) ...
    kwargs = dict(num_warps=4, registers_per_thread=32, static_shared_bytes=1024)
    occ = occupancy(LIMITS["sm_90"], shared_bytes=232000, **kwargs)
    assert not occ.launchable and "231424" in occ.reason
    # ... and 48 KiB - static when it does not (shared <= 48 KiB: no opt-in in driver.c)
    occ = occupancy(LIMITS["sm_90"], shared_bytes=49152, **kwargs)
    assert not occ.launchable and "48128" in occ.reason
    occ = occupancy(LIMITS["sm_90"], shared_bytes=48128, **kwargs)
    assert occ.launchable and occ.shared_per_block_allocated == 50176


@pytest.mark.parametrize(
    ("kwargs", "fragment", "limiter"),
    [
        ({"num_warps": 64, "registers_per_thread": 16, "shared_bytes": 0}, "2048 threads", "warps"),
        ({"num_warps": 4, "registers_per_thread": 256, "shared_bytes": 0}, "max_registers_per_thread", "registers"),
        # 255 regs -> 8192 per warp x 16 warps = 131072 > 65536
        ({"num_warps": 16, "registers_per_thread": 255, "shared_bytes": 0}, "131072 registers", "registers"),
        # the hardware check rounds 9 warps up to 12: 12 x 6400 = 76800 > 65536 (9 x 6400 would fit)
        ({"num_warps": 9, "registers_per_thread": 200, "shared_bytes": 0}, "76800 registers", "registers"),
    ],
)
def test_a_block_that_cannot_fit_is_reported(kwargs, fragment, limiter):
    occ = occupancy(LIMITS["sm_90"], **kwargs)
    assert not occ.launchable and occ.active_blocks_per_sm == 0
    assert fragment in occ.reason
    assert occ.limiter == limiter


def test_eight_warps_of_200_registers_fit():
    occ = occupancy(LIMITS["sm_90"], num_warps=8, registers_per_thread=200, shared_bytes=0)
    assert occ.launchable and occ.blocks_by_registers == 1


def test_invalid_inputs_are_rejected():
    with pytest.raises(ValueError):
        occupancy(LIMITS["sm_90"], num_warps=0, registers_per_thread=32, shared_bytes=0)
    with pytest.raises(ValueError):
        occupancy(LIMITS["sm_90"], num_warps=4, registers_per_thread=-1, shared_bytes=0)
    with pytest.raises(ValueError):
        occupancy(LIMITS["sm_90"], num_warps=4, registers_per_thread=32, shared_bytes=0, carveout_preference=101)


# ----------------------------------------------------------------- from_mapping


def test_carveout_steps_in_kib_are_converted():
    assert LIMITS["sm_80"].shared_memory_carveout_steps == (0, 8192, 16384, 32768, 65536, 102400, 135168, 167936)
    assert carveout_steps_in_bytes([0, 8192, 102400]) == (0, 8192, 102400)
    assert carveout_steps_in_bytes([0, 8, 100]) == (0, 8192, 102400)


def test_from_mapping_unwraps_profile_entries_and_ignores_other_keys():
    wrapped = {key: {"value": value, "source": "test"} for key, value in SM89.items()}
    wrapped["tma"] = {"value": False, "source": "test"}
    assert OccupancyLimits.from_mapping(wrapped) == LIMITS["sm_89"]


def test_from_mapping_derives_warps_from_threads():
    d = {k: v for k, v in SM89.items() if k != "max_warps_per_sm"} | {"max_threads_per_sm": 1536}
    assert OccupancyLimits.from_mapping(d).max_warps_per_sm == 48


def test_from_mapping_reports_missing_keys():
    with pytest.raises(ValueError, match="shared_memory_per_block_optin"):
        OccupancyLimits.from_mapping({k: v for k, v in SM89.items() if k != "shared_memory_per_block_optin"})


def test_carveout_steps_must_end_at_shared_memory_per_sm():
    with pytest.raises(ValueError, match="largest carveout step"):
        OccupancyLimits.from_mapping(SM90 | {"shared_memory_carveout_steps": [0, 8, 16, 32, 64, 100]})


# ----------------------------------------------------------------- properties

archs = st.sampled_from(sorted(LIMITS))
warps = st.integers(min_value=1, max_value=40)
registers = st.integers(min_value=0, max_value=300)
shared = st.integers(min_value=0, max_value=240 * KIB)
static = st.integers(min_value=0, max_value=4 * KIB)
preferences = st.none() | st.integers(min_value=0, max_value=100)


@given(archs, warps, registers, shared, static, preferences)
def test_never_above_a_hardware_cap(arch, num_warps, regs, smem, static_smem, pref):
    limits = LIMITS[arch]
    occ = occupancy(
        limits,
        num_warps=num_warps,
        registers_per_thread=regs,
        shared_bytes=smem,
        static_shared_bytes=static_smem,
        carveout_preference=pref,
    )
    assert 0 <= occ.active_blocks_per_sm <= limits.max_blocks_per_sm
    assert 0 <= occ.active_warps_per_sm <= limits.max_warps_per_sm
    assert occ.shared_used_per_sm <= occ.carveout_bytes <= limits.shared_memory_per_sm
    assert occ.registers_used_per_sm <= limits.registers_per_sm
    assert 0.0 <= occ.occupancy <= 1.0
    assert occ.launchable == (occ.active_blocks_per_sm > 0) == (occ.reason == "")


@given(archs, warps, registers, shared, static, preferences)
def test_limiter_is_the_first_minimum(arch, num_warps, regs, smem, static_smem, pref):
    occ = occupancy(
        LIMITS[arch],
        num_warps=num_warps,
        registers_per_thread=regs,
        shared_bytes=smem,
        static_shared_bytes=static_smem,
        carveout_preference=pref,
    )
    per_resource = {
        "registers": occ.blocks_by_registers,
        "shared_memory": occ.blocks_by_shared_memory,
        "warps": occ.blocks_by_warps,
        "blocks": occ.blocks_by_block_limit,
        "barriers": occ.blocks_by_barriers,
    }
    assert occ.active_blocks_per_sm == min(per_resource.values()) < UNLIMITED
    assert per_resource[occ.limiter] == occ.active_blocks_per_sm
    before = LIMITER_ORDER[: LIMITER_ORDER.index(occ.limiter)]
    assert all(per_resource[name] > occ.active_blocks_per_sm for name in before)
    assert occ.limiter != "barriers"


@given(archs, warps, registers, shared, static, preferences, st.integers(min_value=1, max_value=64))
def test_more_registers_never_more_blocks(arch, num_warps, regs, smem, static_smem, pref, extra):
    kwargs = dict(num_warps=num_warps, shared_bytes=smem, static_shared_bytes=static_smem, carveout_preference=pref)
    low = occupancy(LIMITS[arch], registers_per_thread=regs, **kwargs)
    high = occupancy(LIMITS[arch], registers_per_thread=regs + extra, **kwargs)
    assert high.active_blocks_per_sm <= low.active_blocks_per_sm


@given(archs, warps, registers, shared, preferences, st.integers(min_value=1, max_value=64 * KIB))
def test_more_shared_memory_never_more_blocks(arch, num_warps, regs, smem, pref, extra):
    """Triton kernels have no static shared memory (the sm_90 1 KiB is the reserved part)."""
    kwargs = dict(num_warps=num_warps, registers_per_thread=regs, carveout_preference=pref)
    low = occupancy(LIMITS[arch], shared_bytes=smem, **kwargs)
    high = occupancy(LIMITS[arch], shared_bytes=smem + extra, **kwargs)
    assert high.active_blocks_per_sm <= low.active_blocks_per_sm


@given(archs, warps, registers, shared, static, preferences, st.integers(min_value=1, max_value=4 * KIB))
def test_more_static_shared_memory_never_more_blocks(arch, num_warps, regs, smem, static_smem, pref, extra):
    kwargs = dict(num_warps=num_warps, registers_per_thread=regs, shared_bytes=smem, carveout_preference=pref)
    low = occupancy(LIMITS[arch], static_shared_bytes=static_smem, **kwargs)
    high = occupancy(LIMITS[arch], static_shared_bytes=static_smem + extra, **kwargs)
    assert high.active_blocks_per_sm <= low.active_blocks_per_sm


def test_static_shared_memory_makes_the_48k_opt_in_edge_non_monotone():
    """With static shared memory, 48 KiB of dynamic memory fails (no opt-in) but 48 KiB + 1 launches."""
    kwargs = dict(num_warps=4, registers_per_thread=32, static_shared_bytes=1024)
    assert not occupancy(LIMITS["sm_80"], shared_bytes=49152, **kwargs).launchable
    assert occupancy(LIMITS["sm_80"], shared_bytes=49153, **kwargs).launchable


@given(archs, warps, registers, shared, static, preferences, st.integers(min_value=1, max_value=32))
def test_more_warps_never_more_blocks(arch, num_warps, regs, smem, static_smem, pref, extra):
    kwargs = dict(
        registers_per_thread=regs, shared_bytes=smem, static_shared_bytes=static_smem, carveout_preference=pref
    )
    low = occupancy(LIMITS[arch], num_warps=num_warps, **kwargs)
    high = occupancy(LIMITS[arch], num_warps=num_warps + extra, **kwargs)
    assert high.active_blocks_per_sm <= low.active_blocks_per_sm


# ----------------------------------------------------------------- architecture profiles


@pytest.mark.parametrize("arch", sorted(PROFILES))
def test_profiles_agree_with_the_test_constants(arch):
    """Once kernelrules.arch exists: the shipped profiles must give the numbers above."""
    arch_module = pytest.importorskip("kernelrules.arch")
    if not hasattr(arch_module, "load_arch"):
        pytest.skip("kernelrules.arch.load_arch is not there yet")
    profile = arch_module.load_arch(arch)
    if not hasattr(profile, "flat"):
        pytest.skip("arch profiles have no flat() yet")
    from_profile = OccupancyLimits.from_mapping(profile.flat())
    assert from_profile == LIMITS[arch]
    occ = occupancy(from_profile, num_warps=4, registers_per_thread=128, shared_bytes=32768)
    assert occ.launchable and occ.active_blocks_per_sm >= 1
