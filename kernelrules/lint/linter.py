"""``kernelrules lint``: discover kernels in source files, find their signatures, judge their configs.

The pipeline, for each file and kernel, never running the user's module:

1. discover the ``@triton.jit`` kernels and their ``@triton.autotune`` configs with
   ``ast`` (:mod:`kernelrules.discover.kernels`);
2. give each kernel a launch signature, strongest source first: ``--spec``, a sidecar
   ``<module>.kernelrules.yaml``, launch call sites, dataflow and naming
   (:mod:`kernelrules.specify.signatures`); a kernel whose signature stays incomplete is
   reported as *needs-spec* with what is missing;
3. judge every config on every architecture with :class:`kernelrules.judge.pipeline.ConfigJudge`
   (config stage with the resource model's predictions, then compiled facts unless
   ``stage="config"``);
4. turn verdicts into findings at the config's (or the kernel's) source line, apply
   suppression comments, and hand the report to a reporter.

Why over 400 lines: the lint run from files to report is one sequence; the specify step
(specify/kernelspec.py), finding placement (placement.py) and reporting (reporters.py) are already
apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..arch import load_arch
from ..compile.cache import ResultCache
from ..config import KernelConfig
from ..discover.consent import allowing_user_code
from ..discover.targetfacts import targeting
from ..judge.engine import Engine, default_engine
from ..errors import KernelrulesError
from .findings import KernelReport, LintReport
from ..specify.guess_search import guessed_fp16_pointers, pointer_variants
from .judgement_cache import JudgementCache, judgement_key
from .launch_replay import LaunchReplay
from .look_ahead import LookAhead
from ..judge.pipeline import ConfigJudge
from ..compile.target import KernelTarget
from ..specify.kernelspec import ResolvedKernel, kernel_function, resolve, uses_dot
from .placement import FindingPlacer, shown_path
from ..compile.limits import nothing_compiled
from ..judge.ruleset import RuleSelection
from .settings import Settings
from .suppress import suppress_report

Progress = Callable[[str, int, int], None]


@dataclass
class LintOptions:
    """What the command line and ``[tool.kernelrules]`` decide, with the input files already loaded.

    ``spec`` is a loaded spec file (:func:`kernelrules.specify.signatures.load_spec_file`), ``trace`` a loaded
    launch trace (:func:`kernelrules.specify.trace.load_trace`), ``pinned`` loaded pinned tables
    (:func:`kernelrules.pinned.load_table`) checked against their kernels; ``selection`` decides
    which findings the report keeps (:meth:`kernelrules.lint.settings.Settings.rule_selection`).
    """

    archs: Sequence[str] = ("sm_89",)
    stage: str = "compiled"
    spec: Mapping[str, Mapping[str, Any]] | None = None
    jobs: int | None = None
    timeout: float = 30.0
    cache_dir: str | None = None
    trace: Mapping[tuple[str, str], list] | None = None
    import_modules: bool = False
    selection: RuleSelection = field(default_factory=RuleSelection)
    pinned: Sequence[Any] = ()
    #: Directories holding packages kernels import jit helpers from (``--src``), read, never imported.
    src: Sequence[str] = ()

    @classmethod
    def from_settings(cls, settings: Settings, **inputs: Any) -> "LintOptions":
        """The options of ``settings`` (``[tool.kernelrules]`` merged with the command line), plus the
        run's loaded ``inputs`` (``spec``, ``trace``, ``pinned``, ``import_modules``)."""
        return cls(archs=settings.arch, stage=settings.stage, jobs=settings.jobs, timeout=settings.compile_timeout,
                   cache_dir=settings.cache_dir, selection=settings.rule_selection(), src=tuple(settings.src),
                   **inputs)


def _name_guesses_first(propose: Callable[[str, Mapping[str, Any]], list], name_guesses: dict[str, Any]) -> Any:
    """A guess-search proposer that first proposes undoing the launcher's derived values (their guesses by
    name), on the first failure only, then proposes what ``propose`` does."""
    def run(message: str, change: Mapping[str, Any]) -> list[dict[str, Any]]:
        return ([dict(name_guesses)] if not change else []) + propose(message, change)
    return run


def _append(kernel_report: KernelReport, text: str) -> None:
    """Add one clause to the kernel's report message."""
    kernel_report.message = f"{kernel_report.message}; {text}" if kernel_report.message else text


#: The progress label of the count of kernels linted (the other labels name the kernel compiling).
KERNELS_LABEL = "kernels"


class Linter:
    """Runs discovery, signatures and judging over paths; one compile pool for the whole run."""

    def __init__(self, options: LintOptions, *, engine: Engine | None = None, progress: Progress | None = None):
        self.options = options
        self.engine = engine or default_engine()
        self.progress = progress
        self._current = ""
        #: (architecture, reason) of the last judgement's architectures judged without predictions.
        self._unjudged: list[tuple[str, str]] = []
        self.archs = [load_arch(a) for a in options.archs]
        self.cache = ResultCache(options.cache_dir) if options.cache_dir else ResultCache()
        self.place = FindingPlacer()
        self.replay: LaunchReplay | None = None
        self.look_ahead = LookAhead(self)

    def run(self, paths: Sequence[str | Path]) -> LintReport:
        """Lint files and directories into the final report: the selected findings, suppression
        comments applied. Never raises for a problem in one kernel or file; a pinned table whose
        kernel is not among those linted is a :class:`KernelrulesError`."""
        from ..discover.kernels import discover
        from ..compile.pool import CompilePool

        found = discover(paths)
        self.replay = LaunchReplay(self.cache.directory, self.options, self.archs, self.engine)
        report = LintReport(kernels=[], findings=[], unused_suppressions=[], problems=[])
        # --import: the cross-compile may run the user's code; the targets' platform facts (NVIDIA: torch.version.hip
        # is None) decide module-level values for the walk over the package and the compile workers alike.
        with allowing_user_code(self.options.import_modules), targeting(a.backend for a in self.archs):
            self.pool = CompilePool(max_workers=self.options.jobs, timeout=self.options.timeout, cache=self.cache,
                                    remember_timeouts=True)
            try:
                self._run_kernels(found, report)
            finally:
                self.pool.close()
        if self.options.pinned:
            from .pinned_lint import lint_tables

            report.findings.extend(lint_tables(self.options.pinned, found.kernels, stage=self.options.stage,
                                               timeout=self.options.timeout, jobs=self.options.jobs,
                                               src=list(self.options.src)))
        selection = self.options.selection
        report.findings = [f for f in report.findings if selection.enabled(f.code, f.name, f.path)]
        suppress_report(report)
        return report

    def _run_kernels(self, found: Any, report: LintReport) -> None:
        for problem in found.problems:
            if problem.kind not in ("syntax-error", "unreadable-file"):
                continue  # unparseable autotune and friends are reported per kernel (LNT002)
            report.findings.append(self.place.file_problem(problem))
        kernels = [k for k in found.kernels if not k.is_helper]  # a helper is judged through its callers
        for done, kernel in enumerate(kernels):
            self._current = f"{shown_path(kernel.path)}:{kernel.name}"
            if self.progress:
                self.progress(KERNELS_LABEL, done, len(kernels))
            self.look_ahead.at(kernels, done)  # the next kernels' first compiles, on workers otherwise idle
            self._lint_kernel(kernel, report)
        self.look_ahead.stop()
        if self.progress and kernels:
            self.progress(KERNELS_LABEL, len(kernels), len(kernels))

    def _compile_progress(self, label: str, done: int, total: int) -> None:
        """A pool's progress, named after the kernel being compiled (``ops/rms.py:fwd: compiling hopper``)."""
        if self.progress:
            self.progress(f"{self._current}: {label}", done, total)

    def _lint_kernel(self, kernel: Any, report: LintReport) -> None:
        """Replay the kernel's outcome when none of its inputs changed (:mod:`kernelrules.lint.launch_replay`),
        else resolve and judge it, and store the outcome for the next run."""
        self._unjudged = []
        kernel_report = self._kernel_report(kernel, report)
        start = len(report.findings)
        # (With --import the configs come from running the module: not an input a file digest covers.)
        key = self.look_ahead.replay_key(kernel) if self.replay and not self.options.import_modules else None
        if key and self.replay.replay(key, kernel, kernel_report, report, self.place):
            return
        self._side_effects(kernel, report)
        sites = self._imported_sites(kernel, kernel_report, report)
        self._resolve_and_judge(kernel, sites, kernel_report, report)
        if key and not self._unjudged:
            self.replay.store(key, kernel_report, report.findings[start:])

    def _resolve_and_judge(self, kernel: Any, sites: list | None, kernel_report: KernelReport,
                           report: LintReport) -> None:
        """Specify the kernel's launch (:func:`kernelrules.specify.kernelspec.resolve`), then judge it or say why not."""
        try:
            resolved = (self.look_ahead.resolved(kernel) if sites is None else None) or resolve(
                kernel, spec=self.options.spec, trace=self.options.trace, sites=sites)
        except KernelrulesError as exc:
            kernel_report.status, kernel_report.message = "error", str(exc)
            report.findings.append(self.place.lint_code(kernel, "LNT004", str(exc)))
            return
        for note in resolved.notes:
            _append(kernel_report, note)
        kernel_report.signature_provenance = dict(resolved.provenance)
        if resolved.signature.complete:
            self._judge_resolved(kernel, resolved, kernel_report, report)
        else:
            self._needs_spec(kernel, resolved.signature, kernel_report, report)

    def _kernel_report(self, kernel: Any, report: LintReport) -> KernelReport:
        """A new kernel report in ``report``, with the lines suppression comments may sit on."""
        kernel_report = KernelReport(path=shown_path(kernel.path), name=kernel.name, line=kernel.line,
                                     status="analyzed", signature_provenance={}, records=[], message=None)
        kernel_report.anchor_lines = sorted({kernel.line, kernel.decorator_line} | (
            {kernel.autotune.line} if kernel.autotune is not None else set()))
        kernel_report.config_lines = [(site.config.to_dict(), site.line)
                                      for site in (kernel.autotune.configs if kernel.autotune else [])]
        report.kernels.append(kernel_report)
        return kernel_report

    def _imported_sites(self, kernel: Any, kernel_report: KernelReport, report: LintReport) -> list | None:
        """With ``--import``, the configs of an autotune list that exists only at run time; ``LNT002``
        when such a list stays unjudged. None: the kernel's own (static) configs apply."""
        autotune = getattr(kernel, "autotune", None)
        imported = None
        if autotune is not None and autotune.configs_error and self.options.import_modules:
            from ..discover.import_mode import imported_configs

            try:
                imported, kernel_report.message = imported_configs(kernel, self.archs[0])
            except KernelrulesError as exc:
                kernel_report.message = str(exc)
        if autotune is not None and autotune.configs_error and imported is None:
            report.findings.append(self.place.lint_code(kernel, "LNT002", f"autotune configs not judged: {autotune.configs_error}"))
        return None if imported is None else [(c.config, c.line, c.column + 1) for c in imported]

    def _needs_spec(self, kernel: Any, signature: Any, kernel_report: KernelReport, report: LintReport) -> None:
        """``LNT001``: the kernel's launch signature stays incomplete; say what is missing."""
        message = (f"cannot judge {kernel.name}: no launch signature for {', '.join(signature.missing)}; write a spec "
                   f"with 'kernelrules spec {kernel_report.path}' or record one with 'kernelrules trace'")
        if signature.descriptors:
            from ..specify.descriptors import missing_reason

            message = missing_reason(kernel.name, signature.descriptors, kernel_report.path)
        kernel_report.status, kernel_report.message = "needs-spec", message
        report.findings.append(self.place.lint_code(kernel, "LNT001", message))

    def _judge_resolved(self, kernel: Any, resolved: ResolvedKernel, kernel_report: KernelReport,
                        report: LintReport) -> None:
        """Judge a kernel whose signature is complete, replaying a stored outcome when the inputs are unchanged."""
        signature, sites, guessed, fixed = resolved.signature, list(resolved.sites), dict(resolved.guessed), \
            frozenset(resolved.fixed)
        misses = self._package_dependencies(kernel, kernel_report)
        outcome_key = judgement_key(kernel, {"outcome": signature.spec, "provenance": signature.provenance,
                                             "guessed": guessed}, sites, fixed, self.archs,
                                    self.options.stage, self.engine, src=tuple(self.options.src),
                                    timeout=self.options.timeout, allow_code=self.options.import_modules)
        if outcome_key and self._replay_outcome(outcome_key, kernel, kernel_report, report):
            return
        start = len(report.findings)
        retried: dict[str, Any] = {}
        searched = self.options.stage == "compiled" and bool(guessed or pointer_variants(signature.spec,
                                                                                          signature.provenance))
        if searched:
            sites, guessed, retried = self._settle_guesses(kernel, signature, kernel_report, sites, fixed, guessed,
                                                           resolved.name_guesses)
        if guessed:
            shown_guesses = ", ".join(f"{k}={v}" + (f" ({retried[k]})" if k in retried else "")
                                      for k, v in guessed.items())
            _append(kernel_report, f"judged with guessed constexpr values {shown_guesses}; give the real ones in "
                                   f"a spec ('kernelrules spec {kernel_report.path}') or a trace")
        self._judge(kernel, signature, sites, kernel_report, report, fixed, guessed, misses, retry_types=not searched)
        if outcome_key and kernel_report.status in ("analyzed", "needs-spec") and not self._unjudged:
            JudgementCache(self.cache.directory).put_outcome(
                outcome_key, kernel_report.status, kernel_report.message, kernel_report.signature_provenance,
                kernel_report.records, report.findings[start:])

    def _side_effects(self, kernel: Any, report: LintReport) -> None:
        """``LNT006``: arguments the timing runs of the kernel's ``@triton.autotune`` corrupt
        (:mod:`kernelrules.lint.side_effects`), read from the source at every stage, at the ``@triton.autotune`` line."""
        from ..discover.kernels import ParsedModule, cached_module
        from .findings import LINT_CODES
        from .side_effects import autotune_side_effects

        autotune = getattr(kernel, "autotune", None)
        module = cached_module(kernel.path) if autotune is not None else None
        if not isinstance(module, ParsedModule):
            return
        try:
            effects = autotune_side_effects(module, kernel)
        except (RecursionError, SyntaxError, ValueError):  # absurd nesting: no finding rather than a crash
            return
        spec = LINT_CODES["LNT006"]
        for effect in effects:
            report.findings.append(self.place.at(kernel, autotune.line, autotune.column + 1, spec.code, spec.name,
                                                 spec.severity, effect.message, fix=effect.fix))

    def _replay_outcome(self, key: str, kernel: Any, kernel_report: KernelReport, report: LintReport) -> bool:
        """Give the kernel the outcome a run with the same inputs stored (no probe, no compile): a warm
        lint of a package whose kernels ended analyzed or needs-spec needs neither Triton nor the pool."""
        cached = JudgementCache(self.cache.directory).get_outcome(key)
        if cached is None:
            return False
        kernel_report.status, kernel_report.message = cached["status"], cached["message"]
        kernel_report.signature_provenance = dict(cached.get("signature_provenance") or {})
        kernel_report.records = cached["records"]
        self.place.relocate(cached["findings"], kernel)
        report.findings.extend(cached["findings"])
        return True

    def _package_dependencies(self, kernel: Any, kernel_report: KernelReport) -> Mapping[str, Any]:
        """Names the kernel reads that kernelrules cannot resolve in its package (by name), and notes the
        choices made reading it (an environment branch taken by default) in the kernel's report."""
        from ..discover.kerneldeps import kernel_dependencies

        try:
            deps = kernel_dependencies(kernel.path, kernel.name, tuple(self.options.src))
        except (KernelrulesError, OSError, KeyError, SyntaxError, RecursionError):
            return {}
        if deps.notes:
            _append(kernel_report, "read from the package source: " + "; ".join(deps.notes))
        return deps.misses

    def _settle_guesses(self, kernel: Any, signature: Any, kernel_report: KernelReport, sites: list,
                        fixed: frozenset[str], guessed: Mapping[str, Any],
                        name_guesses: Mapping[str, Any] | None = None) -> tuple[list, dict[str, Any], dict[str, Any]]:
        """Compile the first config on the first architecture; when it fails on a guess, search other
        pointer types and constexpr values (:func:`kernelrules.specify.guess_search.settle`) and keep the first
        that compiles. Retypes ``signature`` in place; returns the sites, the guessed values and, for a
        constexpr that was changed, the guess it replaced and what that did ("16 did not compile").
        ``name_guesses``: the guesses by name that values a launcher derives replaced; when the first
        config does not compile, they are the search's first proposal (the derived values rest on guesses
        too), and when nothing compiles at all, the search runs again from them, as without the derivation."""
        from ..specify.constexpr_repair import proposer
        from ..specify.guess_search import local_names, settle

        compiled: list[bool] = []  # whether each probe compiled

        def search(sites: list, guessed: Mapping[str, Any]) -> Any:
            first = sites[0][0]
            propose = proposer(kernel, [dict(c.constexprs) for c, _, _ in sites], list(guessed))
            if name_guesses:
                propose = _name_guesses_first(propose, dict(name_guesses))

            def probe(spec: Mapping[str, Any], change: Mapping[str, Any]) -> Any:
                result = self._probe(kernel, spec, first.replace(change), fixed)
                compiled.append(bool(result is not None and result.ok))
                return result
            return settle(probe, signature.spec, signature.provenance, guessed,
                          locals_=local_names(kernel_function(kernel)), propose=propose)

        found = search(sites, guessed)
        if name_guesses and compiled and not any(compiled):
            # Nothing compiled with the launcher's derived values (they rest on guesses too): search again from
            # the guesses by name alone, as without them, and keep that when something compiles there.
            compiled.clear()
            alone = [(c.replace(dict(name_guesses)), line, col) for c, line, col in sites]
            again = search(alone, {**guessed, **name_guesses})
            if any(compiled):
                sites, guessed, found = alone, {**guessed, **name_guesses}, again
        if found.pointer_type:
            signature.spec = dict(found.spec)
            for name in found.pointers:
                note = f"naming ({found.pointer_type}: fp16 did not compile)"
                signature.provenance[name] = kernel_report.signature_provenance[name] = note
        if not found.constexprs:
            return sites, dict(guessed), {}
        changed = [(c.replace(found.constexprs), line, col) for c, line, col in sites]
        return changed, {**guessed, **found.constexprs}, {k: f"{v} {found.failure}" for k, v in found.replaced.items()}

    def first_arch_job(self, kernel: Any, spec: Mapping[str, Any], config: KernelConfig, fixed: frozenset[str]) -> Any:
        """The compile job of one config on the first architecture: what a guess probe asks for, and what
        :mod:`kernelrules.lint.look_ahead` compiles ahead (the same job, so the same cache entry)."""
        target = KernelTarget.for_signature(kernel.path, kernel.name, spec, fixed, src=self.options.src)
        return target.job(config, self.archs[0], self.options.timeout)

    def _probe(self, kernel: Any, spec: Mapping[str, Any], config: KernelConfig, fixed: frozenset[str]) -> Any:
        """The compile result of one config on the first architecture (through the shared, cached pool)."""
        job = self.first_arch_job(kernel, spec, config, fixed)
        label = f"checking guessed values {self.archs[0].name}"
        self._compile_progress(label, 0, 1)  # named before it starts: a probe may take the whole time limit
        for _job, result in self.pool.run([job], progress=lambda done, total, *_: self._compile_progress(label, done,
                                                                                                         total)):
            return result
        return None

    def _judge(self, kernel: Any, signature: Any, sites: list, kernel_report: KernelReport, report: LintReport,
               fixed: frozenset[str] = frozenset(), guessed: Mapping[str, Any] | None = None,
               misses: Mapping[str, Any] | None = None, retry_types: bool = True) -> None:
        key = judgement_key(kernel, signature.spec, sites, fixed, self.archs, self.options.stage, self.engine,
                            src=tuple(self.options.src), timeout=self.options.timeout,
                            allow_code=self.options.import_modules)
        cache = JudgementCache(self.cache.directory)
        cached = cache.get(key) if key else None
        if cached is not None:
            kernel_report.records, findings = cached
            self.place.relocate(findings, kernel)
            report.findings.extend(findings)
            return
        start = len(report.findings)
        self._judge_fresh(kernel, signature, sites, kernel_report, report, fixed, guessed, misses or {}, retry_types)
        if key and kernel_report.status == "analyzed" and not self._unjudged:  # failed probes may work next time
            cache.put(key, kernel_report.records, report.findings[start:])

    def _judge_fresh(self, kernel: Any, signature: Any, sites: list, kernel_report: KernelReport,
                     report: LintReport, fixed: frozenset[str], guessed: Mapping[str, Any] | None,
                     misses: Mapping[str, Any], retry_types: bool = True) -> None:
        try:
            spec, results = self._judge_with(kernel, signature.spec, sites, fixed)
            # (Skipped when the guess search already probed these types on the first config.)
            for dtype, variant in pointer_variants(spec, signature.provenance) if retry_types else []:
                if not nothing_compiled(results):
                    break
                # The dtype was only guessed and fp16 does not compile: try bf16, then fp32, before giving up.
                spec2, results2 = self._judge_with(kernel, variant, sites, fixed)
                if not nothing_compiled(results2):
                    retyped = guessed_fp16_pointers(spec, signature.provenance)
                    spec, results = spec2, results2
                    for k in retyped:
                        kernel_report.signature_provenance[k] = f"naming ({dtype}: fp16 did not compile)"
        except KernelrulesError as exc:
            kernel_report.status, kernel_report.message = "error", str(exc)
            report.findings.append(self.place.lint_code(kernel, "LNT004", str(exc)))
            return
        if self._not_the_users(kernel, results, kernel_report, report, guessed, misses, spec):
            return
        for arch_name, reason in self._unjudged:  # never a silent pass: say what was not checked
            report.findings.append(self.place.lint_code(
                kernel, "LNT005", f"{arch_name}: configs judged without resource predictions ({reason}); shared "
                                  f"memory and registers were not checked: lint at the compiled stage"))
        where = {c.key(): (line, col) for c, line, col in sites}
        note = " (with guessed " + ", ".join(f"{k}={v}" for k, v in guessed.items()) + ")" if guessed else ""
        capped = (" (with guessed " + ", ".join(f"{k}={v}" for k, v in guessed.items())
                  + ": a warning until the real values confirm it)") if guessed else ""
        from ..compile.limits import guessed_signature

        signature_note = guessed_signature(spec, kernel_report.signature_provenance)
        for arch, records in results:
            for record in records:
                kernel_report.records.append(record.to_json())
                line, col = where.get(record.verdict.config.key(), (None, None))
                for d in record.verdict.diagnostics:
                    extra = f" (signature guessed: {signature_note})" if d.code == "CMP001" and signature_note else ""
                    # An error on the compile's facts, which rest on constexpr values nobody gave, is a guess of
                    # ours: never an error. (Config-stage rules read the config's own values: they stand.)
                    severity, suffix = (("warning", capped) if guessed and d.severity == "error" and d.stage != "config"
                                        else (d.severity, note))
                    report.findings.append(self.place.at(
                        kernel, line or kernel.line, col or kernel.column + 1, d.code, d.name, severity,
                        d.message + suffix + extra, arch=arch.name, config=record.verdict.config.to_dict(), fix=d.fix,
                        repair=None if record.verdict.repair is None else record.verdict.repair.to_dict()))

    def _not_the_users(self, kernel: Any, results: list, kernel_report: KernelReport, report: LintReport,
                       guessed: Mapping[str, Any] | None, misses: Mapping[str, Any],
                       spec: Mapping[str, Any] | None = None) -> bool:
        """Report the kernel as needs-spec when its compiles failed for a reason of kernelrules' own
        (an unresolved name, a kernel it cannot load, guessed constexprs or guessed argument types with
        which nothing compiles)."""
        from ..compile.limits import failed_facts, guessed_note, guessed_signature, our_limit, type_error
        from ..specify.descriptors import guessed_descriptors

        reason = our_limit(results, misses, kernel.name)
        if reason is None and nothing_compiled(results):
            first = next(iter(failed_facts(results)), {}).get("compile_message", "")
            shown = shown_path(kernel.path)
            types = guessed_signature(spec or {}, kernel_report.signature_provenance)
            if guessed:
                reason = (f"cannot judge {kernel.name}: no config compiles with the guessed constexpr values "
                          f"{guessed_note(guessed)} ({first}); give the real ones in a spec "
                          f"('kernelrules spec {shown}') or a trace")
            elif types and (type_error(first) or guessed_descriptors(spec or {}, kernel_report.signature_provenance)):
                # A type guess that does not type-check is ours, not a CMP001; so is any failure with a guessed
                # tensor descriptor (a wrong block shape fails a bare ``assert`` in Triton's descriptor store).
                reason = (f"cannot judge {kernel.name}: no config compiles with the guessed arguments {types} "
                          f"({first}); give the real types in a spec ('kernelrules spec {shown}') or a trace")
        if reason is None:
            return False
        kernel_report.status, kernel_report.message, kernel_report.records = "needs-spec", reason, []
        report.findings.append(self.place.lint_code(kernel, "LNT001", reason))
        return True

    def _judge_with(self, kernel: Any, spec: Mapping[str, Any], sites: list,
                    fixed: frozenset[str]) -> tuple[Mapping[str, Any], list]:
        """Judge every config on every architecture with one signature: [(arch, records)]."""
        configs = [c for c, _, _ in sites]
        target = KernelTarget.for_signature(kernel.path, kernel.name, spec, fixed, src=self.options.src)
        pruner = ConfigJudge(target, engine=self.engine, timeout=self.options.timeout, progress=self._compile_progress,
                        pool=self.pool)
        self._unjudged = []
        try:
            probe = uses_dot(kernel)
            compiled = self.options.stage == "compiled"
            results = []
            for arch in self.archs:
                records, model = pruner.judge_arch(configs, arch, compiled, {}, probe=probe, defer_probes=True)
                results.append((arch, records))
                if probe and model is None and not compiled and any(not r.verdict.rejected for r in records):
                    reason = pruner.model_errors.get(arch.name, "no probe compiled")
                    self._unjudged.append((arch.name, f"{reason}: the probe compiles failed or timed out"))
            return spec, results
        finally:
            pruner.close()
