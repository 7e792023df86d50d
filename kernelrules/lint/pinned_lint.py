"""``kernelrules lint FILE.py --pinned TABLE.json``: check a pinned table against its kernel.

A table is read at launch with no benchmark to catch a bad entry, so lint checks it
where the kernel's source is (docs/pinned.md, "Lint"); findings are reported at the
entry's line in the table, with the lint command's own codes:

- ``LNT007 pinned-stale`` (warning): the entry's ``source_sha256`` is not the hash of
  the kernel's current source (:func:`kernelrules.pinned.source_sha256`): it was tuned
  for another version of the kernel;
- ``LNT008 pinned-never-matches`` (error): no launch can look the entry up: its key names
  are not the kernel's autotune key (Triton keys on the key arguments the kernel takes,
  and nothing else), or its dtypes name arguments the kernel does not take or scalars;
- ``LNT009 pinned-config-rejected`` (error): the entry's config cannot launch there: it
  sets a name that is not a constexpr of the kernel, or the rules reject it on the
  entry's architecture (the config stage, and with ``--stage compiled`` a cross-compile),
  for the launch the entry describes (its key values and dtypes, the rest of the
  signature inferred as lint infers it);
- ``LNT001 needs-spec`` when an entry cannot be judged for lack of a signature.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from ..config import LAUNCH_OPTIONS, KernelConfig
from ..errors import KernelrulesError
from .findings import LINT_CODES, Finding
from ..pinned import TORCH_TO_TRITON, PinnedTable, source_sha256


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):
        return str(path)


class TableLinter:
    """The findings of one table against its kernel (see the module docstring)."""

    def __init__(self, table: PinnedTable, kernel: Any, *, stage: str = "config", timeout: float = 30.0,
                 jobs: int | None = None, src: Sequence[str] = ()) -> None:
        self.table, self.kernel, self.stage, self.timeout, self.jobs, self.src = table, kernel, stage, timeout, jobs, src
        self.shown = _relative(Path(table.path or "<table>"))
        try:
            self.lines = Path(table.path).read_text(encoding="utf-8").splitlines() if table.path else []
        except OSError:
            self.lines = []
        self.findings: list[Finding] = []

    def finding(self, code: str, entry: Any, message: str, **extra: Any) -> None:
        spec = LINT_CODES[code]
        line = (entry.line if entry is not None else None) or 1
        self.findings.append(Finding(
            path=self.shown, line=line, column=1, code=code, name=spec.name, severity=spec.severity, message=message,
            kernel=self.kernel.name, arch=entry.arch if entry is not None else None,
            config=dict(entry.config) if entry is not None else None, fix=extra.get("fix"),
            source_line=self.lines[line - 1] if 0 < line <= len(self.lines) else None))

    def run(self) -> list[Finding]:
        kernel = self.kernel
        name = kernel.def_name or kernel.name
        current = source_sha256(kernel.path, name, kernel.line)
        params = {p.name: p for p in kernel.params}
        runtime = {p.name for p in kernel.runtime_params}
        constexprs = {p.name for p in kernel.params if p.constexpr}
        autotune_key = list(kernel.autotune.key) if kernel.autotune is not None and kernel.autotune.key else None
        key_names = autotune_key if autotune_key is not None else self.table.kernel.get("key")
        expected = None if key_names is None else {k for k in key_names if k in params}
        if autotune_key is not None and "key" in self.table.kernel and list(self.table.kernel["key"]) != autotune_key:
            self.finding("LNT008", None, f"the table was made for key={self.table.kernel['key']}, {name}'s "
                                         f"@triton.autotune has key={autotune_key}")
        to_judge = []
        for entry in self.table.entries:
            where = f"{entry.describe()}"
            if entry.source_sha256 and entry.source_sha256 != current:
                self.finding("LNT007", entry, f"{where}: tuned for another version of {name}'s source "
                                              f"(source_sha256 {entry.source_sha256[:12]}..., now {current[:12]}...)",
                             fix="re-tune and export it, or delete the entry")
            problems = []
            if expected is not None and set(entry.key) != expected:
                problems.append(f"its key names {sorted(entry.key)} are not the key arguments {sorted(expected)}")
            wrong = sorted(k for k in (entry.dtypes or {}) if k not in runtime)
            if wrong:
                problems.append(f"dtypes of {', '.join(wrong)}, which {'is' if len(wrong) == 1 else 'are'} not "
                                f"a tensor argument of {name}")
            if problems:
                self.finding("LNT008", entry, f"{where}: no launch can match it: {'; '.join(problems)}")
            unknown = sorted(k for k in entry.config if k not in constexprs and k not in LAUNCH_OPTIONS)
            if unknown:
                self.finding("LNT009", entry, f"{where}: the config sets {', '.join(unknown)}, not a constexpr "
                                              f"parameter of {name}")
                continue
            to_judge.append(entry)
        self._judge(to_judge, constexprs)
        return self.findings

    def _judge(self, entries: list, constexprs: set[str]) -> None:
        """Judge each entry's config on its architecture, grouped by launch signature."""
        from ..specify.signatures import infer_signature

        groups: dict[tuple, list] = defaultdict(list)
        specs: dict[tuple, dict] = {}
        inferred: dict[tuple, Any] = {}  # entries with the same launch values share one inference
        runtime = {p.name for p in self.kernel.runtime_params}
        for entry in entries:
            spec = {k: v for k, v in entry.key.items() if k in runtime}
            spec.update({k: "*" + TORCH_TO_TRITON.get(v, v) for k, v in (entry.dtypes or {}).items() if k in runtime})
            known = tuple(sorted(spec.items(), key=str))
            if known not in inferred:
                inferred[known] = infer_signature(self.kernel, spec=spec, use_sidecar=True)
            signature = inferred[known]
            if not signature.complete:
                self.finding("LNT001", entry, f"{entry.describe()}: not judged: no launch signature for "
                                              f"{', '.join(signature.missing)}; write a spec ('kernelrules spec')")
                continue
            launch = {k: _representative(v) if k in runtime else v for k, v in signature.spec.items()}
            ident = (entry.arch, tuple(sorted(launch.items(), key=str)))
            specs[ident] = launch
            groups[ident].append(entry)
        from ..compile.pool import CompilePool

        pool = CompilePool(self.jobs, self.timeout)  # one pool for every signature: workers start once
        try:
            self._judge_groups(groups, specs, constexprs, pool)
        finally:
            pool.close()

    def _judge_groups(self, groups: dict, specs: dict, constexprs: set[str], pool: Any) -> None:
        from ..arch import load_arch
        from ..judge.pipeline import ConfigJudge
        from ..compile.target import KernelTarget

        for ident, group in groups.items():
            arch = load_arch(ident[0])
            spec = specs[ident]
            target = KernelTarget.for_signature(self.kernel.path, self.kernel.name, spec, src=self.src)
            configs = [KernelConfig.from_dict({**{k: v for k, v in e.key.items() if k in constexprs}, **e.config})
                       for e in group]
            pruner = ConfigJudge(target, jobs=self.jobs, timeout=self.timeout, pool=pool)
            try:
                records, _model = pruner.judge_arch(configs, arch, self.stage == "compiled", {})
            finally:
                pruner.close()
            for entry, record in zip(group, records):
                errors = [d for d in record.verdict.diagnostics if d.severity == "error"]
                if record.verdict.rejected and errors:
                    reasons = "; ".join(f"{d.code} {d.message}" for d in errors)
                    repair = record.verdict.repair
                    self.finding("LNT009", entry, f"{entry.describe()}: the rules reject {entry.config_text()} on "
                                                  f"{arch.name}: {reasons}",
                                 fix=None if repair is None else f"nearest passing config: {repair}")


def _representative(value: Any) -> Any:
    """An integer launch argument as Triton's JIT specialises it: 1, divisible by 16 or not, 32 or 64 bits.

    Entries whose sizes differ only within a class compile the same kernel, so they are judged together:
    a table of thousands of shapes costs a few compiles, not thousands."""
    if isinstance(value, bool) or not isinstance(value, int):
        return value
    if value == 1:
        return 1
    wide = not -2**31 <= value < 2**31
    return (2**32 if wide else 16) + (0 if value % 16 == 0 else 1)


def lint_tables(tables: Sequence[PinnedTable], kernels: Sequence[Any], **options: Any) -> list[Finding]:
    """Findings of every table against the kernel it names among ``kernels`` (discovered kernels);
    a table whose kernel is not there is a KernelrulesError (a usage error)."""
    findings: list[Finding] = []
    for table in tables:
        matches = [k for k in kernels if (k.def_name or k.name) == table.kernel_name]
        if not matches:
            raise KernelrulesError(f"the table pins kernel {table.kernel_name!r}, which is not among the linted "
                                   f"kernels", path=str(table.path), hint="lint the file that defines it")
        findings.extend(TableLinter(table, matches[0], **options).run())
    return findings
