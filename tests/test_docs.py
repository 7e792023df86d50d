"""Generated reference pages must match the YAML they come from."""

from pathlib import Path

from kernelrules import docgen

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_generated_pages_are_current():
    stale = docgen.stale(DOCS)
    assert stale == [], f"stale generated docs {stale}: run python -m kernelrules.docgen docs"


def test_every_rule_and_profile_has_a_page():
    pages = docgen.pages()
    from kernelrules.arch import list_archs
    from kernelrules.ruleset import builtin_rules

    assert {f"rules/{r.code}.md" for r in builtin_rules()} <= set(pages)
    assert {f"arch/{a.name}.md" for a in list_archs()} <= set(pages)
    page = pages["rules/CFG004.md"]
    assert "waves_per_eu" in page and "nearest passing config" in page
