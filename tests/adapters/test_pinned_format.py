"""Pinned tables (kernelrules/pinned.py): schema errors, round trip, lookup, source hash, merge, pin merge/show."""

from __future__ import annotations

import copy
import json
import textwrap

import pytest

from kernelrules.errors import KernelrulesError
from kernelrules.pinned import (Entry, load_table, merge, normalize_dtype, pick, source_sha256, table_from_json)


def entry(arch="hopper", key=None, config=None, **extra):
    out = {"arch": arch, "key": key if key is not None else {"M": 32, "N": 32, "K": 32},
           "dtypes": {"a_ptr": "fp16", "b_ptr": "torch.float16", "c_ptr": "float16"},
           "config": config or {"BLOCK_M": 64, "num_warps": 4}}
    out.update(extra)
    return out


def table(*entries, name="matmul_kernel"):
    return {"format": "kernelrules-pinned", "version": 1, "kernel": {"name": name, "key": ["M", "N", "K"]},
            "entries": list(entries)}


def write(tmp_path, data, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2) if not isinstance(data, str) else data)
    return path


def test_round_trip_normalizes_arch_and_dtypes(tmp_path):
    path = write(tmp_path, table(entry(), entry(arch="ada", key={"M": 64, "N": 64, "K": 64})))
    loaded = load_table(path)
    assert [e.arch for e in loaded.entries] == ["sm_90", "sm_89"]
    assert loaded.entries[0].dtypes == {"a_ptr": "float16", "b_ptr": "float16", "c_ptr": "float16"}
    lines = path.read_text().splitlines()  # where each entry starts, for messages and lint
    assert [lines[e.line - 1].strip() + lines[e.line].strip()[:6] for e in loaded.entries] == ['{"arch"'] * 2
    loaded.save(tmp_path / "out.json")
    again = load_table(tmp_path / "out.json")
    assert again.to_json() == loaded.to_json()
    assert [e["arch"] for e in again.to_json()["entries"]] == ["sm_89", "sm_90"]  # sorted: tables diff cleanly


@pytest.mark.parametrize("data,fragment", [
    ("{not json", "t.json:1:2: not valid JSON"),
    (table(entry(config={"num_warps": "4"})), "t.json:13: invalid pinned table at 'entries.0.config.num_warps': '4' is not of type 'integer'"),
    (table(entry(arch="nosuch")), "t.json:13: entries.0.arch: unknown architecture 'nosuch'"),
    (table(entry(), entry(arch="sm_90")), "entries.1 pins the same launch as entries.0"),
    ({**table(entry()), "version": 2}, "pinned table version 2 is not supported"),
    ({**table(entry()), "extra": 1}, "invalid pinned table at '<top level>': Additional properties"),
    (table({"arch": "hopper", "config": {"num_warps": 4}}), "'key' is a required property"),
])
def test_load_errors_are_one_line_with_file_and_json_path(tmp_path, data, fragment):
    with pytest.raises(KernelrulesError) as caught:
        load_table(write(tmp_path, data))
    assert fragment in str(caught.value) and "\n" not in str(caught.value)


def test_lookup_exact_dtypes_first_then_an_entry_without_dtypes():
    any_dtype = entry(config={"BLOCK_M": 32, "num_warps": 4})
    del any_dtype["dtypes"]
    loaded = table_from_json(table(entry(), any_dtype))
    fp16 = {"a_ptr": "float16", "b_ptr": "float16", "c_ptr": "float16"}
    assert loaded.lookup("sm_90", {"M": 32, "N": 32, "K": 32}, fp16).config["BLOCK_M"] == 64
    assert loaded.lookup("sm_90", {"M": 32, "N": 32, "K": 32}, {"a_ptr": "float32"}).config["BLOCK_M"] == 32
    assert loaded.lookup("sm_90", {"M": 33, "N": 32, "K": 32}, fp16) is None
    assert loaded.lookup("sm_89", {"M": 32, "N": 32, "K": 32}, fp16) is None
    assert normalize_dtype("*fp8e4nv") == "float8_e4m3fn" and normalize_dtype("torch.bfloat16") == "bfloat16"


def test_source_hash_covers_the_def_only(tmp_path):
    body = "def k(x_ptr, BLOCK: tl.constexpr):\n    pass  # body\n"
    a = tmp_path / "a.py"
    a.write_text("import triton\n\n@triton.jit\n" + body)
    b = tmp_path / "b.py"
    b.write_text("import triton\nX = 1\n\n\n@triton.autotune(configs=[], key=['n'])\n@triton.jit\n" +
                 body.replace("\n", "   \n"))  # decorators, position and trailing spaces do not count
    c = tmp_path / "c.py"
    c.write_text("class C:\n" + textwrap.indent("@triton.jit\n" + body.replace("body", "changed"), "    "))
    assert source_sha256(a, "k") == source_sha256(b, "k") != source_sha256(c, "k")
    with pytest.raises(KernelrulesError, match="no function 'nope'"):
        source_sha256(a, "nope")


def _entry(ms, gpu="NVIDIA H200", date="2025-01-01T00:00:00Z", sha="a" * 64, block=64, interpret=False):
    return Entry(arch="sm_90", key={"M": 1}, config={"BLOCK_M": block}, source_sha256=sha,
                 provenance={"by": "t", "date": date, "gpu": gpu, "ms": ms, "interpret": interpret})


def test_pick_faster_on_the_same_gpu_and_source_else_newer_else_later():
    assert pick(_entry(2.0), _entry(1.0, block=32)) == (_entry(1.0, block=32), "faster")
    newer = _entry(5.0, gpu="NVIDIA A100", date="2025-02-01T00:00:00Z", block=32)
    assert pick(_entry(1.0), newer) == (newer, "newer")  # another GPU: times are not compared
    changed = _entry(9.0, sha="b" * 64, date="2025-03-01T00:00:00Z", block=16)
    assert pick(_entry(1.0), changed) == (changed, "newer")  # another source version: the newer measurement
    assert pick(_entry(1.0, interpret=True), _entry(2.0, interpret=True, block=32))[1] == "later"


def test_merge_counts_and_refuses_another_kernel(tmp_path):
    a = table_from_json(table(entry(provenance={"by": "x", "date": "2025-01-01", "gpu": "G", "ms": 2.0})), "a.json")
    b_data = table(entry(config={"BLOCK_M": 32, "num_warps": 4},
                         provenance={"by": "x", "date": "2025-01-01", "gpu": "G", "ms": 1.0}),
                   entry(arch="ada"))
    b = table_from_json(b_data, "b.json")
    result = merge([a, b, copy.deepcopy(b)])
    assert len(result.table.entries) == 2 and result.identical == 2 and len(result.conflicts) == 1
    assert result.table.lookup("sm_90", {"M": 32, "N": 32, "K": 32}, None) is None
    assert [e.config["BLOCK_M"] for e in result.table.entries if e.arch == "sm_90"] == [32]
    assert "1 conflicting resolved: 1 by faster" in result.summary()
    with pytest.raises(KernelrulesError, match="pins kernel 'other'"):
        merge([a, table_from_json(table(entry(), name="other"), "o.json")])


def test_cli_pin_merge_and_show(run_cli, tmp_path):
    write(tmp_path, table(entry(provenance={"by": "x", "date": "2025-01-01", "gpu": "G", "ms": 2.0})), "a.json")
    write(tmp_path, table(entry(config={"BLOCK_M": 32, "num_warps": 4},
                                provenance={"by": "x", "date": "2025-01-01", "gpu": "G", "ms": 1.0})), "b.json")
    done = run_cli("pin", "merge", "out.json", "a.json", "b.json")
    assert done.returncode == 0, done.stderr
    assert "conflict sm_90 M=32, N=32, K=32" in done.stdout and "(faster: 1 ms against 2 ms)" in done.stdout
    assert load_table(tmp_path / "out.json").entries[0].config["BLOCK_M"] == 32
    again = run_cli("pin", "merge", "out.json", "a.json")
    assert again.returncode == 2 and "not overwriting" in again.stderr and "Traceback" not in again.stderr
    shown = run_cli("pin", "show", "out.json")
    assert shown.returncode == 0 and "BLOCK_M=32, num_warps=4; 1 ms" in shown.stdout
    write(tmp_path, table(entry(config={"num_warps": 0})), "bad.json")
    bad = run_cli("pin", "show", "bad.json")
    assert bad.returncode == 2 and bad.stderr.startswith("kernelrules: error: bad.json:13: invalid pinned table at "
                                                         "'entries.0.config.num_warps'")
