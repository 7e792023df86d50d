"""``kernelrules lint``: discover kernels in source files, find their signatures, judge their configs.

The pipeline, for each file and kernel, never running the user's module:

1. discover the ``@triton.jit`` kernels and their ``@triton.autotune`` configs with
   ``ast`` (:mod:`kernelrules.discover`);
2. give each kernel a launch signature, strongest source first: ``--spec``, a sidecar
   ``<module>.kernelrules.yaml``, launch call sites, dataflow and naming
   (:mod:`kernelrules.signatures`); a kernel whose signature stays incomplete is
   reported as *needs-spec* with what is missing;
3. judge every config on every architecture with :class:`kernelrules.judging.ConfigJudge`
   (config stage with the resource model's predictions, then compiled facts unless
   ``stage="config"``);
4. turn verdicts into findings at the config's (or the kernel's) source line, apply
   suppression comments, and hand the report to a reporter.
"""

from __future__ import annotations

import contextlib
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from .arch import load_arch
from .cache import ResultCache
from .config import LAUNCH_OPTIONS, KernelConfig
from .engine import Engine, default_engine
from .errors import KernelrulesError
from .findings import Finding, KernelReport, LintReport, lint_finding
from .guess_search import guessed_fp16_pointers, pointer_variants
from .judgement_cache import JudgementCache, judgement_key
from .judging import ConfigJudge
from .kernel_target import KernelTarget
from .pysource import read_python

Progress = Callable[[str, int, int], None]


@dataclass
class LintOptions:
    """What the command line and ``[tool.kernelrules]`` decide."""

    archs: Sequence[str] = ("sm_89",)
    stage: str = "compiled"
    spec_file: str | None = None
    jobs: int | None = None
    timeout: float = 30.0
    cache_dir: str | None = None
    trace_file: str | None = None
    import_modules: bool = False
    select: Sequence[str] = ()
    ignore: Sequence[str] = ()
    per_file_ignores: Mapping[str, Sequence[str]] = field(default_factory=dict)
    #: Directories holding packages kernels import jit helpers from (``--src``), read, never imported.
    src: Sequence[str] = ()


def _relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except (ValueError, OSError, RuntimeError):  # elsewhere, or a symlink loop (RuntimeError before 3.13)
        return str(path)


def _source_line(sources: dict[str, list[str]], path: Path, line: int | None) -> str | None:
    key = str(path)
    if key not in sources:
        try:
            sources[key] = read_python(path).splitlines()
        except OSError:
            sources[key] = []
    lines = sources[key]
    return lines[line - 1] if line and 0 < line <= len(lines) else None


def _configs_of(kernel: Any) -> list[tuple[KernelConfig, int | None, int | None]]:
    """The kernel's configs with the line and column of the ``triton.Config`` that made each."""
    autotune = getattr(kernel, "autotune", None)
    if autotune is None or not autotune.configs:
        return [(KernelConfig(), None, None)]
    return [(site.config, site.line, site.column + 1) for site in autotune.configs]  # ast columns are 0-based


def _explicit_spec(kernel: Any, options: LintOptions) -> tuple[Mapping[str, Any] | None, str]:
    """The kernel's signature from the strongest explicit source, and that source's name.

    ``--spec`` first, then the module's sidecar ``<module>.kernelrules.yaml``, then a
    launch trace (``--trace``), then Inductor's ``triton_meta`` in the file itself.
    """
    from .signatures import spec_for

    if options.spec_file:
        found = spec_for(kernel, options.spec_file)
        if found is not None:
            return found, "spec"
    found = spec_for(kernel)
    if found is not None:
        return found, "spec"
    if options.trace_file:
        from .trace import launches_for, load_trace, trace_signature

        trace = load_trace(options.trace_file)
        launches = launches_for(trace, kernel.path, kernel.name)
        def_name = getattr(kernel, "def_name", None)
        if not launches and def_name and def_name != kernel.name:  # `kernel = triton.jit(_impl)`: traced as _impl
            launches = launches_for(trace, kernel.path, def_name)
        if launches:
            return trace_signature(launches[0]), "trace"
    from .inductor import inductor_signature

    found = inductor_signature(kernel.path, kernel.name)
    if found:
        return found, "inductor"
    return None, "spec"


def guess_constexpr(name: str, flag: bool = False) -> Any:
    """A labelled guess for a constexpr nobody gave: flags False, dtypes tl.float32, block sizes 128, other ints 16.

    The guesses only let the kernel be judged; findings on a guessed kernel carry the
    signature provenance ``default`` in the JSON report, and a spec replaces them.
    ``flag``: the kernel uses it as a condition (:mod:`kernelrules.constexpr_guess`).
    """
    from .constexpr_guess import guess

    return guess(name, flag=flag)


def _condition_names(kernel: Any) -> set[str]:
    """Names the kernel's body uses as conditions (empty when its source cannot be read)."""
    from .constexpr_guess import condition_names

    func = _kernel_function(kernel)
    return condition_names(func) if func is not None else set()


def _string_names(kernel: Any) -> dict[str, str]:
    """Names the kernel's body passes where ``tl`` wants a string, with the guess for each."""
    from .constexpr_guess import string_names

    func = _kernel_function(kernel)
    return string_names(func) if func is not None else {}


def _kernel_function(kernel: Any) -> Any:
    """The kernel's ``ast.FunctionDef`` (None when its source cannot be read)."""
    from .discover import ParsedModule, cached_module

    module = cached_module(kernel.path)
    return module.jit_functions.get(kernel.name) if isinstance(module, ParsedModule) else None


def _constexpr_values(kernel: Any, spec: Mapping[str, Any] | None, config: KernelConfig,
                      call_literals: Mapping[str, Any], source: str = "spec") -> tuple[dict[str, Any], dict[str, str]]:
    """Constexpr values a config lacks: from the spec, then a launch literal, then a guess.

    Returns the values and each one's provenance (``spec``, ``call-site`` or ``default``).
    """
    from .constexpr_guess import is_flag

    values: dict[str, Any] = {}
    provenance: dict[str, str] = {}
    conditions = _condition_names(kernel)
    strings = _string_names(kernel)
    for param in kernel.params:
        if not param.constexpr or param.name in config.constexprs or param.has_default:
            continue
        if param.name in LAUNCH_OPTIONS and not (spec and param.name in spec):
            continue  # bound to the config's launch option at compile (compilejob.option_parameters)
        if spec and param.name in spec:
            values[param.name], provenance[param.name] = spec[param.name], source
        elif param.name in call_literals:
            values[param.name], provenance[param.name] = call_literals[param.name], "call-site"
        elif param.name in strings:
            values[param.name], provenance[param.name] = strings[param.name], "default"
        else:
            flag = is_flag(param.name, param.annotation, conditions)
            values[param.name], provenance[param.name] = guess_constexpr(param.name, flag), "default"
    return values, provenance


def apply_heuristics(kernel: Any, config: KernelConfig, signature: Mapping[str, Any]) -> tuple[KernelConfig, list[str]]:
    """Set the constexprs ``@triton.heuristics`` computes, where its lambda evaluates statically.

    Each lambda gets ``args`` holding the signature's integer values and the config's
    constexprs, as at launch, and runs in the same safe interpreter as autotune lists.
    Returns the config with the values set and the names that could not be evaluated.
    """
    import ast

    from .autotune_eval import ConfigEvaluator, Unsupported
    from .discover import ParsedModule, cached_module

    heuristics = getattr(kernel, "heuristics", None) or {}
    if not heuristics:
        return config, []
    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule):
        return config, list(heuristics)
    evaluator = ConfigEvaluator(module.scope())
    args = {k: v for k, v in signature.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    args.update(config.constexprs)
    values, failed = {}, []
    for name, source in heuristics.items():
        try:
            node = ast.parse(source.strip(), mode="eval").body
            if not isinstance(node, ast.Lambda) or len(node.args.args) != 1:
                raise Unsupported("not a one-argument lambda")
            values[name] = evaluator.eval(node.body, {node.args.args[0].arg: dict(args)})
        except (Unsupported, SyntaxError, KeyError, TypeError, ValueError, ZeroDivisionError, RecursionError):
            failed.append(name)
    return config.replace(values), failed


def apply_early_prune(kernel: Any, sites: list, signature: Mapping[str, Any]) -> tuple[list, str | None]:
    """Keep only the configs the kernel's own ``early_config_prune`` keeps, when it is pure.

    ``prune_configs_by={"early_config_prune": fn, ...}`` names a module-level function
    ``fn(configs, named_args, **kwargs)``; it runs in the safe interpreter with the
    configs and the signature's values. Returns the kept sites and a note for the report
    (None when there is no pruner, the reason when it could not be applied).
    """
    import ast

    from .autotune_eval import ConfigEvaluator, ConfigSite, Unsupported
    from .discover import ParsedModule, cached_module

    text = getattr(getattr(kernel, "autotune", None), "prune_configs_by", None)
    if not text:
        return sites, None
    try:
        node = ast.parse(text.strip(), mode="eval").body
        prune = next(v for k, v in zip(node.keys, node.values)
                     if isinstance(k, ast.Constant) and k.value == "early_config_prune")
    except (SyntaxError, AttributeError, StopIteration):
        return sites, f"prune_configs_by is reported, not applied: {text.strip()[:80]}"
    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule) or not isinstance(prune, ast.Name) \
            or prune.id not in module.plain_functions:
        return sites, "early_config_prune is not a module-level function of this file; not applied"
    evaluator = ConfigEvaluator(module.scope())
    named_args = {k: v for k, v in signature.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    configs = [ConfigSite(config, line, col) for config, line, col in sites]
    try:
        kept = evaluator._call_values(module.plain_functions[prune.id], [configs, named_args], {}, prune)
        keys = {site.config.key() for site in kept}
    except (Unsupported, AttributeError, TypeError, KeyError, ValueError):
        return sites, f"{prune.id} is not pure enough to evaluate statically; all configs judged"
    return [s for s in sites if s[0].key() in keys], f"{prune.id} kept {len(keys)} of {len(sites)} configs"


#: Block-size candidates per Inductor size-hint prefix (x, y: pointwise tiles; r0_/r: reduction).
_INDUCTOR_BLOCKS = {"pointwise": (128, 256, 512, 1024), "reduction_x": (1, 8, 64), "reduction_r": (64, 512, 2048)}


def inductor_configs(kernel: Any) -> tuple[list[tuple[KernelConfig, int, int]], str] | None:
    """Candidate configs of an Inductor kernel from its ``size_hints``, as its heuristics would try.

    Inductor picks a kernel's block sizes at run time from ``size_hints``; lint judges a
    small set of the candidates the heuristics choose between (capped at the next power
    of two of each hint): pointwise XBLOCK/YBLOCK of 128 to 1024, reduction XBLOCK of
    1 to 64 with R0_BLOCK of 64 to 2048. An approximation, said so in the report.
    """
    from .inductor import inductor_kernel_info

    try:
        info = inductor_kernel_info(kernel.path, kernel.name)
    except KernelrulesError:
        return None
    if info is None or not info.size_hints:
        return None
    params = {p.name for p in kernel.params if p.constexpr}
    axes: dict[str, tuple[int, ...]] = {}
    for prefix, hint in info.size_hints.items():
        cap = 1 << max(int(hint) - 1, 0).bit_length()
        if prefix.startswith("r"):
            name = next((n for n in ("R0_BLOCK", "RBLOCK") if n in params), None)
            choices = _INDUCTOR_BLOCKS["reduction_r"]
        else:
            name = f"{prefix.upper()}BLOCK" if f"{prefix.upper()}BLOCK" in params else None
            choices = _INDUCTOR_BLOCKS["reduction_x" if "reduction" in info.kernel_type else "pointwise"]
        if name:
            axes[name] = tuple(sorted({min(c, cap) for c in choices}))
    if not axes:
        return None
    import itertools

    line = getattr(kernel, "decorator_line", kernel.line)
    sites = []
    for values in itertools.product(*axes.values()):
        block = dict(zip(axes, values))
        warps = 8 if math.prod(values) >= 2048 else 4
        sites.append((KernelConfig.from_dict({**block, "num_warps": warps}), line, 1))
    return sites, f"configs from Inductor size hints {dict(info.size_hints)} ({info.kernel_type})"


def _call_literals(kernel: Any) -> dict[str, Any]:
    """Literal arguments of the kernel's launches in its own file (the first launch that gives one wins)."""
    from .signatures import find_call_sites

    literals: dict[str, Any] = {}
    for site in find_call_sites(kernel):
        for name, value in site.literals.items():
            literals.setdefault(name, value)
    return literals


def _uses_dot(kernel: Any) -> bool:
    """Whether the kernel or one of its jit helpers calls ``tl.dot``: only then is a resource
    model worth its probe compiles. Unknown (unreadable source) counts as yes."""
    import ast

    from .discover import ParsedModule, cached_module

    module = cached_module(kernel.path)
    if not isinstance(module, ParsedModule):
        return True
    names = {kernel.name, *getattr(kernel, "helpers", ())}
    jit = getattr(module, "jit_functions", {})
    functions = [jit[n] for n in names if n in jit and getattr(jit[n], "name", None) == n]  # no walk of the module
    if len(functions) < len(names):
        functions = [n for n in ast.walk(module.tree) if isinstance(n, ast.FunctionDef) and n.name in names]
    if len(functions) < len(names):
        return True  # a helper from another module: assume it may hold the dot
    return any(isinstance(node, ast.Attribute) and node.attr in ("dot", "dot_scaled")
               for function in functions for node in ast.walk(function))


def _append(kernel_report: KernelReport, text: str) -> None:
    """Add one clause to the kernel's report message."""
    kernel_report.message = f"{kernel_report.message}; {text}" if kernel_report.message else text


def _nothing_compiled(results: list) -> bool:
    """True when every judged config's compile failed (CMP001), i.e. the signature is wrong."""
    records = [r for _, records in results for r in records]
    compiled = [r for r in records if r.facts.get("origin") == "compiled"]
    return bool(compiled) and all(r.facts.get("compile_status") == "error" for r in compiled)


@contextlib.contextmanager
def _user_code(allowed: bool) -> Iterator[None]:
    """Let this process and the compile workers it starts run the user's code (:mod:`kernelrules.consent`)
    while linting with --import; the environment is restored after."""
    from .consent import ALLOW_CODE_ENV

    before = os.environ.get(ALLOW_CODE_ENV)
    if allowed:
        os.environ[ALLOW_CODE_ENV] = "1"
    try:
        yield
    finally:
        if allowed:
            if before is None:
                os.environ.pop(ALLOW_CODE_ENV, None)
            else:
                os.environ[ALLOW_CODE_ENV] = before


#: The progress label of the count of kernels linted (the other labels name the kernel compiling).
KERNELS_LABEL = "kernels"


class Linter:
    """Runs discovery, signatures and judging over paths; one compile pool for the whole run."""

    def __init__(self, options: LintOptions, *, engine: Engine | None = None, progress: Progress | None = None):
        self.options = options
        self.engine = engine or default_engine()
        if options.select or options.ignore:
            from .engine import Engine as _Engine

            self.engine = _Engine(self.engine.rules.select(options.select, options.ignore))
        self.progress = progress
        self._current = ""
        #: (architecture, reason) of the last judgement's architectures judged without predictions.
        self._unjudged: list[tuple[str, str]] = []
        self.archs = [load_arch(a) for a in options.archs]
        self.cache = ResultCache(options.cache_dir) if options.cache_dir else ResultCache()
        self.sources: dict[str, list[str]] = {}

    def run(self, paths: Sequence[str | Path]) -> LintReport:
        """Lint files and directories; never raises for a problem in one kernel or file."""
        from .discover import discover
        from .pool import CompilePool

        found = discover(paths)
        report = LintReport(kernels=[], findings=[], unused_suppressions=[], problems=[])
        with _user_code(self.options.import_modules):  # --import: the cross-compile may run the user's code
            self.pool = CompilePool(max_workers=self.options.jobs, timeout=self.options.timeout, cache=self.cache)
            try:
                self._run_kernels(found, report)
            finally:
                self.pool.close()
        return report

    def _run_kernels(self, found: Any, report: LintReport) -> None:
        for problem in found.problems:
            if problem.kind not in ("syntax-error", "unreadable-file"):
                continue  # unparseable autotune and friends are reported per kernel (LNT002)
            report.findings.append(lint_finding(
                "LNT004", _relative(Path(problem.path)), problem.line or 1, problem.message,
                column=problem.column or 1, source_line=_source_line(self.sources, Path(problem.path), problem.line)))
        kernels = [k for k in found.kernels if not k.is_helper]  # a helper is judged through its callers
        for done, kernel in enumerate(kernels):
            self._current = f"{_relative(Path(kernel.path))}:{kernel.name}"
            if self.progress:
                self.progress(KERNELS_LABEL, done, len(kernels))
            self._lint_kernel(kernel, report)
        if self.progress and kernels:
            self.progress(KERNELS_LABEL, len(kernels), len(kernels))

    def _compile_progress(self, label: str, done: int, total: int) -> None:
        """A pool's progress, named after the kernel being compiled (``ops/rms.py:fwd: compiling hopper``)."""
        if self.progress:
            self.progress(f"{self._current}: {label}", done, total)

    def _lint_kernel(self, kernel: Any, report: LintReport) -> None:
        from .signatures import infer_signature

        self._unjudged = []
        path = Path(kernel.path)
        shown = _relative(path)
        kernel_report = KernelReport(path=shown, name=kernel.name, line=kernel.line, status="analyzed",
                                     signature_provenance={}, records=[], message=None)
        kernel_report.anchor_lines = sorted({kernel.line, kernel.decorator_line} | (
            {kernel.autotune.line} if kernel.autotune is not None else set()))
        kernel_report.config_lines = [(site.config.to_dict(), site.line)
                                      for site in (kernel.autotune.configs if kernel.autotune else [])]
        report.kernels.append(kernel_report)
        self._side_effects(kernel, report)
        autotune = getattr(kernel, "autotune", None)
        imported_sites = None
        if autotune is not None and autotune.configs_error and self.options.import_modules:
            from .import_mode import imported_configs

            try:
                imported_sites, kernel_report.message = imported_configs(kernel, self.archs[0])
            except KernelrulesError as exc:
                kernel_report.message = str(exc)
        if autotune is not None and autotune.configs_error and imported_sites is None:
            report.findings.append(self._lint_code(kernel, "LNT002", f"autotune configs not judged: {autotune.configs_error}"))
        try:
            spec, source = _explicit_spec(kernel, self.options)
            constexpr_names = {p.name for p in kernel.params if p.constexpr}
            runtime_spec = {k: v for k, v in (spec or {}).items() if k not in constexpr_names}
            signature = infer_signature(kernel, spec=runtime_spec or None, use_sidecar=False)
            if source != "spec":
                signature.provenance = {k: source if v == "spec" else v for k, v in signature.provenance.items()}
        except KernelrulesError as exc:
            kernel_report.status, kernel_report.message = "error", str(exc)
            report.findings.append(self._lint_code(kernel, "LNT004", str(exc)))
            return
        kernel_report.signature_provenance = dict(signature.provenance)
        sites = _configs_of(kernel) if imported_sites is None else [(c.config, c.line, c.column + 1) for c in imported_sites]
        if source == "inductor" and autotune is None:
            found = inductor_configs(kernel)
            if found is not None:
                sites, note = found
                kernel_report.message = ((kernel_report.message + "; ") if kernel_report.message else "") + note
        fixed, constexpr_provenance = _constexpr_values(kernel, spec, sites[0][0], _call_literals(kernel), source)
        kernel_report.signature_provenance.update(constexpr_provenance)
        if not signature.complete:
            missing = ", ".join(signature.missing)
            message = (f"cannot judge {kernel.name}: no launch signature for {missing}; write a spec with "
                       f"'kernelrules spec {shown}' or record one with 'kernelrules trace'")
            if signature.descriptors:
                message = (f"cannot judge {kernel.name}: {', '.join(signature.descriptors)} "
                           f"{'is a tensor descriptor' if len(signature.descriptors) == 1 else 'are tensor descriptors'}"
                           f" (`{signature.descriptors[0]}.load(...)`), which kernelrules cannot stand in for yet "
                           f"(a limit of kernelrules, not an error in the kernel)")
            kernel_report.status, kernel_report.message = "needs-spec", message
            report.findings.append(self._lint_code(kernel, "LNT001", message))
            return
        heuristic_names = set(getattr(kernel, "heuristics", None) or {})
        if heuristic_names:  # heuristics set these at launch: no guess, no spec needed
            for name in heuristic_names:
                if constexpr_provenance.get(name) == "default":
                    constexpr_provenance[name] = "heuristics"
        completed = []
        for c, line, col in sites:
            config, failed = apply_heuristics(kernel, c.replace(fixed), signature.spec)
            for name in failed:
                constexpr_provenance[name] = "default"
            completed.append((config, line, col))
        sites, prune_note = apply_early_prune(kernel, completed, signature.spec)
        if prune_note:
            kernel_report.message = ((kernel_report.message + "; ") if kernel_report.message else "") + prune_note
        kernel_report.signature_provenance.update(constexpr_provenance)
        guessed = {k: sites[0][0].constexprs.get(k, fixed.get(k)) for k, source in constexpr_provenance.items()
                   if source == "default"}
        misses = self._package_dependencies(kernel, kernel_report)
        outcome_key = judgement_key(kernel, {"outcome": signature.spec, "provenance": signature.provenance,
                                             "guessed": guessed}, sites, frozenset(fixed), self.archs,
                                    self.options.stage, self.engine, src=tuple(self.options.src),
                                    timeout=self.options.timeout, allow_code=self.options.import_modules)
        if outcome_key and self._replay_outcome(outcome_key, kernel, kernel_report, report):
            return
        start = len(report.findings)
        retried: dict[str, Any] = {}
        searched = self.options.stage == "compiled" and bool(guessed or pointer_variants(signature.spec,
                                                                                          signature.provenance))
        if searched:
            sites, guessed, retried = self._settle_guesses(kernel, signature, kernel_report, sites, frozenset(fixed),
                                                           guessed)
        if guessed:
            shown_guesses = ", ".join(f"{k}={v}" + (f" ({retried[k]} did not compile)" if k in retried else "")
                                      for k, v in guessed.items())
            _append(kernel_report, f"judged with guessed constexpr values {shown_guesses}; give the real ones in "
                                   f"a spec ('kernelrules spec {shown}') or a trace")
        self._judge(kernel, signature, sites, kernel_report, report, frozenset(fixed), guessed, misses,
                    retry_types=not searched)
        if outcome_key and kernel_report.status in ("analyzed", "needs-spec") and not self._unjudged:
            JudgementCache(self.cache.directory).put_outcome(
                outcome_key, kernel_report.status, kernel_report.message, kernel_report.signature_provenance,
                kernel_report.records, report.findings[start:])

    def _side_effects(self, kernel: Any, report: LintReport) -> None:
        """``LNT006``: arguments the timing runs of the kernel's ``@triton.autotune`` corrupt
        (:mod:`kernelrules.side_effects`), read from the source at every stage, at the ``@triton.autotune`` line."""
        from .discover import ParsedModule, cached_module
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
            report.findings.append(self._finding(kernel, autotune.line, autotune.column + 1, spec.code, spec.name,
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
        for finding in cached["findings"]:  # paths and source lines as seen from this run
            finding.path = _relative(Path(kernel.path))
            finding.source_line = _source_line(self.sources, Path(kernel.path), finding.line)
        report.findings.extend(cached["findings"])
        return True

    def _package_dependencies(self, kernel: Any, kernel_report: KernelReport) -> Mapping[str, Any]:
        """Names the kernel reads that kernelrules cannot resolve in its package (by name), and notes the
        choices made reading it (an environment branch taken by default) in the kernel's report."""
        from .kerneldeps import kernel_dependencies

        try:
            deps = kernel_dependencies(kernel.path, kernel.name, tuple(self.options.src))
        except (KernelrulesError, OSError, KeyError, SyntaxError, RecursionError):
            return {}
        if deps.notes:
            _append(kernel_report, "read from the package source: " + "; ".join(deps.notes))
        return deps.misses

    def _settle_guesses(self, kernel: Any, signature: Any, kernel_report: KernelReport, sites: list,
                        fixed: frozenset[str], guessed: Mapping[str, Any]) -> tuple[list, dict[str, Any], dict[str, Any]]:
        """Compile the first config on the first architecture; when it fails on a guess, search other
        pointer types and constexpr values (:func:`kernelrules.guess_search.settle`) and keep the first
        that compiles. Retypes ``signature`` in place; returns the sites, the guessed values and, for a
        constexpr that was changed, the guess it replaced."""
        from .guess_search import local_names, settle

        first = sites[0][0]
        found = settle(lambda spec, change: self._probe(kernel, spec, first.replace(change), fixed),
                       signature.spec, signature.provenance, guessed, locals_=local_names(_kernel_function(kernel)))
        if found.pointer_type:
            signature.spec = dict(found.spec)
            for name in found.pointers:
                note = f"naming ({found.pointer_type}: fp16 did not compile)"
                signature.provenance[name] = kernel_report.signature_provenance[name] = note
        if not found.constexprs:
            return sites, dict(guessed), {}
        changed = [(c.replace(found.constexprs), line, col) for c, line, col in sites]
        return changed, {**guessed, **found.constexprs}, found.replaced

    def _probe(self, kernel: Any, spec: Mapping[str, Any], config: KernelConfig, fixed: frozenset[str]) -> Any:
        """The compile result of one config on the first architecture (through the shared, cached pool)."""
        target = KernelTarget.for_signature(kernel.path, kernel.name, spec, fixed, src=self.options.src)
        job = target.job(config, self.archs[0], self.options.timeout)
        for _job, result in self.pool.run([job]):
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
            for finding in findings:  # paths and source lines as seen from this run
                finding.path = _relative(Path(kernel.path))
                finding.source_line = _source_line(self.sources, Path(kernel.path), finding.line)
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
                if not _nothing_compiled(results):
                    break
                # The dtype was only guessed and fp16 does not compile: try bf16, then fp32, before giving up.
                spec2, results2 = self._judge_with(kernel, variant, sites, fixed)
                if not _nothing_compiled(results2):
                    retyped = guessed_fp16_pointers(spec, signature.provenance)
                    spec, results = spec2, results2
                    for k in retyped:
                        kernel_report.signature_provenance[k] = f"naming ({dtype}: fp16 did not compile)"
        except KernelrulesError as exc:
            kernel_report.status, kernel_report.message = "error", str(exc)
            report.findings.append(self._lint_code(kernel, "LNT004", str(exc)))
            return
        if self._not_the_users(kernel, results, kernel_report, report, guessed, misses, spec):
            return
        for arch_name, reason in self._unjudged:  # never a silent pass: say what was not checked
            report.findings.append(self._lint_code(
                kernel, "LNT005", f"{arch_name}: configs judged without resource predictions ({reason}); shared "
                                  f"memory and registers were not checked: lint at the compiled stage"))
        where = {c.key(): (line, col) for c, line, col in sites}
        note = " (with guessed " + ", ".join(f"{k}={v}" for k, v in guessed.items()) + ")" if guessed else ""
        capped = (" (with guessed " + ", ".join(f"{k}={v}" for k, v in guessed.items())
                  + ": a warning until the real values confirm it)") if guessed else ""
        from .lint_limits import guessed_signature

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
                    report.findings.append(self._finding(
                        kernel, line or kernel.line, col or kernel.column + 1, d.code, d.name, severity,
                        d.message + suffix + extra, arch=arch.name, config=record.verdict.config.to_dict(), fix=d.fix,
                        repair=None if record.verdict.repair is None else record.verdict.repair.to_dict()))

    def _not_the_users(self, kernel: Any, results: list, kernel_report: KernelReport, report: LintReport,
                       guessed: Mapping[str, Any] | None, misses: Mapping[str, Any],
                       spec: Mapping[str, Any] | None = None) -> bool:
        """Report the kernel as needs-spec when its compiles failed for a reason of kernelrules' own
        (an unresolved name, a kernel it cannot load, guessed constexprs or guessed argument types with
        which nothing compiles)."""
        from .lint_limits import failed_facts, guessed_note, guessed_signature, our_limit, type_error

        reason = our_limit(results, misses, kernel.name)
        if reason is None and _nothing_compiled(results):
            first = next(iter(failed_facts(results)), {}).get("compile_message", "")
            shown = _relative(Path(kernel.path))
            types = guessed_signature(spec or {}, kernel_report.signature_provenance)
            if guessed:
                reason = (f"cannot judge {kernel.name}: no config compiles with the guessed constexpr values "
                          f"{guessed_note(guessed)} ({first}); give the real ones in a spec "
                          f"('kernelrules spec {shown}') or a trace")
            elif types and type_error(first):  # a type guess that does not type-check is ours, not a CMP001
                reason = (f"cannot judge {kernel.name}: no config compiles with the guessed arguments {types} "
                          f"({first}); give the real types in a spec ('kernelrules spec {shown}') or a trace")
        if reason is None:
            return False
        kernel_report.status, kernel_report.message, kernel_report.records = "needs-spec", reason, []
        report.findings.append(self._lint_code(kernel, "LNT001", reason))
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
            probe = _uses_dot(kernel)
            compiled = self.options.stage == "compiled"
            results = []
            for arch in self.archs:
                records, model = pruner.judge_arch(configs, arch, compiled, {}, probe=probe)
                results.append((arch, records))
                if probe and model is None and not compiled and any(not r.verdict.rejected for r in records):
                    reason = pruner.model_errors.get(arch.name, "no probe compiled")
                    self._unjudged.append((arch.name, f"{reason}: the probe compiles failed or timed out"))
            return spec, results
        finally:
            pruner.close()

    def _lint_code(self, kernel: Any, code: str, message: str) -> Finding:
        """A finding of one of the lint command's own codes, at the kernel's ``def``."""
        path = Path(kernel.path)
        return lint_finding(code, _relative(path), kernel.line, message, column=kernel.column + 1, kernel=kernel.name,
                            source_line=_source_line(self.sources, path, kernel.line))

    def _finding(self, kernel: Any, line: int, column: int, code: str, name: str, severity: str, message: str,
                 **extra: Any) -> Finding:
        path = Path(kernel.path)
        return Finding(path=_relative(path), line=line, column=column, code=code, name=name, severity=severity,
                       message=message, kernel=kernel.name, arch=extra.get("arch"), config=extra.get("config"),
                       fix=extra.get("fix"), repair=extra.get("repair"), suppressed=False,
                       source_line=_source_line(self.sources, path, line))
