"""``kernelrules report STUDY``: an HTML report of a tuning study, plots embedded.

The plots (matplotlib, an optional dependency: without it the report has the tables
only) are PNGs embedded as base64 ``data:`` URIs, so the report is one file:

* the pruning funnel: the space, rejected by rules, skipped by learned constraints,
  failed (by class), timed, not sampled;
* every trial's time (or TFLOP/s when the problem has a FLOP count) with the best so far;
* the winner against the architecture's roofline (the SKU's dense tensor-core peak for
  the problem's dtype and its DRAM bandwidth) and against the baseline (the problem's
  reference implementation, e.g. ``torch.matmul``) measured in the same final rounds.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path
from typing import Any, Mapping

from ..atomicio import write_output
from ..errors import KernelrulesError
from . import records as rec
from .feedback import FAILURES, TIMED
from .output import INTERPRET_WARNING
from .study import display_url

_COLORS = {"better": "#1a7f37", "slower": "#4c8eda", "rejected": "#999999", "learned": "#bbbbbb",
           "wrong_result": "#d1242f", "duplicate": "#dddddd"}


def _check_sqlite_file(path: Path) -> None:
    """Refuse, before SQLite opens it (and would write to it), anything but an SQLite database file:
    a text file, an empty file, a directory, a FIFO."""
    if not path.exists():
        raise KernelrulesError("no such study file", path=str(path), hint="an SQLite file written by kernelrules tune")
    if not path.is_file():
        raise KernelrulesError("not a study file (a directory, FIFO or device)", path=str(path))
    try:
        with open(path, "rb") as handle:
            header = handle.read(16)
    except OSError as exc:
        raise KernelrulesError(f"cannot read the study file: {exc.strerror or exc}", path=str(path)) from None
    if header != b"SQLite format 3\x00":
        raise KernelrulesError("not an SQLite database" + (" (the file is empty)" if not header else ""),
                               path=str(path), hint="an SQLite file written by kernelrules tune")


def open_study(storage: str, study_name: str | None) -> Any:
    """Load a study from a storage URL or an SQLite file; pick the only study when no name is given."""
    from .study import open_storage, optuna

    shown = storage
    if "://" not in storage:
        _check_sqlite_file(Path(storage))
        storage = f"sqlite:///{Path(storage).resolve()}"
    backend = open_storage(storage)
    names = [s.study_name for s in optuna.get_all_study_summaries(backend, include_best_trial=False)]
    if study_name is None:
        if len(names) != 1:
            raise KernelrulesError(f"the storage holds {len(names)} studies; pick one with --study-name",
                                   path=display_url(shown), hint=", ".join(names) if names else "it holds none")
        study_name = names[0]
    elif study_name not in names:
        raise KernelrulesError(f"no study {study_name!r} in {display_url(storage)}",
                               hint=", ".join(names) or "it holds none")
    return optuna.load_study(study_name=study_name, storage=backend)


def _png(fig: Any) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def plot_funnel(funnel: Mapping[str, Any]) -> str:
    import matplotlib.pyplot as plt

    labels = ["space", "sampled, rejected by rules", "learned constraints",
              *[f"failed: {k}" for k in funnel["failed_by_class"]], "timed", "same binary as a timed one", "not sampled"]
    values = [funnel["space"], funnel["rejected"], funnel["learned"], *funnel["failed_by_class"].values(),
              funnel["timed"], funnel.get("same_binary", 0), funnel["not_sampled"]]
    colors = ["#444444", "#999999", "#bbbbbb", *["#d1242f"] * len(funnel["failed_by_class"]), "#1a7f37", "#8fc79a",
              "#e0e0e0"]
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(labels) + 1))
    ax.barh(range(len(labels))[::-1], values, color=colors)
    ax.set_yticks(range(len(labels))[::-1], labels)
    for y, v in zip(range(len(labels))[::-1], values):
        ax.text(v, y, f" {v}", va="center")
    ax.set_xlabel("configs")
    ax.set_title("pruning funnel: space = sampled (rejected, learned, failed, timed, same binary) + not sampled")
    return _png(fig)


def plot_trials(records: list[Mapping[str, Any]], flops: float | None) -> str:
    """Every timed trial and the best so far, against wall time since the run started (each record's
    ``elapsed_s``; trial numbers where a record lacks it, as in studies made before it was recorded)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    timed = [r for r in records if r.get("status") in TIMED and r.get("ms")]
    clock = bool(timed) and all(isinstance(r.get("elapsed_s"), (int, float)) for r in records
                                if r.get("status") not in ("duplicate", "over_budget", "running", "waiting"))

    def x(record: Mapping[str, Any]) -> float:
        return record["elapsed_s"] if clock else record.get("trial", 0)

    def y(ms: float) -> float:
        return flops / (ms * 1e-3) / 1e12 if flops else ms

    for status in ("better", "slower"):
        points = [r for r in timed if r["status"] == status]
        ax.scatter([x(r) for r in points], [y(r["ms"]) for r in points], s=14, color=_COLORS[status], label=status)
    failed = [r for r in records if r.get("status") in FAILURES or r.get("status") in ("rejected", "learned")]
    if failed and (clock is False or all(isinstance(r.get("elapsed_s"), (int, float)) for r in failed)):
        low = min((y(r["ms"]) for r in timed), default=1.0)
        ax.scatter([x(r) for r in failed], [low] * len(failed), marker="x", s=12, color="#d1242f",
                   label="rejected / failed (not timed)")
    steps, best = [], None
    for record in sorted(timed, key=x):
        best = record["ms"] if best is None else min(best, record["ms"])
        steps.append((x(record), best))
    if steps:
        end = max(x(r) for r in timed)
        ax.step([s[0] for s in steps] + [end], [y(s[1]) for s in steps] + [y(steps[-1][1])], where="post",
                color="black", linewidth=1.2, label="best so far")
    ax.set_xlabel("seconds since the run started" if clock else "trial")
    ax.set_ylabel("TFLOP/s" if flops else "ms")
    ax.legend(fontsize=8)
    ax.set_title("every trial, with the best so far" + (" (wall time)" if clock else ""))
    return _png(fig)


def plot_roofline(meta: Mapping[str, Any], final: Mapping[str, Any] | None, best: list[Mapping[str, Any]]) -> str | None:
    import matplotlib.pyplot as plt

    flops, moved = meta.get("flops"), meta.get("bytes")
    if not flops or not moved:
        return None
    peaks = meta.get("peaks") or {}
    dtype = str(meta.get("dtype") or "fp16")
    peak = peaks.get(f"{dtype}_tensor_tflops_dense") or peaks.get("fp16_tensor_tflops_dense") or peaks.get("fp32_tflops")
    bandwidth = peaks.get("dram_bandwidth_gbps")
    intensity = flops / moved
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if peak and bandwidth:
        import numpy as np

        xs = np.logspace(np.log10(max(intensity / 100, 0.1)), np.log10(intensity * 100), 200)
        ax.plot(xs, np.minimum(peak, xs * bandwidth / 1e3), color="black", label=f"roofline ({meta.get('sku') or meta.get('arch')})")
        bound = min(peak, intensity * bandwidth / 1e3)
        ax.axhline(bound, color="#888888", linestyle=":", linewidth=0.8)
        ax.text(intensity, bound, f" bound at this problem: {bound:.0f} TFLOP/s", fontsize=8, va="bottom")
    points = [(f"#{r['trial']}", r["ms"]) for r in best[1:5]]
    winner = (final or {}).get("winner") or (best[0] if best else None)
    for label, ms in points:
        ax.scatter([intensity], [flops / (ms * 1e-3) / 1e12], color="#4c8eda", s=18)
    if winner:
        tf = flops / (winner["ms"] * 1e-3) / 1e12
        ax.scatter([intensity], [tf], color="#1a7f37", s=60, marker="*", label=f"winner: {tf:.3g} TFLOP/s", zorder=3)
    if final and final.get("baseline_ms"):
        tf = flops / (final["baseline_ms"] * 1e-3) / 1e12
        ax.scatter([intensity], [tf], color="#d1242f", s=40, marker="D", label=f"baseline {final.get('baseline')}: "
                                                                               f"{tf:.3g} TFLOP/s", zorder=3)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic, inputs and outputs once)")
    ax.set_ylabel("TFLOP/s")
    ax.legend(fontsize=8)
    ax.set_title("winner against the roofline and the baseline")
    return _png(fig)


def _table(rows: list[list[Any]], head: list[str]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{cells}</tr>{body}</table>"


def render(study: Any) -> str:
    """The report's HTML."""
    from .study import load_records

    records = load_records(study)
    attrs = study.user_attrs
    meta = attrs.get("kr_meta", {})
    final = attrs.get("kr_final")
    funnel = rec.funnel(records, int(meta.get("space_size") or 0))
    best = rec.best(records, 10)
    flops = meta.get("flops")
    plots, notes = [], []
    try:
        import matplotlib

        matplotlib.use("Agg")
        plots.append(("pruning funnel", plot_funnel(funnel)))
        plots.append(("trials", plot_trials(records, flops)))
        roof = plot_roofline(meta, final, best)
        if roof:
            plots.append(("roofline", roof))
        else:
            notes.append("no roofline: the problem section gives no FLOP count or bytes")
    except ImportError:
        notes.append("matplotlib is not installed (pip install 'kernelrules[tune]'): tables only")
    title = f"kernelrules tune: {study.study_name}"
    parts = [f"<h1>{html.escape(title)}</h1>"]
    if meta.get("interpret"):
        parts.append(f"<p class='warn'><b>--interpret:</b> {html.escape(INTERPRET_WARNING)}.</p>")
    parts.append(f"<p>kernel {html.escape(str(attrs.get('kr_identity', {}).get('kernel')))}, architecture "
                 f"{html.escape(str(meta.get('arch')))}, sizes {html.escape(str(meta.get('sizes')))}, "
                 f"{len(records)} trials.</p>")
    stage = attrs.get("kr_config_stage")
    if stage:
        parts.append(f"<p>The rules reject {stage['rejected']} of the {stage['space']} configs of the space at the "
                     f"config stage ({html.escape(', '.join(f'{k} {v}' for k, v in stage['codes'].items()))}).</p>")
    parts.append(_table([[k, v] for k, v in funnel.items() if not isinstance(v, dict)]
                        + [[f"failed: {k}", v] for k, v in funnel["failed_by_class"].items()], ["funnel", "count"]))
    for name, uri in plots:
        parts.append(f"<h2>{html.escape(name)}</h2><img alt='{html.escape(name)}' src='{uri}'>")
    winner = (final or {}).get("winner") or (best[0] if best else None)
    if winner:
        parts.append(f"<h2>winner</h2><pre>{html.escape(rec.triton_config_line(winner['config']))}</pre>")
    if final and final.get("top"):
        parts.append(f"<p>Re-measured interleaved, {final['rounds']} rounds on {html.escape(str(final.get('device')))}"
                     + (f"; baseline {html.escape(str(final.get('baseline')))}: {final['baseline_ms']:.4f} ms"
                        if final.get("baseline_ms") else "") + ".</p>")
        parts.append(_table([[i + 1, f"{t['ms']:.4f}", f"{t['search_ms']:.4f}", t["trial"], t.get("config_text")]
                             for i, t in enumerate(final["top"])], ["#", "ms (final)", "ms (search)", "trial", "config"]))
    parts.append("<h2>best configs (search)</h2>")
    parts.append(_table([[i + 1, f"{r['ms']:.4f}", f"{100 * (r.get('spread') or 0):.1f}%",
                          f"{r['tflops']:.1f}" if r.get("tflops") else "", r["trial"], r.get("config_text"),
                          "; ".join(r.get("bottleneck") or [])] for i, r in enumerate(best)],
                        ["#", "ms", "spread", "TFLOP/s", "trial", "config", "bottleneck guess"]))
    gaps = rec.gaps(records)
    if gaps:
        parts.append("<h2>gaps: failures a rule should have caught</h2><ul>"
                     + "".join(f"<li>{html.escape(g)}</li>" for g in gaps) + "</ul>")
    failures = [r for r in rec.final_records(records).values() if r.get("status") in FAILURES]
    if failures:
        parts.append("<h2>failures</h2>")
        parts.append(_table([[r["trial"], r["status"], r.get("config_text"), str(r.get("error") or "")[:300]]
                             for r in failures], ["trial", "class", "config", "error"]))
    parts.extend(f"<p class='note'>{html.escape(n)}</p>" for n in notes)
    style = ("body{font-family:sans-serif;max-width:1100px;margin:2em auto}table{border-collapse:collapse;margin:1em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:13px;text-align:left}.warn{background:#fff3cd;"
             "padding:8px}img{max-width:100%}")
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{''.join(parts)}</body></html>")


def write_report(storage: str, study_name: str | None, output: str | Path) -> Path:
    """Write the HTML report of one study; returns its path."""
    study = open_study(storage, study_name)
    path = Path(output)
    write_output(path, render(study))
    return path
