"""The disk store under both caches: sharding, atomic writes, corrupt = miss, and entries written before it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from kernelrules.compile.cache import ResultCache
from kernelrules.compile.diskstore import DiskStore, content_digest, triton_version
from kernelrules.lint.judgement_cache import JudgementCache

#: Entries written by the caches before they shared DiskStore (commit 6268dce); see test_entries_written_before_*.
OLD_ENTRIES = Path(__file__).parent.parent / "fixtures" / "diskstore"
OLD_KEY = "3f" + "a1" * 31


def test_entries_are_sharded_by_the_first_two_characters_of_the_key(tmp_path):
    store = DiskStore(tmp_path / "v1", ".krc")
    assert store.path("ab" * 32) == tmp_path / "v1" / "ab" / f"{'ab' * 32}.krc"
    assert store.path("cd" * 32, prefix="outcome-") == tmp_path / "v1" / "cd" / f"outcome-{'cd' * 32}.krc"
    assert store.put("ab" * 32, b"payload") and store.get("ab" * 32, bytes) == b"payload"
    assert [p.name for p in (tmp_path / "v1" / "ab").iterdir()] == [f"{'ab' * 32}.krc"]  # no temporary file left


def test_a_missing_unwritable_or_rejected_entry_is_a_miss(tmp_path):
    store = DiskStore(tmp_path, ".bin")
    assert store.get("ee" * 32, bytes) is None

    def reject(data: bytes) -> bytes:
        raise ValueError("bad magic")

    store.put("ee" * 32, b"junk")
    assert store.get("ee" * 32, reject) is None
    (tmp_path / "blocked").write_text("a file where the store wants a folder")
    assert not DiskStore(tmp_path / "blocked", ".bin").put("ee" * 32, b"x")


def test_json_entries_are_checked_against_their_name_and_checksum(tmp_path):
    store = DiskStore(tmp_path, ".json")
    assert store.put_json("12" * 32, {"n": 1}) and store.get_json("12" * 32) == {"n": 1}
    assert store.get_json("12" * 32, prefix="outcome-") is None
    path = store.path("12" * 32)
    doc = json.loads(path.read_text())
    assert doc == {"key": "12" * 32, "sha256": content_digest({"n": 1}), "data": {"n": 1}}
    store.path("34" * 32).parent.mkdir()
    shutil.copy(path, store.path("34" * 32))  # filed under another key
    assert store.get_json("34" * 32) is None
    path.write_text(json.dumps({**doc, "data": {"n": 2}}))  # edited content: the checksum fails
    assert store.get_json("12" * 32) is None
    path.write_bytes(b"\xff{not json")
    assert store.get_json("12" * 32) is None
    assert not store.put_json("56" * 32, {"not json": object()}) and not store.path("56" * 32).exists()


def test_triton_version_without_metadata_is_unknown_when_triton_must_not_be_imported(monkeypatch):
    from importlib import metadata

    def no_metadata(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    triton_version.cache_clear()
    monkeypatch.setattr(metadata, "version", no_metadata)
    try:
        assert triton_version(import_if_unlisted=False) == "unknown"
    finally:
        triton_version.cache_clear()


def test_entries_written_before_the_shared_store_are_read_after_it(tmp_path):
    shutil.copytree(OLD_ENTRIES, tmp_path, dirs_exist_ok=True)
    result = ResultCache(tmp_path).get(OLD_KEY)
    assert result is not None and result.ok and result.from_cache
    assert dict(result.asm.items()) == {"ttir": "module {}\n", "ptx": "// ptx\n.version 8.4\n",
                                        "cubin": bytes(range(16))}
    assert result.metadata == {"shared": 4096, "num_warps": 4} and result.compile_seconds == 0.5

    judgements = JudgementCache(tmp_path)
    records, findings = judgements.get(OLD_KEY)
    assert records == [{"arch": "ampere", "passed": False}]
    assert [(f.code, f.line, f.config) for f in findings] == [("MEM001", 3, {"BLOCK": 64})]
    outcome = judgements.get_outcome(OLD_KEY)
    assert outcome["status"] == "analyzed" and outcome["signature_provenance"] == {"x_ptr": "spec"}
    assert [f.code for f in outcome["findings"]] == ["MEM001"]


def test_entries_written_now_are_byte_identical_to_those_written_before(tmp_path):
    cache, judgements = ResultCache(tmp_path), JudgementCache(tmp_path)
    old = ResultCache(OLD_ENTRIES).get(OLD_KEY)
    assert cache.put(OLD_KEY, old)
    records, findings = JudgementCache(OLD_ENTRIES).get(OLD_KEY)
    judgements.put(OLD_KEY, records, findings)
    outcome = JudgementCache(OLD_ENTRIES).get_outcome(OLD_KEY)
    judgements.put_outcome(OLD_KEY, outcome["status"], outcome["message"], outcome["signature_provenance"],
                           outcome["records"], outcome["findings"])
    written = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file())
    assert written == sorted(p.relative_to(OLD_ENTRIES) for p in OLD_ENTRIES.rglob("*") if p.is_file())
    assert all((tmp_path / p).read_bytes() == (OLD_ENTRIES / p).read_bytes() for p in written)


def test_the_lint_judgement_key_covers_every_stage_of_kernelrules_and_its_analyzers():
    """An edit anywhere in kernelrules (discovery, guessing, judging) or its analyzers must not replay a
    judgement the older code made: the code fingerprint reads all of them, not only lint's own folder."""
    import kernelrules
    from kernelrules.lint.judgement_cache import code_files

    package = Path(kernelrules.__file__).resolve().parent
    files = {path.resolve() for path in code_files()}
    for stage in ("discover", "specify", "compile", "predict", "judge", "lint", "adapters"):
        stage_files = set((package / stage).glob("*.py"))
        assert stage_files and stage_files <= files, stage
    assert any(path.name == "facts_extract.py" for path in files)
