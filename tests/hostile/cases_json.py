"""Hostile JSON and JSON Lines: ``--trace`` files, pinned tables (``pin show``, ``pin merge``,
``lint --pinned``) and ``report``'s study file.

Each JSON kind gets the same generated variants (deep nesting, numbers Python's ``json``
cannot or should not read, NaN and infinities, wrong top-level shapes, truncation, bad
encodings, a directory, a FIFO, a symlink loop, a missing or oversize file) and its own
schema mutations; a table or trace of about 1 MB must be judged within the bounds.
"""

from __future__ import annotations

import json

from . import inputs
from .model import DIRECTORY, FIFO, JUDGED, REFUSED, Case, symlink

LINT = ("lint", "k.py", "--arch", "hopper", "--stage", "config", "-q")


def _generic(base: str, name: str, limit: int) -> list[tuple[str, object, str]]:
    """(variant, content, message) shared by every JSON kind; the message defaults to the file name."""
    first = base.splitlines()[0]
    return [
        ("deep-nesting", "[" * 100000 + "]" * 100000 + "\n", name),
        ("deep-object", '{"a":' * 50000 + "1" + "}" * 50000 + "\n", name),
        ("huge-int", base.replace("4096", "9" * 5000, 1), "4300 digits"),
        ("huge-float", base.replace("4096", "1e999", 1), "out of range"),
        ("empty", "", name),
        ("whitespace", " \n\t\n", name),
        ("top-list", "[1, 2, 3]\n", name),
        ("top-string", '"kernelrules"\n', name),
        ("top-number", "1e999\n", name),
        ("top-null", "null\n", name),
        ("truncated", base[: len(base) // 2], name),
        ("trailing-garbage", base.rstrip("\n") + " }}}\n", name),
        ("invalid-utf8", base.encode() + b'\xff\xfe"\n', name),
        ("utf16", base.encode("utf-16"), name),
        ("binary-garbage", bytes((i * 151 + 7) % 256 for i in range(4096)), name),
        ("nan-literal", first.replace("{", '{"nan": NaN, ', 1) + "\n" + base[len(first) + 1:], "NaN is not JSON"),
        ("single-quotes", base.replace('"', "'"), name),
        ("directory", DIRECTORY, name),
        ("fifo", FIFO, name),
        ("symlink-loop", symlink(name), name),
        ("missing", None, name),
        ("oversize", base + " " * limit + "\n", "up to"),
    ]


def _trace_records(count: int) -> str:
    lines = [json.dumps(inputs.TRACE_HEADER)]
    for i in range(count):
        lines.append(json.dumps({**inputs.TRACE_RECORD, "args": {**inputs.TRACE_RECORD["args"], "n": 16 * (i + 1)}}))
    return "\n".join(lines) + "\n"


def _trace_cases() -> list[Case]:
    header = json.dumps(inputs.TRACE_HEADER) + "\n"
    record = inputs.TRACE_RECORD
    specific = [
        ("no-header", json.dumps(record) + "\n", "not a kernelrules trace"),
        ("wrong-version", json.dumps({**inputs.TRACE_HEADER, "schema_version": 99}) + "\n", "schema_version"),
        ("record-a-list", header + "[1, 2]\n", "JSON object"),
        ("record-missing-kernel", header + json.dumps({k: v for k, v in record.items() if k != "kernel"}) + "\n",
         "'kernel'"),
        ("args-a-list", header + json.dumps({**record, "args": [1, 2]}) + "\n", "'args'"),
        ("line-a-string", header + json.dumps({**record, "line": "seven"}) + "\n", "t.jsonl:2"),
        ("truncated-record", header + json.dumps(record)[:40] + "\n", "t.jsonl:2"),
        ("nan-arg", header + json.dumps({**record, "args": {**record["args"], "n": float("nan")}}) + "\n",
         "t.jsonl:2: invalid JSON: NaN is not JSON"),
        ("huge-arg", header + json.dumps({**record, "args": {**record["args"], "n": 2 ** 200}}) + "\n", ""),
    ]
    found = [Case(name=f"json/trace/{v}", argv=(*LINT, "--trace", "t.jsonl"),
                  files={"k.py": inputs.KERNEL, **({} if c is None else {"t.jsonl": c})}, message=m,
                  group="json:trace") for v, c, m in _generic(inputs.TRACE, "t.jsonl", 64 << 20)]
    for variant, content, message in specific:
        judged = variant == "huge-arg"
        found.append(Case(name=f"json/trace/{variant}", argv=(*LINT, "--trace", "t.jsonl"),
                          files={"k.py": inputs.KERNEL, "t.jsonl": content}, message=message,
                          expect=JUDGED if judged else REFUSED, group="json:trace"))
    for variant, content in [("valid", inputs.TRACE), ("megabyte-of-launches", _trace_records(4000)),
                             ("blank-lines", header + "\n" * 200000 + json.dumps(record) + "\n")]:
        found.append(Case(name=f"json/trace/{variant}", argv=(*LINT, "--trace", "t.jsonl"),
                          files={"k.py": inputs.KERNEL, "t.jsonl": content}, expect=JUDGED, group="json:trace"))
    return found


def _table(**changes) -> str:
    data = inputs.pinned_table()
    entry = data["entries"][0]
    for key, value in changes.items():
        where, _, field = key.partition("__")
        target = {"top": data, "kernel": data["kernel"], "entry": entry, "config": entry["config"]}[where]
        if value is _DROP:
            target.pop(field)
        else:
            target[field] = value
    return json.dumps(data, indent=2) + "\n"


_DROP = object()


def _pinned_specific() -> list[tuple[str, str, str]]:
    many = inputs.pinned_table()  # 4000 entries (~0.7 MB) keyed on a name that is not a kernel parameter
    many["kernel"]["key"] = ["batch"]
    many["entries"] = [{**many["entries"][0], "key": {"batch": i}} for i in range(4000)]
    return [
        ("version-2", _table(top__version=2), "version 2 is not supported"),
        ("unknown-key", _table(top__colour="red"), "colour"),
        ("entries-an-object", _table(top__entries={"a": 1}), "entries"),
        ("missing-kernel", _table(top__kernel=_DROP), "kernel"),
        ("bad-kernel-name", _table(kernel__name="not a name"), "kernel.name"),
        ("warps-a-string", _table(config__num_warps="4"), "num_warps"),
        ("warps-zero", _table(config__num_warps=0), "num_warps"),
        ("warps-huge", _table(config__num_warps=2 ** 70), ""),  # judged: lint says LNT009 (config rejected)
        ("block-true", _table(config__BLOCK=True), "BLOCK"),
        ("empty-config", _table(entry__config={}), "config"),
        ("unknown-arch", _table(entry__arch="sm_999"), "sm_999"),
        ("empty-arch", _table(entry__arch=""), "arch"),
        ("ms-negative", _table(entry__provenance={"by": "me", "date": "2025-01-01", "ms": -1}), "ms"),
        ("ms-nan", _table(entry__provenance={"by": "me", "date": "2025-01-01", "ms": float("nan")}), "NaN is not JSON"),
        ("ms-infinite", _table(entry__provenance={"by": "me", "date": "2025-01-01"}).replace(
            '"date": "2025-01-01"', '"date": "2025-01-01", "ms": Infinity'), "Infinity is not JSON"),
        ("bad-sha", _table(entry__source_sha256="xyz"), "source_sha256"),
        ("duplicate-entries", json.dumps({**inputs.pinned_table(), "entries": inputs.pinned_table()["entries"] * 2}),
         "pins the same launch"),
        ("many-entries", json.dumps(many), ""),
    ]


def _distinct_launches(count: int) -> str:
    """A table of ``count`` entries whose key values are kernel arguments: one launch signature each."""
    data = inputs.pinned_table()
    data["entries"] = [{**data["entries"][0], "key": {"n": 7 + 16 * i if i % 2 else 16 * (i + 1)}} for i in range(count)]
    return json.dumps(data)


def _pinned_cases() -> list[Case]:
    kinds = [
        ("pin-show", ("pin", "show", "p.json"), {}),
        ("lint-pinned", (*LINT, "--pinned", "p.json"), {"k.py": inputs.KERNEL}),
        ("pin-merge", ("pin", "merge", "out.json", "good.json", "p.json"), {"good.json": inputs.PINNED}),
    ]
    found = []
    for kind, argv, extra in kinds:
        variants = [(v, c, m, REFUSED) for v, c, m in _generic(inputs.PINNED, "p.json", 8 << 20)]
        variants += [(v, c, m, REFUSED if m else JUDGED) for v, c, m in _pinned_specific()]
        variants.append(("valid", inputs.PINNED, "", JUDGED))
        for variant, content, message, expect in variants:
            files = {**extra, **({} if content is None else {"p.json": content})}
            found.append(Case(name=f"json/{kind}/{variant}", argv=argv, files=files, expect=expect,
                              message=message or ("p.json" if expect == REFUSED else ""),
                              writes=("out.json",) if kind == "pin-merge" else (), group=f"json:{kind}"))
    found.append(Case(name="json/lint-pinned/distinct-launches", argv=(*LINT, "--pinned", "p.json"),
                      # 4000 shapes: judged per specialisation class (1, divisible by 16 or not), one pool
                      files={"k.py": inputs.KERNEL, "p.json": _distinct_launches(4000)}, expect=JUDGED,
                      group="json:lint-pinned"))
    return found


def _report_cases() -> list[Case]:
    """``report STUDY``: the study is an SQLite file or a URL; anything else is refused, nothing written."""
    argv = ("report", "study.db", "-o", "r.html")
    variants = [
        ("missing", {}, "study.db"),
        ("empty-file", {"study.db": b""}, "study.db: not an SQLite database (the file is empty)"),
        ("text-file", {"study.db": "not a database\n"}, "study.db: not an SQLite database"),
        ("truncated-sqlite", {"study.db": b"SQLite format 3\x00" + b"\x00" * 84}, "study.db"),
        ("directory", {"study.db": DIRECTORY}, "study.db: not a study file"),
        ("fifo", {"study.db": FIFO}, "study.db: not a study file"),
        ("symlink-loop", {"study.db": symlink("study.db")}, "study.db"),
    ]
    found = [Case(name=f"json/report/{v}", argv=argv, files=files, message=m, group="json:report")
             for v, files, m in variants]
    found += [
        Case(name="json/report/unknown-scheme", argv=("report", "nosuch://host/db", "-o", "r.html"),
             message="nosuch", group="json:report"),
        Case(name="json/report/unreachable-postgres",
             argv=("report", "postgresql://u:secret@127.0.0.1:1/db", "-o", "r.html"), message="127.0.0.1",
             group="json:report"),
    ]
    return found


def json_cases() -> list[Case]:
    return [*_trace_cases(), *_pinned_cases(), *_report_cases()]
