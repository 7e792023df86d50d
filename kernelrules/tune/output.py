"""What ``kernelrules tune`` prints: a progress bar with the best so far, trial lines, the summary."""

from __future__ import annotations

import json
import sys
from typing import Any, Callable, Mapping

from . import records as rec

INTERPRET_WARNING = ("timings under --interpret (TRITON_INTERPRET=1, on the CPU) are meaningless for tuning: "
                     "they test the loop, the gates and the storage, not the kernel's speed")


def trial_line(record: Mapping[str, Any]) -> str:
    """One line per trial for logs and terminals without a progress bar."""
    status = record["status"]
    head = f"trial {record['trial']:4d} {status:16s} {record.get('config_text', '')}"
    if record.get("ms") is not None:
        tf = f", {record['tflops']:.1f} TFLOP/s" if record.get("tflops") else ""
        vs = f", x{record['vs_best']:.3f} of best" if record.get("vs_best") else ""
        head += f"  {record['ms']:.4f} ms ±{100 * (record.get('spread') or 0):.1f}%{tf}{vs}"
    elif record.get("rule_codes"):
        head += f"  [{', '.join(record['rule_codes'])}]"
    if record.get("error") and status not in ("better", "slower"):
        head += f"  {str(record['error'])[:160]}"
    return head


class Progress:
    """A rich progress bar on stderr (terminals only) whose text is the best time so far."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.total = total
        self.bar: Any = None
        self.task: Any = None

    def __enter__(self) -> Callable[[dict], None]:
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress as Bar, TextColumn, TimeElapsedColumn

            self.bar = Bar(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                           console=Console(stderr=True), transient=True)
            self.bar.start()
            self.task = self.bar.add_task("tuning", total=self.total)
        return self.update

    def update(self, event: dict) -> None:
        if self.bar is None:
            return
        best = event.get("best_ms")
        text = "tuning" + (f", best {best:.4f} ms" if best else "")
        self.bar.update(self.task, completed=event.get("judged", 0), total=event.get("total"), description=text)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def summary_lines(summary: Mapping[str, Any], notes: list[str]) -> list[str]:
    """The end-of-run text: funnel, best configs, winner line, baseline, gaps, notes."""
    lines = []
    if summary.get("interpret"):
        lines.append(f"note: {INTERPRET_WARNING}")
    f = summary["funnel"]
    failed = ", ".join(f"{k} {v}" for k, v in f["failed_by_class"].items())
    codes = ", ".join(f"{k} {v}" for k, v in summary.get("rejected_codes", {}).items())
    lines.append(f"study {summary['study']} ({summary['storage']}), {summary['arch']}")
    stage = summary.get("config_stage") or {}
    if stage:  # the whole space's verdicts first; the line after counts only the configs sampled
        lines.append(f"the rules reject {stage['rejected']} of the space's {stage['space']} configs before any "
                     f"launch (config stage)")
    sampled = f["space"] - f["not_sampled"]
    lines.append(f"sampled {sampled} of the {f['space']} configs: {f['timed']} timed"
                 + (f", {f['same_binary']} told a num_stages twin's time" if f.get("same_binary") else "")
                 + f", {f['rejected']} rejected by rules" + (f" ({codes})" if codes else "")
                 + (f", {f['learned']} skipped by learned constraints" if f["learned"] else "")
                 + f", {f['failed']} failed" + (f" ({failed})" if failed else "")
                 + (f"; {f['duplicates']} duplicate proposals" if f["duplicates"] else "")
                 + (f"; {f['interrupted']} interrupted and retried" if f["interrupted"] else ""))
    final = summary.get("final")
    if final and final.get("top"):
        lines.append(f"best configs, re-measured interleaved ({final['rounds']} rounds on {final.get('device')}):")
        rows = [{**t, "trial": t["trial"], "spread": None} for t in final["top"]]
        lines.extend(rec.table(rows, summary.get("flops")))
        if final.get("baseline_ms") and final["top"][0]["ms"]:
            ratio = final["baseline_ms"] / final["top"][0]["ms"]
            lines.append(f"baseline {final.get('baseline')}: {final['baseline_ms']:.4f} ms, measured in the same rounds "
                         f"(the winner is {ratio:.2f}x its speed)")
    elif summary.get("best"):
        lines.append("best configs:")
        lines.extend(rec.table(summary["best"], summary.get("flops")))
    if summary.get("winner"):
        lines.append(f"winner: {summary['winner']['triton_config']}")
    else:
        lines.append("no config was timed: no winner")
    for gap in summary.get("gaps", []):
        lines.append(f"gap (a rule to add): {gap}")
    for learned in summary.get("learned", []):
        lines.append(f"learned: {learned}")
    lines.extend(f"note: {n}" for n in notes)
    return lines


def json_line(kind: str, data: Mapping[str, Any]) -> str:
    return json.dumps({"type": kind, **data}, default=str)
