"""End-to-end tests of the installed ``kernelrules`` command, with golden snapshots.

Set ``KERNELRULES_UPDATE_SNAPSHOTS=1`` to rewrite the snapshots after an intended change.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SNAPSHOTS = Path(__file__).parent.parent / "snapshots"


def assert_snapshot(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("KERNELRULES_UPDATE_SNAPSHOTS") or not path.exists():
        path.write_text(text)
    assert text == path.read_text(), f"output differs from {path}; rerun with KERNELRULES_UPDATE_SNAPSHOTS=1 if intended"


def test_version(run_cli):
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.startswith("kernelrules 0.")


@pytest.mark.parametrize(
    "name,optin,warps",
    [("ada", 101376, 48), ("hopper", 232448, 64), ("sm_80", 166912, 64), ("rtx4090", 101376, 48), ("h200", 232448, 64)],
)
def test_arch_show_json(run_cli, name, optin, warps):
    result = run_cli("arch", "show", name, "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["shared_memory_per_block_optin"] == optin
    assert data["max_warps_per_sm"] == warps
    assert data["waves_per_eu_supported"] is False
    for key in ("name", "compute_capability", "warp_size", "max_threads_per_sm", "max_blocks_per_sm",
                "registers_per_sm", "max_registers_per_thread", "shared_memory_per_sm", "shared_memory_per_block",
                "reserved_shared_memory_per_block", "shared_memory_banks", "bank_width_bytes"):
        assert key in data


def test_arch_list_snapshot(run_cli):
    result = run_cli("arch", "list")
    assert result.returncode == 0
    assert_snapshot("arch_list.txt", result.stdout)


def test_rules_list_snapshot(run_cli):
    result = run_cli("rules", "list")
    assert result.returncode == 0
    assert_snapshot("rules_list.txt", result.stdout)


def test_rules_show(run_cli):
    result = run_cli("rules", "show", "CFG004")
    assert result.returncode == 0
    assert_snapshot("rules_show_CFG004.txt", result.stdout)
    assert run_cli("rules", "show", "amd-only-option-on-nvidia").stdout == result.stdout


def test_rules_list_and_show_the_lint_codes(run_cli):
    listed = {r["code"]: r for r in json.loads(run_cli("rules", "list", "--format", "json").stdout)}
    assert listed["LNT006"]["name"] == "autotune-side-effect" and listed["LNT006"]["stage"] == "lint"
    assert listed["LNT006"]["severity"] == "error" and "CFG004" in listed
    shown = run_cli("rules", "show", "autotune-side-effect")
    assert shown.returncode == 0 and shown.stdout.startswith("LNT006 autotune-side-effect (error")


def test_check_config_rejects_waves_per_eu_on_hopper(run_cli):
    result = run_cli("check-config", "--arch", "hopper", "waves_per_eu=2", "num_warps=8")
    assert result.returncode == 1
    assert_snapshot("check_config_waves_per_eu.txt", result.stdout)
    data = json.loads(run_cli("check-config", "--arch", "hopper", "waves_per_eu=2", "num_warps=8", "--format", "json").stdout)
    assert data["verdict"] == "reject"
    assert any("waves_per_eu" in d["message"] for d in data["diagnostics"])
    assert set(data["diagnostics"][0]) >= {"code", "name", "severity", "message"}


def test_check_config_exit_codes(run_cli):
    assert run_cli("check-config", "--arch", "hopper", "num_warps=3").returncode == 1
    passed = run_cli("check-config", "--arch", "ada", "BLOCK_M=128", "BLOCK_N=64", "num_warps=4", "--format", "json")
    assert passed.returncode == 0
    assert json.loads(passed.stdout) ["verdict"] == "pass"


@pytest.mark.parametrize(
    "args,fragment",
    [
        (("check-config", "--arch", "adaa", "num_warps=4"), "did you mean"),
        (("check-config", "--arch", "ada", "num_warps"), "KEY=VALUE"),
        (("check-config", "--arch", "ada", "num_warps=four"), "num_warps must be an integer"),
        (("arch", "show", "sm_99"), "unknown architecture"),
        (("rules", "show", "CFG999"), "unknown rule"),
        (("arch", "show", "ada", "--arch-file", "missing.yaml"), "missing.yaml"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, args, fragment):
    result = run_cli(*args)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert fragment in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_malformed_arch_file_names_file_and_line(run_cli, tmp_path):
    bad = tmp_path / "mine.yaml"
    bad.write_text("family: mine\nvendor: nvidia\narchitectures: [\n")
    result = run_cli("arch", "show", "ada", "--arch-file", str(bad))
    assert result.returncode == 2
    assert "mine.yaml:" in result.stderr and "Traceback" not in result.stderr


def test_the_command_line_collects_rarely_and_skips_the_last_full_collection(monkeypatch):
    """``main`` raises the collector's thresholds for its own process, and freezes what is left when the
    command ends (even by ``sys.exit``), so the interpreter's last collection does not walk the cached trees."""
    import gc

    import pytest as _pytest

    from kernelrules import cli

    seen: dict[str, object] = {}

    def fake_app() -> None:
        seen["thresholds"] = gc.get_threshold()
        raise SystemExit(1)

    monkeypatch.setattr(cli, "app", fake_app)
    monkeypatch.setattr(gc, "freeze", lambda: seen.setdefault("frozen", seen.get("thresholds")))
    before = gc.get_threshold()
    try:
        with _pytest.raises(SystemExit):
            cli.main()
    finally:
        gc.set_threshold(*before)
    assert seen["thresholds"] == cli.GC_THRESHOLDS == (100_000, 50, 100)
    assert seen["frozen"] == cli.GC_THRESHOLDS  # frozen after the command ran
