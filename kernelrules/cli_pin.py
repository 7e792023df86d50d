"""The ``kernelrules pin`` commands: ``merge`` and ``show`` pinned-config tables (docs/pinned.md).

Registered on the main app by :mod:`kernelrules.cli`. Same conventions as the other
commands: one-line errors (:class:`~kernelrules.errors.KernelrulesError`, exit 2), every
file written atomically.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import List

import typer

from .errors import KernelrulesError

pin_app = typer.Typer(help="Merge and show pinned-config tables (tuned winners per architecture and key).",
                      no_args_is_help=True)


def register(app: typer.Typer) -> None:
    app.add_typer(pin_app, name="pin")


@pin_app.command("merge")
def merge_command(
    output: Path = typer.Argument(..., help="The table to write."),
    inputs: List[Path] = typer.Argument(..., help="Tables of the same kernel, merged in this order."),
    force: bool = typer.Option(False, "--force", help="Overwrite OUTPUT even when it is not one of the inputs."),
) -> None:
    """Combine tables of one kernel; for one launch in several, keep the faster (same GPU, same source), else the newer."""
    from .pinned import load_table, merge

    import os

    resolved = {os.path.realpath(p) for p in inputs}  # realpath: a symlink loop is the loader's to report
    if output.exists() and os.path.realpath(output) not in resolved and not force:
        raise KernelrulesError("output table exists and is not an input; not overwriting", path=str(output),
                               hint="list it among the inputs to merge into it, or use --force")
    result = merge([load_table(p) for p in inputs])
    for kept, dropped, why in result.conflicts:
        typer.echo(f"conflict {kept.describe()}: kept {kept.config_text()} ({why}{_timing(kept, dropped)}), "
                   f"dropped {dropped.config_text()}")
    result.table.save(output)
    typer.echo(f"wrote {output}: {result.summary()}")


def _timing(kept, dropped) -> str:
    a, b = kept.provenance.get("ms"), dropped.provenance.get("ms")
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return f": {a:.4g} ms against {b:.4g} ms"
    return ""


@pin_app.command("show")
def show_command(
    table: Path = typer.Argument(..., help="A pinned table."),
    json_output: bool = typer.Option(False, "--json", help="The checked table as JSON (architecture aliases resolved)."),
) -> None:
    """Check a table against its schema and list its entries: architecture, key, config, timing, where from."""
    from .pinned import load_table

    loaded = load_table(table)
    if json_output:
        typer.echo(json.dumps(loaded.to_json(), indent=2))
        return
    key = loaded.kernel.get("key")
    typer.echo(f"{table}: kernel {loaded.kernel_name}" + (f", key {key}" if key else "") +
               f", {len(loaded.entries)} {'entry' if len(loaded.entries) == 1 else 'entries'}")
    for entry in sorted(loaded.entries, key=lambda e: e.line or 0):
        p = entry.provenance
        timing = f"{p['ms']:.4g} ms" if isinstance(p.get("ms"), (int, float)) else "not timed"
        if isinstance(p.get("baseline_ms"), (int, float)):
            timing += f" (baseline {p['baseline_ms']:.4g} ms)"
        origin = ", ".join(str(x) for x in (p.get("gpu"), p.get("by"), p.get("date")) if x) or "no provenance"
        typer.echo(f"  {entry.describe()}: {entry.config_text()}; {timing}; {origin}")
