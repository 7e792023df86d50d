"""The config model: parsing KEY=VALUE, conversion to and from triton.Config, namespaces."""

import pytest
import triton
from hypothesis import given
from hypothesis import strategies as st

from kernelrules.config import KernelConfig, is_block_size_name, parse_value
from kernelrules.errors import ConfigValueError


def test_parse_assignments_sorts_keys_into_fields():
    config = KernelConfig.parse_assignments(["BLOCK_M=128", "num_warps=8", "waves_per_eu=2", "num_stages=3"])
    assert config.constexprs == {"BLOCK_M": 128}
    assert config.num_warps == 8 and config.num_stages == 3
    assert config.backend_options == {"waves_per_eu": 2}


@pytest.mark.parametrize(
    "text,value",
    [("128", 128), ("0x10", 16), ("1.5", 1.5), ("true", True), ("False", False), ("none", None),
     ("fp16", "fp16"), ("'ieee'", "ieee"), ("007", 7)],
)
def test_parse_value(text, value):
    assert parse_value(text) == value


@pytest.mark.parametrize("item", ["BLOCK_M", "=3", "BLOCK_M=", "1abc=3", "a-b=2"])
def test_bad_assignments_are_usage_errors(item):
    with pytest.raises(ConfigValueError) as info:
        KernelConfig.parse_assignments([item])
    assert item.split("=")[0] in str(info.value) or "KEY=VALUE" in str(info.value)


def test_duplicate_and_mistyped_options_are_rejected():
    with pytest.raises(ConfigValueError, match="given twice"):
        KernelConfig.parse_assignments(["num_warps=4", "num_warps=8"])
    with pytest.raises(ConfigValueError, match="num_warps must be an integer"):
        KernelConfig.parse_assignments(["num_warps=four"])


def test_triton_config_round_trip_keeps_backend_options_in_kwargs():
    original = triton.Config({"BLOCK_M": 64, "waves_per_eu": 2}, num_warps=8, num_stages=2, maxnreg=128)
    config = KernelConfig.from_triton(original)
    assert config.backend_options == {"waves_per_eu": 2}
    assert config.maxnreg == 128
    back = config.to_triton()
    assert back.kwargs == {"BLOCK_M": 64, "waves_per_eu": 2}
    assert (back.num_warps, back.num_stages, back.num_ctas, back.maxnreg) == (8, 2, 1, 128)


@given(
    st.dictionaries(st.sampled_from(["BLOCK_M", "BLOCK_N", "GROUP_M", "EVEN_K"]), st.integers(1, 512), max_size=4),
    st.sampled_from([1, 2, 4, 8, 16]),
    st.integers(1, 6),
)
def test_dict_round_trip(constexprs, warps, stages):
    values = {**constexprs, "num_warps": warps, "num_stages": stages}
    config = KernelConfig.from_dict(values)
    assert config.to_dict() == values
    assert KernelConfig.from_triton(config.to_triton()).to_dict() == {**values, "num_ctas": 1}


def test_namespace_fills_backend_defaults_and_derived_views():
    ns = KernelConfig.from_dict({"BLOCK_M": 96, "GROUP_SIZE_M": 8, "kpack": 2}).namespace("nvidia")
    assert ns["num_warps"] == 4 and ns["num_stages"] == 3 and ns["num_ctas"] == 1
    assert ns["blocks"] == {"BLOCK_M": 96}
    assert ns["amd_options"] == {"kpack": 2}
    assert KernelConfig().namespace("amd")["num_stages"] == 2


@pytest.mark.parametrize("name", ["BLOCK_M", "BLOCK_SIZE", "BLOCK_SIZE_N", "XBLOCK", "R0_BLOCK", "BM", "TILE_K", "block_k"])
def test_block_size_names(name):
    assert is_block_size_name(name)


@pytest.mark.parametrize("name", ["NUM_BLOCKS", "GROUP_SIZE_M", "num_warps", "EVEN_K", "N_BLOCK_ROWS", "STRIDE"])
def test_not_block_size_names(name):
    assert not is_block_size_name(name)
