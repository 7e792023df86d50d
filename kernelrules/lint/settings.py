"""``[tool.kernelrules]`` settings from the nearest ``pyproject.toml``, merged with the CLI.

The nearest ``pyproject.toml`` that has a ``[tool.kernelrules]`` table, searching
upward from the first linted path, is used; without one the defaults apply.
Keys are spelled with dashes (``fail-on``); unknown keys and values of the
wrong type raise :class:`~kernelrules.errors.KernelrulesError` naming the file,
the key and (found by searching the text) its line. Command-line values win
over the file (:meth:`Settings.merge_cli`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..errors import KernelrulesError
from .findings import SEVERITIES

if TYPE_CHECKING:
    from ..judge.ruleset import RuleSelection

try:  # Python 3.11+
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

STAGES = ("config", "compiled")


@dataclass
class Settings:
    """Lint settings; empty ``select`` means every code."""

    arch: list[str] = field(default_factory=list)
    select: list[str] = field(default_factory=list)
    ignore: list[str] = field(default_factory=list)
    extend_select: list[str] = field(default_factory=list)
    fail_on: str = "error"
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    compile_timeout: float = 30.0
    cache_dir: str | None = None
    stage: str = "compiled"
    jobs: int | None = None
    #: Directories holding the packages that linted kernels import helpers from (as ruff's ``src``).
    src: list[str] = field(default_factory=list)
    #: The pyproject.toml the settings came from, if any.
    source: Path | None = None

    def merge_cli(self, **overrides: Any) -> "Settings":
        """A copy with the command-line values that were given (``None`` means not given).

        Keys may use dashes or underscores. Values are checked like the file's.
        """
        known = {f.name for f in fields(self)} - {"source"}
        changes: dict[str, Any] = {}
        for key, value in overrides.items():
            name = key.replace("-", "_")
            if name not in known:
                raise KernelrulesError(f"unknown setting {key!r}")
            if value is not None:
                try:
                    changes[name] = _CHECKS[name](value, f"--{name.replace('_', '-')}")
                except ValueError as exc:
                    raise KernelrulesError(str(exc)) from None
        return replace(self, **changes)

    def check_selectors(self, codes: Sequence[str]) -> None:
        """Refuse a selector that matches none of ``codes`` (``--select NOPE999`` would silently report
        nothing), as ruff does; the error names where the selector came from."""
        groups = [("select", self.select), ("ignore", self.ignore), ("extend-select", self.extend_select)]
        groups += [(f"per-file-ignores[{glob!r}]", list(found)) for glob, found in self.per_file_ignores.items()]
        for key, selectors in groups:
            for selector in selectors:
                if selector != "ALL" and not any(code.startswith(selector) for code in codes):
                    shown = selector if len(selector) <= 40 else selector[:40] + "..."
                    raise KernelrulesError(f"unknown rule selector {shown!r} in {key}",
                                           path=str(self.source) if self.source else None,
                                           hint="a rule code or prefix: see 'kernelrules rules list'")

    def rule_selection(self) -> RuleSelection:
        """The findings these settings report: select, ignore, extend-select and per-file-ignores
        (globs relative to the pyproject's directory)."""
        from ..judge.ruleset import RuleSelection  # here: the tune command reads settings without loading rules

        return RuleSelection(tuple(self.select), tuple(self.ignore), tuple(self.extend_select),
                             {glob: tuple(codes) for glob, codes in self.per_file_ignores.items()},
                             self.source.parent if self.source is not None else None)


# -- value checks: each returns the normalised value or raises ValueError ---------------


def _code_list(value: Any, key: str) -> list[str]:
    """A list of codes or code prefixes, or one comma-separated string of them."""
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of strings or a comma-separated string")
    return [v.strip().upper() for v in value if v.strip()]


def _arch_list(value: Any, key: str) -> list[str]:
    """Architecture names: a list or a comma-separated string (resolved later)."""
    return [a.lower() for a in _code_list(value, key)]


def _choice(options: Sequence[str]) -> Callable[[Any, str], str]:
    """A check that the value is one of ``options``."""

    def check(value: Any, key: str) -> str:
        if value not in options:
            raise ValueError(f"{key} must be one of {', '.join(options)}, not {value!r}")
        return value

    return check


def positive_seconds(value: Any, name: str) -> float:
    """``value`` as seconds if it is a positive, finite number; else a one-line ``KernelrulesError`` naming ``name``."""
    try:
        return _positive_number(value, name)
    except ValueError as exc:
        raise KernelrulesError(str(exc)) from None


def _positive_number(value: Any, key: str) -> float:
    """A number of seconds above zero."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise ValueError(f"{key} must be a positive, finite number of seconds, not {value!r}")
    return float(value)


def _positive_int(value: Any, key: str) -> int:
    """A whole number above zero."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{key} must be a positive integer, not {value!r}")
    return value


def _text(value: Any, key: str) -> str:
    """A non-empty string."""
    if not isinstance(value, (str, Path)) or not str(value):
        raise ValueError(f"{key} must be a non-empty string, not {value!r}")
    return str(value)


def _dir_list(value: Any, key: str) -> list[str]:
    """Directories: a list of strings, or one string (resolved against the pyproject's directory)."""
    if isinstance(value, (str, Path)):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, (str, Path)) and str(v) for v in value):
        raise ValueError(f"{key} must be a list of directories")
    return [str(v) for v in value]


def _glob_table(value: Any, key: str) -> dict[str, list[str]]:
    """``{glob: [codes]}``."""
    if not isinstance(value, Mapping):
        raise ValueError(f"{key} must be a table of glob = [codes]")
    return {str(glob): _code_list(codes, f"{key}.{glob}") for glob, codes in value.items()}


_CHECKS: dict[str, Callable[[Any, str], Any]] = {
    "arch": _arch_list,
    "select": _code_list,
    "ignore": _code_list,
    "extend_select": _code_list,
    "fail_on": _choice(SEVERITIES),
    "per_file_ignores": _glob_table,
    "compile_timeout": _positive_number,
    "cache_dir": _text,
    "stage": _choice(STAGES),
    "jobs": _positive_int,
    "src": _dir_list,
}

#: The keys of ``[tool.kernelrules]``, as spelled in the file.
KEYS = tuple(name.replace("_", "-") for name in _CHECKS)


# -- reading the file --------------------------------------------------------------------


def key_line(text: str, key: str) -> int | None:
    """The line of ``key = ...`` in the ``[tool.kernelrules]`` part of ``text`` (tomllib has no positions)."""
    in_table = False
    pattern = re.compile(rf"""^\s*["']?{re.escape(key)}["']?\s*=""")
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_table = stripped.startswith("[tool.kernelrules")
            if in_table and stripped.rstrip("]").endswith(key):
                return number
        elif in_table and pattern.match(line):
            return number
    return None


def find_pyproject(start: str | Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` that has ``[tool.kernelrules]``."""
    here = Path(start).resolve()
    for directory in [here, *here.parents] if here.is_dir() else here.parents:
        candidate = directory / "pyproject.toml"
        if candidate.is_file() and "tool" in (doc := _load_toml(candidate)) and "kernelrules" in doc["tool"]:
            return candidate
    return None


def _load_toml(path: Path) -> dict[str, Any]:
    """Parse one TOML file, turning a syntax error into a :class:`KernelrulesError`."""
    return _parse_toml(_read_toml(path), path)


#: Largest pyproject.toml read (a project's is a few kB).
MAX_TOML_BYTES = 8 * 1024 * 1024


def _read_toml(path: Path) -> str:
    from ..inputfile import read_input_text

    return read_input_text(path, MAX_TOML_BYTES)


def _parse_toml(text: str, path: Path) -> dict[str, Any]:
    """``text`` parsed as TOML; a syntax error, an integer of thousands of digits (ValueError) or
    nesting too deep for the parser (RecursionError) is one :class:`KernelrulesError`."""
    try:
        return tomllib.loads(text)
    except ValueError as exc:  # TOMLDecodeError is one
        raise KernelrulesError(f"invalid TOML: {exc}", path=str(path)) from None
    except RecursionError:
        raise KernelrulesError("invalid TOML: nested too deeply", path=str(path)) from None


def parse_table(table: Mapping[str, Any], path: Path, text: str = "") -> Settings:
    """Settings from a ``[tool.kernelrules]`` table; errors name ``path``, the key and its line."""
    if not isinstance(table, Mapping):
        raise KernelrulesError("[tool.kernelrules] must be a table", path=str(path))
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            raise KernelrulesError(f"unknown key {key!r} in [tool.kernelrules]", path=str(path),
                                   line=key_line(text, key), hint=f"known keys: {', '.join(KEYS)}")
        name = key.replace("-", "_")
        try:
            values[name] = _CHECKS[name](value, key)
        except ValueError as exc:
            raise KernelrulesError(str(exc), path=str(path), line=key_line(text, key)) from None
    if "cache_dir" in values:
        values["cache_dir"] = str((path.parent / values["cache_dir"]).resolve())
    if "src" in values:
        values["src"] = [str((path.parent / s).resolve()) for s in values["src"]]
    return Settings(**values, source=path)


def load_settings(paths: Sequence[str | Path] = ()) -> Settings:
    """Settings from the pyproject nearest the first of ``paths`` (or the working directory)."""
    pyproject = find_pyproject(paths[0] if paths else Path.cwd())
    if pyproject is None:
        return Settings()
    text = _read_toml(pyproject)
    return parse_table(_parse_toml(text, pyproject)["tool"]["kernelrules"], pyproject, text)
