"""Where lint's findings point (:mod:`kernelrules.lint.placement`): the path as shown from the
working directory and the quoted source line, read once per file."""

from __future__ import annotations

from types import SimpleNamespace

from kernelrules.lint.placement import FindingPlacer, shown_path


def test_paths_are_shown_relative_to_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    monkeypatch.chdir(tmp_path)
    assert shown_path(tmp_path / "pkg" / "k.py") == "pkg/k.py"
    assert shown_path("./pkg/k.py") == "pkg/k.py"
    outside = tmp_path.parent / "elsewhere.py"
    assert shown_path(outside) == str(outside)


def test_findings_quote_their_line_and_survive_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.py").write_text("import triton\n\n@triton.jit\ndef kern(x):\n    pass\n")
    kernel = SimpleNamespace(path=str(tmp_path / "k.py"), name="kern", line=4, column=0)
    place = FindingPlacer()
    finding = place.lint_code(kernel, "LNT001", "cannot judge kern")
    assert (finding.path, finding.line, finding.column, finding.source_line) == ("k.py", 4, 1, "def kern(x):")
    rule = place.at(kernel, 3, 1, "MEM001", "shared-memory-overflow", "error", "too much", arch="sm_89")
    assert rule.source_line == "@triton.jit" and rule.arch == "sm_89" and not rule.suppressed
    moved = SimpleNamespace(path=str(tmp_path / "gone.py"), name="kern", line=4, column=0)
    stored = [place.at(kernel, 4, 1, "MEM001", "shared-memory-overflow", "error", "too much")]
    place.relocate(stored, moved)
    assert stored[0].path == "gone.py" and stored[0].source_line is None
    problem = SimpleNamespace(path=str(tmp_path / "k.py"), line=None, column=None, message="syntax error")
    assert (place.file_problem(problem).line, place.file_problem(problem).source_line) == (1, None)
