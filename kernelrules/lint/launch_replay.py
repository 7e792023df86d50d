"""Replay a kernel's whole lint outcome before its launch is resolved, when nothing it reads changed.

The judgement cache (:mod:`kernelrules.lint.judgement_cache`) keys a kernel's outcome on
its *resolved* launch (signature, guessed constexprs, configs), so a warm run still
resolves every kernel: reading its body's dataflow, its helpers, its package's values.
On a package of hundreds of kernels that reading is most of a warm run (unsloth, 56
kernels: 8 of 13.5 profiled seconds; discovery 2.4 s; replaying 0.04 s).

Everything that reading depends on is known before it starts: the discovered kernel
(its configs among it), its own file and sidecar spec, the Python files its imports can
reach (:class:`kernelrules.discover.pkgsnapshot.Snapshots`, one digest per search root
and run), the spec and trace given, and what decides the judging (architectures, stage,
compile time limit, rules, kernelrules' code, Triton's version and the environment
switches the compile cache keys on).
:meth:`LaunchReplay.key` hashes exactly those; an outcome stored under that key
(analyzed or needs-spec, never an error or a run that left something unjudged) is the
kernel's report again, byte for byte, its autotune side effects (``LNT006``) included,
without resolving or compiling. When any input differs the kernel is resolved as
before, and the judgement cache and the compile cache still spare it the compiles that
did not change. ``--import`` runs are not keyed here: their configs come from running
the module.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any, Sequence

from .. import __version__
from ..compile.cache import LAUNCH_ENV
from ..compile.diskstore import triton_version
from ..discover.pkgfiles import search_roots
from ..discover.pkgsnapshot import Snapshots, file_bytes
from .findings import Finding, KernelReport, LintReport
from .judgement_cache import FORMAT, JudgementCache, code_fingerprint, rules_fingerprint
from .placement import FindingPlacer, shown_path

#: The file-name prefix of an outcome filed under its launch key (beside the judgement cache's entries).
LAUNCH = "launch-"

#: An object's default ``repr`` (``<... at 0x7f...>``) differs from run to run: such an input cannot be keyed.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def _stable_text(value: Any) -> str | None:
    """``value`` as canonical JSON (``repr`` for what JSON cannot hold); None when it would differ between runs."""
    text = json.dumps(value, sort_keys=True, default=repr)
    return None if _ADDRESS.search(text) else text


def _sidecar(path: Any) -> str:
    """A digest of the kernel module's sidecar spec (``<stem>.kernelrules.yaml``), or of what stands in its
    place (nothing, a FIFO: never waited on)."""
    from ..specify.signatures import sidecar_path

    return hashlib.sha256(file_bytes(sidecar_path(path))).hexdigest()


class LaunchReplay:
    """Kernel outcomes under keys made before the launch is resolved; one instance per lint run.

    ``options`` is the run's :class:`kernelrules.lint.linter.LintOptions`, ``archs`` its loaded
    architectures and ``engine`` its rule engine.
    """

    def __init__(self, cache_dir: Any, options: Any, archs: Sequence[Any], engine: Any) -> None:
        self.cache = JudgementCache(cache_dir)
        self.options = options
        self.archs = archs
        self.engine = engine
        self.snapshots = Snapshots()
        self._run: str | None | bool = False  # the run's share of every key, made on first use

    def _run_part(self) -> str | None:
        """What every kernel's key shares: code, Triton, rules and the run's options and inputs."""
        if self._run is False:
            options = self.options
            self._run = _stable_text({
                "format": FORMAT, "kernelrules": __version__, "code": code_fingerprint(),
                "triton": triton_version(import_if_unlisted=False), "rules": rules_fingerprint(self.engine),
                "archs": [(a.name, a.sku) for a in self.archs], "stage": options.stage, "timeout": options.timeout,
                "src": [str(Path(s).resolve()) for s in options.src],
                "spec": options.spec, "trace": sorted((list(k), v) for k, v in (options.trace or {}).items()),
                # What the compile cache keys on besides the job: Triton's environment switches that change a build.
                "launch_env": {name: os.environ[name] for name in LAUNCH_ENV if os.environ.get(name)},
            })
        return self._run  # type: ignore[return-value]

    def key(self, kernel: Any) -> str | None:
        """The key of ``kernel``'s outcome (its autotune side effects, launch and judgement) from what lint
        will read; None when it cannot be made (an input without a stable form, a package too large to
        digest). Not for ``--import`` runs, whose configs come from running the module."""
        run = self._run_part()
        if run is None:
            return None
        try:
            roots = search_roots(Path(kernel.path), tuple(self.options.src))
        except OSError:
            return None
        snapshot = self.snapshots.digest(roots)
        kernel_text = _stable_text({
            "kernel": repr(kernel), "path": str(Path(kernel.path).resolve()), "shown": shown_path(kernel.path),
            "sidecar": _sidecar(kernel.path),
        })
        if snapshot is None or kernel_text is None:
            return None
        return hashlib.sha256(f"{run}\0{snapshot}\0{kernel_text}".encode("utf-8", "surrogateescape")).hexdigest()

    def replay(self, key: str, kernel: Any, kernel_report: KernelReport, report: LintReport,
               place: FindingPlacer) -> bool:
        """Give ``kernel_report`` the outcome stored under ``key`` and add its findings to ``report``;
        False when there is none."""
        cached = self.cache.get_outcome(key, prefix=LAUNCH)
        if cached is None:
            return False
        kernel_report.status, kernel_report.message = cached["status"], cached["message"]
        kernel_report.signature_provenance = dict(cached["signature_provenance"])
        kernel_report.records = cached["records"]
        place.relocate(cached["findings"], kernel)
        report.findings.extend(cached["findings"])
        return True

    def has(self, key: str) -> bool:
        """Whether an outcome is stored under ``key`` (the kernel will be replayed, not judged)."""
        return self.cache.get_outcome(key, prefix=LAUNCH) is not None

    def store(self, key: str, kernel_report: KernelReport, findings: list[Finding]) -> None:
        """File the kernel's outcome under ``key`` when it may be replayed: analyzed or needs-spec."""
        if kernel_report.status in ("analyzed", "needs-spec"):
            self.cache.put_outcome(key, kernel_report.status, kernel_report.message,
                                   kernel_report.signature_provenance, kernel_report.records, findings,
                                   prefix=LAUNCH)
