"""Generated reference pages must match the YAML they come from."""

from pathlib import Path

from kernelrules.lint import docgen

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_generated_pages_are_current():
    stale = docgen.stale(DOCS)
    assert stale == [], f"stale generated docs {stale}: run python -m kernelrules.lint.docgen docs"


def test_every_rule_and_profile_has_a_page():
    pages = docgen.pages()
    from kernelrules.arch import list_archs
    from kernelrules.judge.ruleset import builtin_rules

    assert {f"rules/{r.code}.md" for r in builtin_rules()} <= set(pages)
    assert {f"arch/{a.name}.md" for a in list_archs()} <= set(pages)
    page = pages["rules/CFG004.md"]
    assert "waves_per_eu" in page and "nearest passing config" in page


def test_the_architecture_page_maps_every_module():
    """docs/architecture.md names every module of every stage folder, in that folder's table."""
    import re

    package = DOCS.parent / "kernelrules"
    page = (DOCS / "architecture.md").read_text(encoding="utf-8")
    sections = dict(re.findall(r"\*\*[^*]+\*\* \(`([\w/]+)/`\)\n(.*?)(?=\n\*\*|\n## |\Z)", page, re.S))
    missing = []
    for path in sorted(package.rglob("*.py")):
        folder = path.parent.relative_to(DOCS.parent).as_posix()
        if path.name == "__init__.py" and folder != "kernelrules/testing":
            continue
        if f"| `{path.name}` |" not in sections.get(folder, ""):
            missing.append(path.relative_to(package).as_posix())
    assert not missing, f"add these modules to the module map of docs/architecture.md: {missing}"
