"""A cache of whole lint judgements, so that a warm ``kernelrules lint`` needs no compiler.

The compile cache answers a config's compile without compiling, but computing its key
needs Triton's own specialisation (and importing Triton takes about a second). A lint
judgement of one kernel, though, is a pure function of the kernel's source (with its jit
helpers and constants, hashed from the AST without importing Triton), its signature, its
configs, the architectures, the stage, the rules, and the kernelrules and Triton
versions (read from package metadata, not by importing). This cache keys the per-kernel
records and findings on exactly that, in a :class:`kernelrules.compile.diskstore.DiskStore`
(atomic writes, checksummed JSON entries); a corrupt entry is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from ..compile.diskstore import DiskStore, analyzer_roots, source_digest, triton_version
from .findings import Finding

FORMAT = 1
#: The file-name prefix of a whole kernel's outcome, filed beside its judgement under the same key.
OUTCOME = "outcome-"


_CODE: list[str] = []


def code_files() -> list[Path]:
    """kernelrules' own Python files: the package (every stage) and its analyzers, wherever installed."""
    roots = [Path(__file__).resolve().parents[1], *analyzer_roots()]
    return sorted({path for root in roots for path in root.rglob("*.py")})


def code_fingerprint() -> str:
    """A hash of kernelrules' own source files, so an edited (editable) install never replays
    judgements an older version of the code made under the same version number."""
    if not _CODE:
        _CODE.append(source_digest(code_files()))
    return _CODE[0]


def rules_fingerprint(engine: Any) -> str:
    """A hash of every rule's behaviour: code, severity, stage, condition, message, repairs."""
    parts = [(r.code, r.severity, r.stage, r.applies_to, r.condition.source, r.message.text,
              [(p.description, p.when.source if p.when else None, [(k, c.source) for k, c in p.set], p.remove)
               for p in r.repairs]) for r in engine.rules]
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def judgement_key(kernel: Any, signature: dict[str, Any], sites: Sequence[tuple], fixed: Sequence[str],
                  archs: Sequence[Any], stage: str, engine: Any, src: Sequence[str] = (),
                  timeout: float | None = None, allow_code: bool = False) -> str | None:
    """The cache key of one kernel's lint judgement; None when the source cannot be hashed.

    ``src`` (``--src``) decides where helpers imported from the package are found; the
    files found are in the source hash.
    """
    from ..discover.kernelsource import kernel_source_hash

    try:
        source = kernel_source_hash(kernel.path, kernel.name, tuple(src))
    except Exception:  # noqa: BLE001 - then simply do not cache
        return None
    payload = {
        "format": FORMAT, "kernelrules": __version__, "code": code_fingerprint(),
        "triton": triton_version(import_if_unlisted=False),
        "source": source,
        "path": str(Path(kernel.path).resolve()), "kernel": kernel.name, "signature": signature,
        "configs": [[config.to_dict(), line, col] for config, line, col in sites], "fixed": sorted(fixed),
        "archs": [(a.name, a.sku) for a in archs], "stage": stage, "rules": rules_fingerprint(engine),
        "timeout": timeout,  # a compile that timed out under one limit may finish under another
        "allow_code": allow_code,  # with --import, kernels refused for running user code are built
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True, default=repr).encode()).hexdigest()


class JudgementCache:
    """Per-kernel lint judgements under ``<cache dir>/lint/``.

    Every entry holds its key and a SHA-256 of its content: an entry that is truncated,
    edited, of the wrong shape or filed under another key is ignored (then recomputed and
    rewritten), never replayed.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.root = Path(directory) / "lint"
        self.store = DiskStore(self.root, ".json")

    def get(self, key: str) -> tuple[list[dict], list[Finding]] | None:
        """The records and findings of one judgement, or None."""
        data = self.store.get_json(key)
        if data is None:
            return None
        findings = _findings(data.get("findings"))
        records = data.get("records")
        if findings is None or not _dicts(records):
            return None
        return list(records), findings

    def put(self, key: str, records: list[dict], findings: list[Finding]) -> None:
        """Store what :meth:`get` returns."""
        self.store.put_json(key, {"records": records, "findings": [asdict(f) for f in findings]})

    def get_outcome(self, key: str, prefix: str = OUTCOME) -> dict[str, Any] | None:
        """A whole kernel's outcome (status, message, provenance, records, findings), or None. ``prefix``
        names the kind of key (:data:`OUTCOME`: the resolved launch's; ``launch-``: the inputs' before it)."""
        data = self.store.get_json(key, prefix=prefix)
        if data is None:
            return None
        findings = _findings(data.get("findings"))
        if (findings is None or not _dicts(data.get("records")) or not isinstance(data.get("status"), str)
                or not isinstance(data.get("message"), (str, type(None)))
                or not isinstance(data.get("signature_provenance"), dict)):
            return None
        return {**data, "findings": findings}

    def put_outcome(self, key: str, status: str, message: str | None, provenance: dict[str, str],
                    records: list[dict], findings: list[Finding], prefix: str = OUTCOME) -> None:
        """Store what :meth:`get_outcome` returns."""
        self.store.put_json(key, {"status": status, "message": message, "signature_provenance": provenance,
                                  "records": records, "findings": [asdict(f) for f in findings]}, prefix=prefix)


def _dicts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, dict) for v in value)


def _findings(items: Any) -> list[Finding] | None:
    """Findings from their JSON form; None when any item is not one."""
    if not _dicts(items):
        return None
    names = {f.name for f in fields(Finding)}
    try:
        return [Finding(**{k: v for k, v in item.items() if k in names}) for item in items]
    except TypeError:
        return None
