"""The data flows one way (docs/design): analyzers at the bottom, the CLI at the top, checked on the source.

Every module's imports are read with ``ast`` (nothing is imported), relative ones resolved
to absolute names; ``analyzers/`` is the installed ``kernelrules.analyzers``.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] == "analyzers":
        parts = ["kernelrules", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports(path: Path) -> set[str]:
    """Absolute names of the modules ``path`` imports (function-level imports included)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, node.module] if node.module else base)
            found.add(stem)
            found.update(f"{stem}.{alias.name}" for alias in node.names)  # `from . import engine`
    return found


GRAPH = {module_name(p): imports(p) for folder in ("kernelrules", "analyzers") for p in (REPO / folder).rglob("*.py")}


def importers_of(*targets: str) -> set[str]:
    return {m for m, deps in GRAPH.items() if any(d == t or d.startswith(t + ".") for d in deps for t in targets)}


def test_the_graph_was_read():
    assert len(GRAPH) > 60 and "kernelrules.tune.driver" in GRAPH and "kernelrules.analyzers.ptx" in GRAPH
    assert {"kernelrules.lint", "kernelrules.judging", "kernelrules.cli"} <= importers_of("kernelrules.engine")
    assert "kernelrules.arch" in GRAPH["kernelrules.tune.driver"]  # `from ..arch import load_arch`, resolved


def test_analyzers_import_nothing_of_kernelrules_above_them():
    for module, deps in GRAPH.items():
        if module.startswith("kernelrules.analyzers"):
            above = {d for d in deps if d.startswith("kernelrules") and not d.startswith("kernelrules.analyzers")}
            assert not above, f"{module} imports {sorted(above)}: analyzers never import the engine"


def test_nothing_imports_the_cli():
    assert importers_of("kernelrules.cli") <= {"kernelrules.cli", "kernelrules.__main__"}
    assert importers_of("kernelrules.cli_tune") == {"kernelrules.cli"}
    assert importers_of("kernelrules.cli_pin") == {"kernelrules.cli"}


def test_the_engine_imports_no_tuner():
    """The rules engine and the config model know nothing of the GPU search that uses them."""
    for module in ("kernelrules.engine", "kernelrules.ruleset", "kernelrules.config", "kernelrules.arch"):
        tuner = {d for d in GRAPH[module] if d.startswith(("kernelrules.tune", "kernelrules.triton", "optuna"))}
        assert not tuner, f"{module} imports {sorted(tuner)}"
