"""The digest of a package's importable Python files (kernelrules/discover/pkgsnapshot.py)."""

from __future__ import annotations

from kernelrules.discover import pkgsnapshot
from kernelrules.discover.pkgsnapshot import Snapshots, tree_digest


def make(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "sub" / "mod.py").write_text("X = 1\n")
    return tmp_path


def test_the_digest_follows_the_content_of_importable_files(tmp_path):
    root = make(tmp_path)
    first = tree_digest(root)
    assert first == tree_digest(root) and len(first) == 64
    (root / "pkg" / "sub" / "mod.py").write_text("X = 2\n")
    edited = tree_digest(root)
    assert edited != first
    (root / "pkg" / "sub" / "new.py").write_text("")
    added = tree_digest(root)
    assert added != edited
    (root / "pkg" / "sub" / "new.py").rename(root / "pkg" / "sub" / "renamed.py")
    assert tree_digest(root) != added  # same bytes under another name: another module


def test_what_no_import_can_reach_does_not_count(tmp_path):
    root = make(tmp_path)
    first = tree_digest(root)
    for name in ("__pycache__", ".hidden", "not-a-package"):
        (root / "pkg" / name).mkdir()
        (root / "pkg" / name / "mod.py").write_text("Y = 1\n")
    (root / "pkg" / "notes.txt").write_text("text")
    assert tree_digest(root) == first


def test_a_root_too_large_has_no_digest(tmp_path, monkeypatch):
    root = make(tmp_path)
    monkeypatch.setattr(pkgsnapshot, "MAX_FILES", 1)
    (root / "pkg" / "two.py").write_text("")
    assert tree_digest(root) is None
    monkeypatch.setattr(pkgsnapshot, "MAX_FILES", 100)
    monkeypatch.setattr(pkgsnapshot, "MAX_BYTES", 3)
    assert tree_digest(root) is None
    assert Snapshots().digest((root,)) is None


def test_snapshots_digest_each_root_once_per_run(tmp_path):
    root = make(tmp_path)
    snapshots = Snapshots()
    first = snapshots.digest((root,))
    (root / "pkg" / "sub" / "mod.py").write_text("X = 3\n")
    assert snapshots.digest((root,)) == first  # one run sees one version
    assert Snapshots().digest((root,)) != first  # the next run sees the edit
    assert Snapshots().digest((root, root / "pkg")) != Snapshots().digest((root,))


def test_a_fifo_or_a_link_loop_is_named_not_read(tmp_path):
    """A FIFO named ``*.py`` would block a plain read forever; a symlink loop cannot be opened: both count
    as what they are, and the digest still changes when one becomes a real module."""
    import os
    import threading

    root = make(tmp_path)
    os.mkfifo(root / "pkg" / "fifo.py")
    os.symlink(root / "pkg" / "loop_a.py", root / "pkg" / "loop_b.py")
    os.symlink(root / "pkg" / "loop_b.py", root / "pkg" / "loop_a.py")
    found: list = []
    reader = threading.Thread(target=lambda: found.append(tree_digest(root)), daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert found and found[0] is not None
    (root / "pkg" / "fifo.py").unlink()
    (root / "pkg" / "fifo.py").write_text("")
    assert tree_digest(root) != found[0]
