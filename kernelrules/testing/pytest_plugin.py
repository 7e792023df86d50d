"""pytest plugin: fixtures and a marker for testing rules and kernels with kernelrules.

Registered through the ``pytest11`` entry point, so it is active wherever kernelrules
is installed. It imports nothing heavy until a fixture is used.

Fixtures:

``kernelrules_cache``
    a compile cache (:class:`kernelrules.compile.cache.ResultCache`) for the session: a fresh
    temporary directory, or ``--kernelrules-cache-dir DIR`` to keep compiles across runs;
``kernelrules_session``
    a :class:`kernelrules.testing.property_session.PropertySession` on that cache: one compile pool,
    learned models and compile results shared by every property of the session;
``kernelrules_arch``
    an architecture profile; a test that uses it runs once per architecture named by
    ``--kernelrules-arch``, else by its ``kernelrules`` marker, else sm_80, sm_86, sm_89
    and sm_90;
``kernelrules_property``
    ``kernelrules_property(rule, space, limit=..., **options)``: a
    :class:`~kernelrules.testing.rule_property.RuleProperty` on the session and the test's
    architecture, with the marker's and the command line's settings; call ``.check()``.

Marker: ``@pytest.mark.kernelrules(archs=[...], max_examples=N, seed=S, derandomize=True)``.
Command line: ``--kernelrules-arch``, ``--kernelrules-cache-dir``, ``--kernelrules-jobs``,
``--kernelrules-timeout``, ``--kernelrules-max-examples`` and ``--kernelrules-seed``. Settings
given to ``kernelrules_property`` win over the marker's; these last two win over both,
to scale a whole run up or replay one.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Architectures a ``kernelrules_arch`` test runs on when nothing else is said.
DEFAULT_ARCHS = ("sm_80", "sm_86", "sm_89", "sm_90")

#: Settings the marker and the factory accept, besides ``archs``.
PROPERTY_SETTINGS = ("max_examples", "seed", "derandomize", "shrink")


def pytest_addoption(parser: pytest.Parser) -> None:
    """Command-line options of the plugin."""
    group = parser.getgroup("kernelrules", "kernelrules rule and kernel testing")
    group.addoption("--kernelrules-arch", default=None,
                    help="architectures for kernelrules_arch tests, comma-separated, overriding markers "
                         f"(default: the marker's, else {','.join(DEFAULT_ARCHS)})")
    group.addoption("--kernelrules-cache-dir", default=None,
                    help="compile cache kept across runs (default: a temporary directory per session)")
    group.addoption("--kernelrules-jobs", type=int, default=None, help="compile workers (default: up to 2)")
    group.addoption("--kernelrules-timeout", type=float, default=None,
                    help="seconds per compile; a compile that runs over decides nothing (default: 30)")
    group.addoption("--kernelrules-max-examples", type=int, default=None,
                    help="configs each property draws, overriding markers (scale a nightly run up)")
    group.addoption("--kernelrules-seed", type=int, default=None, help="hypothesis seed of every property")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker."""
    config.addinivalue_line(
        "markers",
        "kernelrules(archs=None, max_examples=None, seed=None, derandomize=None, shrink=None): "
        "architectures and hypothesis settings for tests using kernelrules_arch / kernelrules_property",
    )


def _marker_kwargs(node: Any) -> dict[str, Any]:
    marker = node.get_closest_marker("kernelrules")
    return dict(marker.kwargs) if marker is not None else {}


def _arch_names(config: pytest.Config, marker: dict[str, Any]) -> list[str]:
    option = config.getoption("--kernelrules-arch")
    if option:
        return [n.strip() for n in option.split(",") if n.strip()]
    archs = marker.get("archs")
    if archs:
        return [n.strip() for n in archs.split(",")] if isinstance(archs, str) else list(archs)
    return list(DEFAULT_ARCHS)


def _parametrized_directly(metafunc: pytest.Metafunc, name: str) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", "")
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if name in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run each ``kernelrules_arch`` test once per architecture (unless the test parametrizes it itself)."""
    if "kernelrules_arch" not in metafunc.fixturenames or _parametrized_directly(metafunc, "kernelrules_arch"):
        return
    names = _arch_names(metafunc.config, _marker_kwargs(metafunc.definition))
    metafunc.parametrize("kernelrules_arch", names, indirect=True, ids=names)


@pytest.fixture
def kernelrules_arch(request: pytest.FixtureRequest) -> Any:
    """The architecture profile (:class:`kernelrules.arch.Arch`) this test runs on."""
    from ..arch import load_arch

    name = getattr(request, "param", None) or _arch_names(request.config, _marker_kwargs(request.node))[0]
    return name if not isinstance(name, str) else load_arch(name)


@pytest.fixture(scope="session")
def kernelrules_cache(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The session's compile cache: ``--kernelrules-cache-dir`` or a fresh temporary directory."""
    from ..compile.cache import ResultCache

    directory = request.config.getoption("--kernelrules-cache-dir")
    return ResultCache(directory or tmp_path_factory.mktemp("kernelrules-cache"))


@pytest.fixture(scope="session")
def kernelrules_session(request: pytest.FixtureRequest, kernelrules_cache: Any) -> Any:
    """One compile pool, learned models and compile results for every property of the session."""
    from .property_session import DEFAULT_TIMEOUT, PropertySession

    timeout = request.config.getoption("--kernelrules-timeout") or DEFAULT_TIMEOUT
    session = PropertySession(kernelrules_cache, jobs=request.config.getoption("--kernelrules-jobs"),
                              timeout=timeout)
    yield session
    session.close()


def _marker_settings(request: pytest.FixtureRequest) -> dict[str, Any]:
    """Hypothesis settings from the test's ``kernelrules`` marker."""
    return {k: v for k, v in _marker_kwargs(request.node).items() if k in PROPERTY_SETTINGS and v is not None}


def _command_line_settings(config: pytest.Config) -> dict[str, Any]:
    """``--kernelrules-max-examples`` and ``--kernelrules-seed``, when given."""
    values = {key: config.getoption(f"--kernelrules-{key.replace('_', '-')}") for key in ("max_examples", "seed")}
    return {k: v for k, v in values.items() if v is not None}


@pytest.fixture
def kernelrules_property(request: pytest.FixtureRequest, kernelrules_session: Any, kernelrules_arch: Any) -> Any:
    """``kernelrules_property(rule, space, limit=..., **options)`` -> a RuleProperty on this test's architecture."""
    from .rule_property import RuleProperty

    marker, command_line = _marker_settings(request), _command_line_settings(request.config)

    def make(rule: Any, space: Any, *, limit: Any, **options: Any) -> RuleProperty:
        options = {**marker, **options, **command_line}  # the run-level knobs win
        options.setdefault("session", kernelrules_session)
        arch = options.pop("arch", kernelrules_arch)
        return RuleProperty(rule, space, arch, limit=limit, **options)

    return make
