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
    assert {"kernelrules.lint.linter", "kernelrules.judge.pipeline", "kernelrules.cli"} <= importers_of("kernelrules.judge.engine")
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
    assert importers_of("kernelrules.cli_usage") == {"kernelrules.cli"}


def test_the_engine_imports_no_tuner():
    """The rules engine and the config model know nothing of the GPU search that uses them."""
    for module in ("kernelrules.judge.engine", "kernelrules.judge.ruleset", "kernelrules.config", "kernelrules.arch"):
        tuner = {d for d in GRAPH[module] if d.startswith(("kernelrules.tune", "kernelrules.adapters.triton_autotune", "optuna"))}
        assert not tuner, f"{module} imports {sorted(tuner)}"


# -- cycles, private names, the judging core and its adapters -----------------------------


def module_edges() -> dict[str, set[str]]:
    """Each module's imports of other kernelrules modules; its own ancestor packages are left out (Python
    initialises a package before its modules, so ``from . import x`` in a module of the package closes no cycle)."""
    return {m: {d for d in deps if d in GRAPH and d != m and not m.startswith(d + ".")} for m, deps in GRAPH.items()}


def strongly_connected(edges: dict[str, set[str]]) -> list[set[str]]:
    """The modules that import each other, directly or not: every strongly connected component of more than one."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    components: list[set[str]] = []

    def visit(module: str) -> None:  # Tarjan's algorithm
        order[module] = low[module] = len(order)
        stack.append(module)
        for dep in sorted(edges[module]):
            if dep not in order:
                visit(dep)
                low[module] = min(low[module], low[dep])
            elif dep in stack:
                low[module] = min(low[module], order[dep])
        if low[module] == order[module]:
            component = set(stack[stack.index(module):])
            del stack[stack.index(module):]
            if len(component) > 1:
                components.append(component)

    for module in sorted(edges):
        if module not in order:
            visit(module)
    return components


def cycle_through(start: str, edges: dict[str, set[str]], within: set[str]) -> list[str]:
    """The shortest import path from ``start`` back to itself inside one strongly connected component."""
    paths = {start: [start]}
    queue = [start]
    while queue:
        module = queue.pop(0)
        for dep in sorted(edges[module] & within):
            if dep == start:
                return paths[module] + [start]
            if dep not in paths:
                paths[dep] = paths[module] + [dep]
                queue.append(dep)
    raise AssertionError(f"{start} is in no cycle")


def test_cycles_are_found_and_reported_as_a_path():
    edges = {"a": {"b"}, "b": {"c", "e"}, "c": {"a", "d"}, "d": set(), "e": {"b"}, "x": {"x"}}
    assert sorted(map(sorted, strongly_connected(edges))) == [["a", "b", "c", "e"]]
    assert cycle_through("a", edges, {"a", "b", "c", "e"}) == ["a", "b", "c", "a"]
    assert strongly_connected({"x": set(), "y": {"x"}}) == []


def test_no_import_cycles():
    edges = module_edges()
    found = [" -> ".join(cycle_through(min(c), edges, c)) for c in strongly_connected(edges)]
    assert not found, f"import cycles (function-level imports included): {found}"


def _is_private(attr: str) -> bool:
    return attr.startswith("_") and not attr.startswith("__")


def private_imports(path: Path, name: str) -> set[str]:
    """``module._name`` for each private name the module ``name`` at ``path`` takes from another kernelrules
    module: imported by name (``from .engine import _hidden``) or read through the module's alias
    (``from . import engine as e`` ... ``e._hidden``, ``import kernelrules.engine`` ... ``kernelrules.engine._hidden``)."""
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    modules: dict[str, str] = {}  # local name -> the kernelrules module (or package) it is bound to
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            stem = ".".join([*base, node.module] if node.module else base)
            if not stem.startswith("kernelrules"):
                continue
            found.update(f"{stem}.{alias.name}" for alias in node.names if _is_private(alias.name)
                         and f"{stem}.{alias.name}" not in GRAPH)
            modules.update((alias.asname or alias.name, f"{stem}.{alias.name}") for alias in node.names
                           if f"{stem}.{alias.name}" in GRAPH)  # `from . import engine as e`: a module
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "kernelrules" or alias.name.startswith("kernelrules."):
                    if alias.asname:
                        modules[alias.asname] = alias.name
                    else:
                        modules["kernelrules"] = "kernelrules"  # `import kernelrules.x` binds `kernelrules`
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        chain: list[str] = []
        inner: ast.expr = node
        while isinstance(inner, ast.Attribute):
            chain.append(inner.attr)
            inner = inner.value
        if not isinstance(inner, ast.Name) or inner.id not in modules:
            continue
        module = modules[inner.id]
        for attr in reversed(chain):  # down the submodules, to the first attribute that is not one
            if f"{module}.{attr}" in GRAPH:
                module = f"{module}.{attr}"
                continue
            if _is_private(attr) and module != name:
                found.add(f"{module}.{attr}")
            break
    return found


def test_private_imports_are_read(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .engine import _hidden, Engine\nfrom . import engine\nfrom .version import __version__\n"
                     "from optuna import _private\n")
    assert private_imports(probe, "kernelrules.probe") == {"kernelrules.engine._hidden"}


def test_private_names_read_through_a_module_alias_are_found(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("from .discover import pkgsource as ps\nimport kernelrules.discover.kernelsource\n"
                     "import kernelrules.discover.pkgvalues as pv\nimport optuna as ps2\nfrom .errors import KernelSourceError\n"
                     "def f():\n    from .discover import pkgbranches\n"
                     "    return (ps._hidden, ps.__name__, ps.public, kernelrules.discover.kernelsource._cache, pv._flag,\n"
                     "            pkgbranches._Scope(), ps2._private, KernelSourceError._x)\n")
    assert private_imports(probe, "kernelrules.probe") == {
        "kernelrules.discover.pkgsource._hidden", "kernelrules.discover.kernelsource._cache",
        "kernelrules.discover.pkgvalues._flag", "kernelrules.discover.pkgbranches._Scope"}


def test_no_module_imports_another_modules_private_names():
    found = {module_name(p): private_imports(p, module_name(p)) for folder in ("kernelrules", "analyzers")
             for p in (REPO / folder).rglob("*.py")}
    wrong = {m: sorted(names) for m, names in found.items() if names}
    assert not wrong, f"make them public names of their module: {wrong}"


def imported_by(module: str) -> set[str]:
    """Every kernelrules module ``module`` imports, directly or through others (function-level imports included)."""
    edges = module_edges()
    seen: set[str] = set()
    todo = [module]
    while todo:
        for dep in edges[todo.pop()] - seen:
            seen.add(dep)
            todo.append(dep)
    return seen


#: The adapters over the judging core (tuner integrations, the prune API) and the command-line layers above it.
ADAPTERS = ("prune_api", "kernel_prune", "triton", "triton_perf", "triton_prune", "optuna_helper", "precompile",
            "autotune_context", "static_pick", "pinned_launch")
LINT_AND_CLI = ("lint", "check_kernel", "pinned_lint", "cli", "cli_tune", "cli_pin", "cli_usage", "reporters")


def test_the_judging_core_imports_no_adapter_nor_lint_nor_the_cli():
    above = imported_by("kernelrules.judge.pipeline") & {f"kernelrules.{m}" for m in (*ADAPTERS, *LINT_AND_CLI)}
    assert not above, f"kernelrules.judge.pipeline imports {sorted(above)}"
    assert "kernelrules.judge.engine" in imported_by("kernelrules.judge.pipeline")  # the walk reached the core's own imports


def test_the_perf_models_never_import_the_judging_core_or_an_adapter():
    for model in ("kernelrules.predict.perf_model", "kernelrules.predict.perf_general"):
        wrong = imported_by(model) & {"kernelrules.judge.pipeline", *(f"kernelrules.{m}" for m in ADAPTERS)}
        assert not wrong, f"{model} imports {sorted(wrong)}: the analytic models stay pure"
    assert "kernelrules.predict.perf_model" in imported_by("kernelrules.predict.perf_general")


#: The pipeline's stages, lowest first (docs/architecture.md): a module imports only its own stage
#: and the stages below it; stages that share a rank (lint, adapters) do not import each other.
STAGE_ORDER = (
    ("model",),  # the root modules (config, arch, space, errors, ...) and expr/
    ("discover",),
    ("compile",),  # the cross-compiler is a service: specify's guess search and predict's probes call it
    ("specify",),
    ("predict",),
    ("judge",),
    ("lint", "adapters"),
    ("testing",),
    ("tune",),
    ("cli",),
)
RANK = {stage: rank for rank, stages in enumerate(STAGE_ORDER) for stage in stages}
CLI_MODULES = {"kernelrules.cli", "kernelrules.cli_tune", "kernelrules.cli_pin", "kernelrules.cli_usage",
               "kernelrules.__main__"}


def stage_of(module: str) -> str | None:
    """The stage a kernelrules module belongs to (None for the analyzers and the package itself)."""
    parts = module.split(".")
    if module in CLI_MODULES:
        return "cli"
    if len(parts) < 2 or parts[1] == "analyzers":
        return None
    if parts[1] in RANK:
        return parts[1]
    return "model"  # a root module, or expr/


def test_every_module_has_a_stage():
    unplaced = {m for m in GRAPH if m.startswith("kernelrules.") and stage_of(m) is None
                and not m.startswith("kernelrules.analyzers")}
    assert not unplaced
    assert {stage_of(m) for m in GRAPH} >= set(RANK), "a stage folder is empty or missing"


def test_imports_follow_the_stage_order():
    wrong = []
    for module, deps in GRAPH.items():
        here = stage_of(module)
        if here is None:
            continue
        for dep in deps:
            there = stage_of(dep) if dep in GRAPH else None
            if there is None or there == here:
                continue
            if RANK[there] >= RANK[here]:
                wrong.append(f"{module} ({here}) imports {dep} ({there})")
    assert not wrong, "imports against the stage order:\n" + "\n".join(sorted(wrong))


def test_a_long_module_says_why_at_its_top():
    """A module over 400 lines gives the reason in its docstring ("Why over 400 lines: ...")."""
    long = []
    for folder in ("kernelrules", "analyzers"):
        for path in (REPO / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            if len(text.splitlines()) > 400 and "Why over 400 lines:" not in (ast.get_docstring(ast.parse(text)) or ""):
                long.append(f"{path.relative_to(REPO)} ({len(text.splitlines())} lines)")
    assert not long, f"split these modules or say why at their top: {long}"
