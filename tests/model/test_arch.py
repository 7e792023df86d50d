"""Architecture profiles: values, name resolution, located errors, user profiles, cross-checks.

The cross-checks compare the profiles with the Triton 3.6.0 wheel installed here: the
compiler options it parses per target, and the CUDA occupancy calculator header it ships
(compiled with the host C++ compiler and queried per compute capability).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import textwrap
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
import yaml

from kernelrules import arch as arch_module
from kernelrules.arch import MEASURED, known_names, list_archs, list_skus, load_arch
from kernelrules.arch_names import normalize, parse_compute_capability
from kernelrules.errors import ProfileError, UnknownArchError

PROFILE_DIR = resources.files("kernelrules.arch_profiles")
PROFILES = {p.name: yaml.safe_load(p.read_text(encoding="utf-8")) for p in PROFILE_DIR.iterdir() if p.name.endswith(".yaml")}
SCHEMA = json.loads(resources.files("kernelrules.schemas").joinpath("arch_profile.schema.json").read_text(encoding="utf-8"))


def _architectures():
    for data in PROFILES.values():
        yield from data["architectures"].items()


# -- acceptance values ---------------------------------------------------------------

# name -> (max_warps_per_sm, max_threads_per_sm, max_blocks_per_sm, shared_memory_per_sm, optin)
CCCL_LIMITS = {
    "sm_80": (64, 2048, 32, 167936, 166912),
    "sm_86": (48, 1536, 16, 102400, 101376),
    "sm_89": (48, 1536, 24, 102400, 101376),
    "sm_90": (64, 2048, 32, 233472, 232448),
    "sm_100": (64, 2048, 32, 233472, 232448),
    "sm_120": (48, 1536, 24, 102400, 101376),
}


def test_acceptance_values():
    assert load_arch("ada").limits["shared_memory_per_block_optin"] == 101376
    assert load_arch("ada").limits["max_warps_per_sm"] == 48
    assert load_arch("hopper").limits["shared_memory_per_block_optin"] == 232448
    assert load_arch("hopper").limits["max_warps_per_sm"] == 64
    assert load_arch("sm_80").limits["shared_memory_per_block_optin"] == 166912


@pytest.mark.parametrize("name", sorted(CCCL_LIMITS))
def test_per_capability_limits_match_cccl(name):
    """The per-SM limits of NVIDIA's arch_traits.h table, and the values shared by all four."""
    flat = load_arch(name).flat()
    got = tuple(flat[k] for k in ("max_warps_per_sm", "max_threads_per_sm", "max_blocks_per_sm",
                                  "shared_memory_per_sm", "shared_memory_per_block_optin"))
    assert got == CCCL_LIMITS[name]
    common = {
        "warp_size": 32, "max_threads_per_block": 1024, "registers_per_sm": 65536, "registers_per_block": 65536,
        "max_registers_per_thread": 255, "register_allocation_unit": 256, "register_allocation_granularity": "warp",
        "register_sub_partitions": 4, "shared_memory_per_block": 49152, "reserved_shared_memory_per_block": 1024,
        "shared_memory_allocation_granularity": 128, "shared_memory_banks": 32, "bank_width_bytes": 4,
    }
    assert {k: flat[k] for k in common} == common


def test_hopper_and_ada_features():
    ada, hopper, ampere = load_arch("ada").features, load_arch("hopper").features, load_arch("ampere").features
    assert (ampere["wgmma"], ada["wgmma"], hopper["wgmma"]) == (False, False, True)
    assert hopper["triton_target"] == "sm_90a" and ada["triton_target"] == "sm_89"
    assert "fp8e4nv" in ada["fp8_dtypes"] and "fp8e4nv" not in ampere["fp8_dtypes"]
    assert not ampere["fp8_mma_dtypes"] and set(ada["fp8_mma_dtypes"]) == {"fp8e4nv", "fp8e5"}
    assert (ada["max_num_ctas"], hopper["max_num_ctas"]) == (1, 8)
    assert not any(a.features["waves_per_eu_supported"] for a in list_archs() if a.vendor == "nvidia")


def test_h200_uses_the_measured_figures():
    h200 = load_arch("h200")
    assert (h200.sku_data["sm_count"], h200.sku_data["l2_bytes"]) == (132, 62914560)
    for key in ("sm_count", "l2_bytes"):
        assert h200.sources[key].startswith(MEASURED)
    assert "232448" in h200.sources["shared_memory_per_block_optin"]


# -- name resolution -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name,expected,sku",
    [
        ("ampere", "sm_80", None), ("ada", "sm_89", None), ("hopper", "sm_90", None),
        ("sm_86", "sm_86", None), ("sm86", "sm_86", None), ("8.6", "sm_86", None), ("cc86", "sm_86", None),
        ("SM_90a", "sm_90", None), ("compute_89", "sm_89", None), ("  Ada  ", "sm_89", None),
        ("rtx4090", "sm_89", "rtx4090"), ("4090", "sm_89", "rtx4090"), ("GeForce RTX 4090", "sm_89", "rtx4090"),
        ("l4", "sm_89", "l4"), ("L40S", "sm_89", "l40s"), ("a100", "sm_80", "a100-80gb-sxm"),
        ("a10", "sm_86", "a10"), ("a40", "sm_86", "a40"), ("rtx3090", "sm_86", "rtx3090"),
        ("h100", "sm_90", "h100-sxm"), ("h100-sxm", "sm_90", "h100-sxm"), ("H100_PCIe", "sm_90", "h100-pcie"),
        ("h200", "sm_90", "h200"),
        ("blackwell", "sm_100", None), ("sm100a", "sm_100", None), ("10.0", "sm_100", None), ("b200", "sm_100", "b200"),
        ("sm_120a", "sm_120", None), ("cc12.0", "sm_120", None), ("rtx5090", "sm_120", "rtx5090"),
        ("RTX 5090", "sm_120", "rtx5090"), ("5090", "sm_120", "rtx5090"),
    ],
)
def test_names_resolve(name, expected, sku):
    arch = load_arch(name)
    assert (arch.name, arch.sku) == (expected, sku)


def _declared_aliases():
    for arch_name, spec in _architectures():
        for alias in [arch_name, spec["compute_capability"], *spec["aliases"]]:
            yield pytest.param(alias, arch_name, None, id=f"{arch_name}:{alias}")
        for sku, sku_spec in spec.get("skus", {}).items():
            for alias in [sku, *sku_spec["aliases"]]:
                yield pytest.param(alias, arch_name, sku, id=f"{arch_name}/{sku}:{alias}")


@pytest.mark.parametrize("alias,arch_name,sku", list(_declared_aliases()))
def test_every_declared_alias_resolves_to_its_own_target(alias, arch_name, sku):
    arch = load_arch(alias)
    assert (arch.name, arch.sku) == (arch_name, sku)
    assert load_arch(alias.upper()) is arch


def test_known_names_cover_every_alias():
    names = known_names()
    assert names["rtx4090"].sku == "rtx4090" and names["hopper"].arch == "sm_90"


def test_compute_capability_forms():
    assert parse_compute_capability("sm_90a") == "9.0"
    assert parse_compute_capability("8.9") == "8.9"
    assert parse_compute_capability("cc_10.0") == "10.0"
    assert parse_compute_capability("4090") is None  # a bare number is not a capability
    assert normalize(" H100 SXM_5 ") == "h100sxm5"


def test_unknown_name_suggests_close_matches():
    with pytest.raises(UnknownArchError) as info:
        load_arch("adaa")
    assert str(info.value) == "unknown architecture 'adaa' (did you mean: ada, ada-lovelace? see 'kernelrules arch list')"


def test_unknown_name_without_close_match_points_to_the_list():
    with pytest.raises(UnknownArchError, match=r"unknown architecture 'zzzz' \(see 'kernelrules arch list'\)"):
        load_arch("zzzz")


def test_capability_without_profile_is_named():
    with pytest.raises(UnknownArchError, match=r"unknown architecture 'sm_87': no profile for compute capability 8\.7 "
                       r"\(profiles exist for 8\.0, 8\.6, 8\.9, 9\.0, 10\.0, 12\.0; see 'kernelrules arch list'\)"):
        load_arch("sm_87")


# -- user profiles (--arch-file) ------------------------------------------------------

USER_PROFILE = """\
family: orin
vendor: nvidia
sources:
  CCCL: "NVIDIA/cccl libcudacxx/include/cuda/__device/arch_traits.h, arch_traits<arch_id::sm_87>()"
  ME: "my own notes about this board, page 3"
architectures:
  sm_87:
    compute_capability: "8.7"
    aliases: [orin, jetson-orin]
    limits:
      warp_size: {value: 32, source: "CCCL warp_size"}
      max_warps_per_sm: {value: 48, source: "CCCL 1536 / 32"}
      max_threads_per_sm: {value: 1536, source: "CCCL max_threads_per_multiprocessor"}
      max_blocks_per_sm: {value: 16, source: "CCCL max_blocks_per_multiprocessor"}
      max_threads_per_block: {value: 1024, source: "CCCL max_threads_per_block"}
      registers_per_sm: {value: 65536, source: "CCCL max_registers_per_multiprocessor"}
      registers_per_block: {value: 65536, source: "CCCL max_registers_per_block"}
      max_registers_per_thread: {value: 255, source: "CCCL max_registers_per_thread"}
      register_allocation_unit: {value: 256, source: "ME allocation unit"}
      register_allocation_granularity: {value: warp, source: "ME granularity"}
      register_sub_partitions: {value: 4, source: "ME sub-partitions"}
      shared_memory_per_sm: {value: 167936, source: "CCCL 164 KiB"}
      shared_memory_per_block: {value: 49152, source: "CCCL 48 KiB"}
      shared_memory_per_block_optin: {value: 166912, source: "CCCL 164 KiB - 1 KiB"}
      reserved_shared_memory_per_block: {value: 1024, source: "CCCL reserved"}
      shared_memory_allocation_granularity: {value: 128, source: "ME granularity"}
      shared_memory_carveout_steps: {value: [0, 8192, 16384, 32768, 65536, 102400, 135168, 167936], source: "ME carveout"}
      shared_memory_banks: {value: 32, source: "ME banks"}
      bank_width_bytes: {value: 4, source: "ME bank width"}
    features:
      triton_target: {value: sm_87, source: "ME target"}
      mma_sync_shapes: {value: [m16n8k16], source: "measured: my cross-compile"}
      wgmma: {value: false, source: "ME no wgmma"}
      fp8_dtypes: {value: [fp8e4b15, fp8e5], source: "ME fp8"}
      fp8_mma_dtypes: {value: [], source: "ME fp8 mma"}
      fp8_tensor_cores: {value: false, source: "ME fp8 tensor cores"}
      tf32: {value: true, source: "ME tf32"}
      bf16: {value: true, source: "ME bf16"}
      cp_async: {value: true, source: "CCCL cp_async_supported"}
      tma: {value: false, source: "CCCL tma_supported"}
      clusters: {value: false, source: "CCCL cluster_supported"}
      max_num_ctas: {value: 1, source: "ME ctas"}
      waves_per_eu_supported: {value: false, source: "ME waves"}
    skus:
      agx-orin-64gb:
        display_name: Jetson AGX Orin 64GB
        aliases: [agx-orin]
        sm_count: {value: 16, source: "ME SMs"}
        l2_bytes: {value: 4194304, source: "ME L2"}
        dram_bandwidth_gbps: {value: 204.8, source: "ME bandwidth"}
        fp16_tensor_tflops_dense: {value: 42.5, source: "ME fp16"}
        bf16_tensor_tflops_dense: {value: 42.5, source: "ME bf16"}
        fp32_tflops: {value: 5.3, source: "ME fp32"}
"""


def _write(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _line_of(text: str, needle: str) -> int:
    """1-based line of the first line containing ``needle``."""
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_user_profile_loads_and_resolves(tmp_path):
    path = _write(tmp_path, USER_PROFILE)
    orin = load_arch("orin", extra_files=[path])
    assert (orin.name, orin.family, orin.limits["max_blocks_per_sm"]) == ("sm_87", "orin", 16)
    assert load_arch("8.7", extra_files=[str(path)]) is orin
    board = load_arch("AGX Orin", extra_files=[path])
    assert (board.sku, board.sku_data["sm_count"]) == ("agx-orin-64gb", 16)
    assert [a.name for a in list_archs(extra_files=[path]) if a.vendor == "nvidia"] == ["sm_80", "sm_86", "sm_87", "sm_89", "sm_90",
                                                                                       "sm_100", "sm_120"]
    assert "agx-orin-64gb" in [a.sku for a in list_skus(extra_files=[path])]
    assert [a.name for a in list_archs() if a.vendor == "nvidia"] == ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100",
                                                                    "sm_120"]  # built-ins unchanged


def test_user_profile_edits_are_picked_up(tmp_path):
    path = _write(tmp_path, USER_PROFILE)
    assert load_arch("orin", extra_files=[path]).limits["max_blocks_per_sm"] == 16
    path.write_text(USER_PROFILE.replace("max_blocks_per_sm: {value: 16", "max_blocks_per_sm: {value: 24"), encoding="utf-8")
    assert load_arch("orin", extra_files=[path]).limits["max_blocks_per_sm"] == 24


def test_missing_user_profile_names_the_file(tmp_path):
    with pytest.raises(ProfileError, match="nope.yaml: architecture profile file not found"):
        load_arch("ada", extra_files=[tmp_path / "nope.yaml"])


def _at(needle: str, offset: int = 0):
    """The expected error line: where ``needle`` first occurs in the edited text, plus ``offset``."""
    return lambda text: _line_of(text, needle) + offset


# Each case: (edit applied to USER_PROFILE, where the error must point, message fragment).
MALFORMED = {
    "missing key": (
        lambda t: t.replace('      warp_size: {value: 32, source: "CCCL warp_size"}\n', ""),
        _at("    limits:"), "'warp_size' is a required property",
    ),
    "wrong type": (
        lambda t: t.replace("max_blocks_per_sm: {value: 16,", 'max_blocks_per_sm: {value: "16",'),
        _at("max_blocks_per_sm:"), "is not of type 'integer'",
    ),
    "unknown key": (
        lambda t: t.replace("      bank_width_bytes:", "      bank_widht_bytes:"),
        _at("bank_widht_bytes"), "'bank_widht_bytes' was unexpected",
    ),
    "unknown key in entry": (
        lambda t: t.replace('tf32: {value: true, source: "ME tf32"}', 'tf32: {value: true, sourse: "ME tf32"}'),
        _at("tf32:"), "sourse",
    ),
    "unquoted numeric alias": (
        lambda t: t.replace("aliases: [agx-orin]", "aliases: [4090]"),
        _at("aliases: [4090]"), "is not of type 'string'",
    ),
    "bad source tag": (
        lambda t: t.replace('source: "CCCL 1536 / 32"', 'source: "CCLC 1536 / 32"'),
        _at("max_warps_per_sm:"), "source must start with a tag from 'sources' (CCCL, ME)",
    ),
    "inconsistent limits": (
        lambda t: t.replace("max_threads_per_sm: {value: 1536,", "max_threads_per_sm: {value: 2048,"),
        _at("max_threads_per_sm:"), "must equal max_warps_per_sm * warp_size",
    ),
    "optin above per-SM": (
        lambda t: t.replace("shared_memory_per_block_optin: {value: 166912,", "shared_memory_per_block_optin: {value: 167936,"),
        _at("shared_memory_per_block_optin:"), "must not exceed shared_memory_per_sm",
    ),
    "carveout steps in KiB": (
        lambda t: t.replace("[0, 8192, 16384, 32768, 65536, 102400, 135168, 167936]", "[0, 8, 16, 32, 64, 100, 132, 164]"),
        _at("shared_memory_carveout_steps:"), "must end at shared_memory_per_sm",
    ),
    "name does not match capability": (
        lambda t: t.replace('compute_capability: "8.7"', 'compute_capability: "8.8"'),
        _at("compute_capability:"), "'sm_87' does not match compute capability 8.8",
    ),
    "fp8 mma outside fp8 dtypes": (
        lambda t: t.replace("fp8_mma_dtypes: {value: []", "fp8_mma_dtypes: {value: [fp8e4nv]"),
        _at("fp8_mma_dtypes:"), "must be a subset of fp8_dtypes",
    ),
    "bad YAML syntax": (
        lambda t: t.replace("      tma: {value: false,", "      tma: {value: false,,"),
        _at("tma:"), "invalid YAML",
    ),
    "duplicate key": (
        lambda t: t.replace("      tma: {value: false", '      tf32: {value: false, source: "ME again"}\n      tma: {value: false'),
        _at("tma:", -1), "duplicate key 'tf32'",
    ),
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_profile_names_file_line_and_key(tmp_path, case):
    edit, expected_line, fragment = MALFORMED[case]
    text = edit(USER_PROFILE)
    assert text != USER_PROFILE
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError) as info:
        load_arch("ada", extra_files=[path])
    error, line = info.value, expected_line(text)
    assert (error.path, error.line) == (str(path), line), str(error)
    assert fragment in str(error)
    assert "\n" not in str(error)
    assert str(error).startswith(f"{path}:{line}")


def test_schema_error_names_the_key_path(tmp_path):
    path = _write(tmp_path, MALFORMED["wrong type"][0](USER_PROFILE))
    with pytest.raises(ProfileError, match=r"at 'architectures\.sm_87\.limits\.max_blocks_per_sm\.value'"):
        load_arch("ada", extra_files=[path])


def test_alias_defined_in_two_files_is_a_load_error(tmp_path):
    text = USER_PROFILE.replace("aliases: [orin, jetson-orin]", "aliases: [orin, rtx-4090]")
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError, match=r"alias 'rtx-4090' is already defined in .*ada\.yaml") as info:
        load_arch("orin", extra_files=[path])
    assert (info.value.path, info.value.line) == (str(path), _line_of(text, "aliases: [orin, rtx-4090]"))


def test_redefining_a_builtin_capability_is_a_load_error(tmp_path):
    text = USER_PROFILE.replace("  sm_87:", "  sm_89:").replace('"8.7"', '"8.9"').replace("[orin, jetson-orin]", "[orin]")
    path = _write(tmp_path, text)
    with pytest.raises(ProfileError, match=r"architecture 'sm_89' is already defined in .*ada\.yaml") as info:
        load_arch("orin", extra_files=[path])
    assert info.value.line == _line_of(text, "  sm_89:")


def test_alias_shaped_like_a_capability_is_rejected(tmp_path):
    path = _write(tmp_path, USER_PROFILE.replace("[orin, jetson-orin]", "[orin, sm88]"))
    with pytest.raises(ProfileError, match="alias 'sm88' looks like a compute-capability name"):
        load_arch("orin", extra_files=[path])


def test_alias_of_two_targets_in_one_file_is_ambiguous(tmp_path):
    second_sku = textwrap.indent(
        textwrap.dedent(
            """\
            agx-orin-32gb:
              display_name: Jetson AGX Orin 32GB
              aliases: [agx-orin]
              sm_count: {value: 14, source: "ME SMs"}
              l2_bytes: {value: 4194304, source: "ME L2"}
              dram_bandwidth_gbps: {value: 204.8, source: "ME bandwidth"}
              fp16_tensor_tflops_dense: {value: 30, source: "ME fp16"}
              bf16_tensor_tflops_dense: {value: 30, source: "ME bf16"}
              fp32_tflops: {value: 4, source: "ME fp32"}
            """
        ),
        "      ",
    )
    path = _write(tmp_path, USER_PROFILE + second_sku)
    with pytest.raises(UnknownArchError, match=r"ambiguous architecture 'agx-orin' .*agx-orin-64gb, agx-orin-32gb"):
        load_arch("agx-orin", extra_files=[path])
    assert load_arch("agx-orin-32gb", extra_files=[path]).sku_data["sm_count"] == 14


# -- flat() and namespace() -----------------------------------------------------------

REQUIRED_FLAT_INTS = (
    "warp_size", "max_warps_per_sm", "max_threads_per_sm", "max_blocks_per_sm", "registers_per_sm",
    "max_registers_per_thread", "shared_memory_per_sm", "shared_memory_per_block", "shared_memory_per_block_optin",
    "reserved_shared_memory_per_block", "shared_memory_banks", "bank_width_bytes", "sm",
)


@pytest.mark.parametrize("arch", list_archs() + list_skus(), ids=lambda a: a.label)
def test_flat_is_plain_json_with_the_required_keys(arch):
    flat = arch.flat()
    for key in REQUIRED_FLAT_INTS:
        assert type(flat[key]) is int, key
    assert type(flat["waves_per_eu_supported"]) is bool
    assert flat["name"] == arch.name and flat["compute_capability"] == arch.compute_capability
    assert {"vendor", "family", "aliases", "skus", "sku"} <= set(flat)
    assert set(arch.limits) | set(arch.features) <= set(flat)
    assert json.loads(json.dumps(flat)) == flat  # JSON-ready: no tuples, mappings or other objects
    assert all(not isinstance(v, (tuple, dict)) for v in flat.values())
    if arch.sku:
        assert {"sm_count", "l2_bytes", "dram_bandwidth_gbps", "fp16_tensor_tflops_dense"} <= set(flat)
        assert type(flat["sm_count"]) is int and type(flat["l2_bytes"]) is int


def test_every_flat_field_has_a_source():
    for arch in list_archs() + list_skus():
        identity = {"name", "compute_capability", "sm", "vendor", "family", "display_name", "aliases", "skus", "sku",
                    "sku_display_name", "sku_aliases", "backend"}
        assert set(arch.flat()) - identity == set(arch.sources), arch.label


def test_namespace_is_cached_and_flat():
    arch = load_arch("ada")
    assert arch.namespace() is arch.namespace()
    assert arch.namespace() == arch.flat()
    assert load_arch("ada") is arch  # profiles are parsed once


def test_arch_is_immutable_and_hashable():
    arch = load_arch("rtx4090")
    with pytest.raises(dataclasses.FrozenInstanceError):
        arch.name = "sm_80"  # type: ignore[misc]
    with pytest.raises(TypeError):
        arch.limits["warp_size"] = 64  # type: ignore[index]
    assert {arch, load_arch("4090")} == {arch}
    assert arch != load_arch("ada") and arch.label == "sm_89 (rtx4090)"


def test_citation_expands_the_source_tag():
    text = load_arch("ada").citation("max_warps_per_sm")
    assert text.startswith("CCCL arch_traits<arch_id::sm_89>()") and "NVIDIA/cccl" in text


def test_unverified_figures_are_declared():
    """The figures no document confirmed; keep this list in sync with docs/arch-profiles.md."""
    unverified = {(a.sku, k) for a in list_skus() for k in a.unverified() if k in (a.sku_data or {})}
    assert unverified == {
        ("a10", "fp16_tensor_tflops_dense"), ("a10", "bf16_tensor_tflops_dense"),
        ("rtx3090", "fp16_tensor_tflops_dense"), ("rtx3090", "bf16_tensor_tflops_dense"),
        ("l40s", "l2_bytes"),
        ("h200", "fp16_tensor_tflops_dense"), ("h200", "bf16_tensor_tflops_dense"),
        ("b200", "l2_bytes"),
        ("rtx5090", "fp16_tensor_tflops_dense"), ("rtx5090", "bf16_tensor_tflops_dense"),
        ("mi300a", "fp16_tensor_tflops_dense"), ("mi300a", "bf16_tensor_tflops_dense"), ("mi300a", "fp32_tflops"),
        ("mi325x", "fp16_tensor_tflops_dense"), ("mi325x", "bf16_tensor_tflops_dense"), ("mi325x", "fp32_tflops"),
    }
    assert not any(a.unverified() for a in list_archs() if a.vendor == "nvidia")
    assert load_arch("gfx942").unverified() == ["shared_memory_banks", "bank_width_bytes"]


# -- the profile files and the schema ---------------------------------------------------


def _numeric_leaves(node, path=()):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _numeric_leaves(value, path + (key,))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _numeric_leaves(value, path + (i,))
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path


@pytest.mark.parametrize("file_name", sorted(PROFILES))
def test_every_numeric_leaf_has_a_source(file_name):
    data = PROFILES[file_name]
    for path in _numeric_leaves(data["architectures"]):
        value_at = path.index("value") if "value" in path else None
        assert value_at is not None, f"{file_name}: bare number at {path}"
        entry = data["architectures"]
        for key in path[:value_at]:
            entry = entry[key]
        assert set(entry) == {"value", "source"}, path
        source = entry["source"]
        assert source.startswith(MEASURED) or source.split()[0] in data["sources"], path


def test_schema_is_valid_and_profiles_conform():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft202012Validator(SCHEMA)
    for name, data in PROFILES.items():
        assert not list(validator.iter_errors(data)), name


@pytest.mark.parametrize(
    "where",
    [(), ("architectures", "sm_89"), ("architectures", "sm_89", "limits"), ("architectures", "sm_89", "features"),
     ("architectures", "sm_89", "skus", "l4"), ("architectures", "sm_89", "limits", "warp_size")],
)
def test_schema_rejects_unknown_keys(where):
    data = yaml.safe_load(yaml.safe_dump(PROFILES["ada.yaml"]))
    node = data
    for key in where:
        node = node[key]
    node["typo_key"] = {"value": 1, "source": "CCCL x"}
    errors = list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(data))
    assert any("typo_key" in e.message for e in errors)


def test_flat_keys_do_not_collide():
    """limits, features and SKU fields share one flat namespace, so their names must be distinct."""
    defs = SCHEMA["$defs"]
    groups = [set(defs["limits"]["properties"]), set(defs["features"]["properties"]), set(defs["sku"]["properties"])]
    identity = {"name", "compute_capability", "sm", "vendor", "family", "display_name", "aliases", "skus", "sku",
                "sku_display_name", "sku_aliases", "backend"}
    groups[2] -= {"display_name", "aliases"}  # exposed as sku_display_name / sku_aliases
    total = sum(len(g) for g in groups) + len(identity)
    assert len(set().union(*groups, identity)) == total


def test_profiles_are_read_once_per_process():
    """The built-in profiles are parsed once and then served from memory (their load time is measured by
    benchmarks/bench_arch_load.py, not asserted here: a timed unit test fails on a loaded machine)."""
    for cached in (arch_module._registry, arch_module._parsed, arch_module._located, arch_module._builtin_sources):
        cached.cache_clear()
    first = list_archs()
    misses = arch_module._builtin_sources.cache_info().misses
    assert list_archs() == first and arch_module._builtin_sources.cache_info().misses == misses


def test_arch_module_imports_no_engine_or_cli():
    code = "import json, sys, kernelrules.arch; print(json.dumps([m for m in sys.modules if m.startswith('kernelrules')]))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert not {"kernelrules.judge.engine", "kernelrules.cli", "kernelrules.rules"} & set(json.loads(loaded))


# -- cross-checks against the installed Triton 3.6.0 wheel ----------------------------

triton = pytest.importorskip("triton")
nvidia_compiler = pytest.importorskip("triton.backends.nvidia.compiler")


NVIDIA_ARCHS = [a for a in list_archs() if a.vendor == "nvidia"]


@pytest.mark.parametrize("arch", NVIDIA_ARCHS, ids=lambda a: a.name)
def test_features_match_triton_compiler_options(arch):
    from triton.backends.compiler import GPUTarget

    backend = nvidia_compiler.CUDABackend(GPUTarget("cuda", arch.sm, arch.limits["warp_size"]))
    options = backend.parse_options({})
    f = arch.features
    assert nvidia_compiler.sm_arch_from_capability(arch.sm) == f["triton_target"]
    assert sorted(options.supported_fp8_dtypes) == sorted(f["fp8_dtypes"])
    assert sorted(options.deprecated_fp8_dot_operand_dtypes) == sorted(f["deprecated_fp8_dot_operand_dtypes"])
    assert (options.num_warps, options.num_stages, options.warp_size) == (
        f["default_num_warps"], f["default_num_stages"], arch.limits["warp_size"])
    assert "waves_per_eu" not in {x.name for x in dataclasses.fields(options)}
    assert f["waves_per_eu_supported"] is False
    if f["max_num_ctas"] == 1:
        with pytest.raises(ValueError, match="num_ctas > 1"):
            backend.parse_options({"num_ctas": 2})
    else:
        assert backend.parse_options({"num_ctas": f["max_num_ctas"]}).num_ctas == f["max_num_ctas"]


def test_dot_limits_match_triton():
    import triton.language as tl
    from triton._utils import TRITON_MAX_TENSOR_NUMEL
    from triton.backends.compiler import GPUTarget

    for arch in NVIDIA_ARCHS:
        check = nvidia_compiler.min_dot_size(GPUTarget("cuda", arch.sm, 32))
        assert check(tl.float16, tl.float16)[2] == arch.features["min_dot_k"]
        assert check(tl.float8e5, tl.float8e5)[2] == arch.features["min_dot_k_8bit"]
        assert arch.features["max_tensor_numel"] == TRITON_MAX_TENSOR_NUMEL


OCC_PROGRAM = r"""
#include "cuda_occupancy.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    int major = atoi(argv[1]), minor = atoi(argv[2]);
    cudaOccDeviceProp p; p.computeMajor = major; p.computeMinor = minor;
    cudaOccFuncAttributes attr; attr.numBlockBarriers = 1;
    int blocks, smem_gran, reg_gran, subp, barriers;
    cudaOccMaxBlocksPerMultiprocessor(&blocks, &p);
    cudaOccSMemAllocationGranularity(&smem_gran, &p);
    cudaOccRegAllocationGranularity(&reg_gran, &p);
    cudaOccSubPartitionsPerMultiprocessor(&subp, &p);
    cudaOccMaxBlocksPerSMBlockBarrierLimit(&barriers, blocks, &p, &attr);
    printf("{\"max_blocks_per_sm\": %d, \"shared_memory_allocation_granularity\": %d, "
           "\"register_allocation_unit\": %d, \"register_sub_partitions\": %d, \"block_barriers_per_sm\": %d, "
           "\"shared_memory_carveout_steps\": [", blocks, smem_gran, reg_gran, subp, barriers);
    size_t last = (size_t)-1; int first = 1;
    for (size_t kib = 0; kib <= 256; ++kib) {
        size_t size = kib * 1024;
        if (cudaOccAlignUpShmemSizeVoltaPlus(&size, &p) != CUDA_OCC_SUCCESS) break;
        if (size != last) { printf(first ? "%zu" : ", %zu", size); first = 0; last = size; }
    }
    printf("]}\n");
    return 0;
}
"""


@pytest.fixture(scope="module")
def occupancy_probe(tmp_path_factory):
    """A binary built from Triton's bundled cuda_occupancy.h; skipped without a C++ compiler."""
    header = Path(triton.__file__).parent / "backends" / "nvidia" / "include" / "cuda_occupancy.h"
    compiler = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
    if not header.is_file() or compiler is None:
        pytest.skip("needs Triton's cuda_occupancy.h and a C++ compiler")
    work = tmp_path_factory.mktemp("occ")
    (work / "probe.cpp").write_text(OCC_PROGRAM)
    subprocess.run([compiler, "-I", str(header.parent), "probe.cpp", "-o", "probe"], cwd=work, check=True, timeout=120)
    return work / "probe"


@pytest.mark.parametrize("arch", NVIDIA_ARCHS, ids=lambda a: a.name)
def test_limits_match_the_cuda_occupancy_calculator(arch, occupancy_probe):
    major, minor = arch.compute_capability.split(".")
    result = json.loads(subprocess.run([str(occupancy_probe), major, minor], capture_output=True, text=True,
                                       check=True).stdout)
    assert {k: arch.flat()[k] for k in result} == result
    assert result["shared_memory_carveout_steps"][-1] == arch.limits["shared_memory_per_sm"]
