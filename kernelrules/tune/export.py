"""``kernelrules tune --export FILE.json``: the winner of a run as an entry of a pinned table.

The entry's launch is derived from the space file, before the run starts (a bad ``--key``
or a table of another kernel costs no tuning):

- **key names**: the kernel's own ``@triton.autotune(key=[...])`` (read from its source
  with ``ast``), else the names of ``--key``;
- **key values**: ``--key NAME=VALUE`` first, else the problem size of that name
  (``problem.M``), else the signature's value (``signature.M: 4096``), else ``fixed``;
- **dtypes**: every pointer argument of the signature (``*fp16`` -> ``float16``), the
  ``str(tensor.dtype)`` part of Triton's key;
- **config**: the winner (re-measured in the final rounds), with the ``fixed`` values
  that the kernel's autotune configs set themselves (``GROUP_SIZE_M``); a fixed value no
  autotune config sets is one the launch passes, and a pinned config must not repeat it.

The entry replaces the table's entry for the same launch (a fresh measurement wins;
``kernelrules pin merge`` is the command that compares), and the table is written
atomically.
"""

from __future__ import annotations

import importlib.metadata
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from ..config import parse_value
from ..errors import KernelrulesError
from ..pinned import Entry, PinnedTable, load_table, new_table, normalize_dtype, now_iso, source_sha256


@dataclass
class ExportPlan:
    """Everything the entry needs that the space file says, checked before the run."""

    path: Path
    table: PinnedTable
    key: dict[str, Any]
    dtypes: dict[str, str]
    config_names: set[str] | None  # names a pinned config may set (None: any)
    source_sha256: str


def _kernel(space: Any) -> Any:
    from ..discover.kernels import discover

    found = discover([space.kernel_path]).by_name(space.kernel_name)
    if not found:
        raise KernelrulesError(f"no @triton.jit kernel {space.kernel_name!r} to export", path=str(space.kernel_path))
    return found[0]


def parse_keys(items: Sequence[str]) -> dict[str, Any]:
    """``--key NAME`` and ``--key NAME=VALUE`` items: name -> value (None: derive it)."""
    keys: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.strip()
        if not name.isidentifier():
            raise KernelrulesError(f"cannot read --key {item!r}", hint="NAME or NAME=VALUE, e.g. --key M=4096")
        keys[name] = parse_value(text.strip(), item) if sep else None
    return keys


def plan_export(path: str | Path, space: Any, key_items: Sequence[str] = ()) -> ExportPlan:
    """Derive the entry's launch (see the module docstring) and load the table to update."""
    path = Path(path)
    kernel = _kernel(space)
    given = parse_keys(key_items)
    names = list(kernel.autotune.key) if kernel.autotune is not None and kernel.autotune.key else list(given)
    if not names:
        raise KernelrulesError(f"{space.kernel_name} has no @triton.autotune key to export under",
                               path=str(space.path), hint="name the key arguments: --key M --key N=4096")
    params = {p.name for p in kernel.params}
    key: dict[str, Any] = {}
    for name in names:
        if name not in params:
            continue  # Triton leaves a key name the kernel does not take out of its key
        value = given.get(name)
        if value is None:
            value = next((source[name] for source in (space.problem, space.signature, space.fixed)
                          if isinstance(source.get(name), (int, float, bool))), None)
        if value is None:
            raise KernelrulesError(f"cannot tell the value of the key argument {name!r} from the space file",
                                   path=str(space.path), hint=f"pass --key {name}=VALUE")
        key[name] = value
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise KernelrulesError(f"--key {', '.join(unknown)}: not in {space.kernel_name}'s autotune key {names}")
    dtypes = {k: normalize_dtype(v) for k, v in space.signature.items() if isinstance(v, str) and v.startswith("*")}
    config_names = None
    if kernel.autotune is not None and kernel.autotune.configs:
        config_names = {n for site in kernel.autotune.configs for n in site.config.to_dict()}
    name = kernel.def_name or kernel.name
    table = load_table(path) if path.exists() else new_table(name, space.kernel_path.stem, names)
    if table.kernel_name != name:
        raise KernelrulesError(f"the table pins kernel {table.kernel_name!r}, not {name!r}", path=str(path),
                               hint="export to another file")
    return ExportPlan(path, table, key, dtypes, config_names,
                      source_sha256(space.kernel_path, name, kernel.line))


def export_winner(plan: ExportPlan, space: Any, summary: Mapping[str, Any]) -> str:
    """Put the run's winner in the table and write it; returns the line to print."""
    winner = summary.get("winner")
    if not winner:
        raise KernelrulesError("no winner to export: no config could be timed", path=str(plan.path))
    final = summary.get("final") or {}
    searched = set(space.space)
    config = {k: v for k, v in winner["config"].items()
              if plan.config_names is None or k in searched or k in plan.config_names or k not in space.fixed}
    provenance = {
        "by": "kernelrules tune", "date": now_iso(), "gpu": final.get("device"), "triton": _version("triton"),
        "kernelrules": _version("kernelrules"), "ms": winner.get("ms"), "baseline_ms": final.get("baseline_ms"),
        "baseline": final.get("baseline"), "interpret": bool(summary.get("interpret")), "study": summary.get("study"),
    }
    entry = Entry(arch=str(summary["arch"]), key=dict(plan.key), config=config, dtypes=dict(plan.dtypes),
                  source_sha256=plan.source_sha256, provenance=provenance)
    replaced = plan.table.upsert(entry)
    plan.table.save(plan.path)
    what = "replaced the entry" if replaced is not None else "new entry"
    count = len(plan.table.entries)
    return (f"pinned {entry.describe()}: {entry.config_text()} -> {plan.path} ({what}; "
            f"{count} {'entry' if count == 1 else 'entries'})")


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        if package == "kernelrules":
            from .. import __version__

            return __version__
        return None
