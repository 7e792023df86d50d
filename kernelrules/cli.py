"""The ``kernelrules`` command line (typer). Arguments in, engine calls, exit code out.

Exit codes follow ruff: 0 clean, 1 findings (an error-severity rule fired),
2 usage, configuration or internal error. User errors print one line (usage
errors too: :mod:`kernelrules.cli_usage`); a traceback is shown only with
``KERNELRULES_DEBUG=1``.

Why over 400 lines: one typer function per command with its options and help text; no logic lives
here (lint, tune and pin own their work).
"""

from __future__ import annotations

import atexit
import gc
import json
import os
import sys
import traceback
from enum import Enum
from pathlib import Path
from typing import List, Optional

import typer

from . import __version__
from .atomicio import write_output
from .cli_pin import register as _register_pin
from .cli_tune import register as _register_tuning
from .cli_usage import OneLineUsageGroup, name_every_command
from .errors import EXIT_USAGE, KernelrulesError, mask_credentials, shorten

app = typer.Typer(
    name="kernelrules",
    cls=OneLineUsageGroup,  # usage errors (bad option, argument, value, command) are one line, exit 2
    help="Hardware-aware rules engine and static analyzer for Triton GPU kernels.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
arch_app = typer.Typer(help="List and show GPU architecture profiles.", no_args_is_help=True)
rules_app = typer.Typer(help="List and explain rules.", no_args_is_help=True)
app.add_typer(arch_app, name="arch")
app.add_typer(rules_app, name="rules")


class OutputFormat(str, Enum):
    text = "text"
    json = "json"


ArchFileOption = typer.Option(
    None, "--arch-file", help="Extra architecture profile YAML file (repeatable).", show_default=False
)
FormatOption = typer.Option(OutputFormat.text, "--format", help="Output format.")


def _echo_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, sort_keys=False))


def _version_callback(value: bool) -> None:
    if value:
        typer.echo(f"kernelrules {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version_callback, is_eager=True, help="Show the version and exit."
    ),
) -> None:
    """Hardware-aware rules engine and static analyzer for Triton GPU kernels."""


# -- arch ------------------------------------------------------------------------


@arch_app.command("list")
def arch_list(
    arch_file: Optional[List[Path]] = ArchFileOption,
    output: OutputFormat = FormatOption,
) -> None:
    """List architecture profiles (one per compute capability) and their SKUs."""
    from .arch import list_archs

    archs = list_archs(extra_files=tuple(arch_file or ()))
    if output is OutputFormat.json:
        _echo_json([_arch_summary(a) for a in archs])
        return
    name_width = max(len(a.name) for a in archs)
    cc_width = max(len(a.compute_capability) for a in archs)
    family_width = max(len(a.family) for a in archs)
    for arch in archs:
        summary = _arch_summary(arch)
        aliases = ", ".join(summary["aliases"])
        skus = ", ".join(summary["skus"]) or "-"
        typer.echo(f"{arch.name:{name_width}s}  cc {arch.compute_capability:{cc_width}s}  {arch.family:{family_width}s}  "
                   f"aliases: {aliases}; SKUs: {skus}")


def _arch_summary(arch) -> dict:
    flat = arch.flat()
    return {
        "name": arch.name,
        "compute_capability": arch.compute_capability,
        "family": arch.family,
        "vendor": arch.vendor,
        "aliases": list(flat.get("aliases", [])),
        "skus": list(flat.get("skus", [])),
    }


@arch_app.command("show")
def arch_show(
    name: str = typer.Argument(..., help="Architecture name or alias: ada, sm_90, rtx4090, h200, ..."),
    arch_file: Optional[List[Path]] = ArchFileOption,
    output: OutputFormat = FormatOption,
) -> None:
    """Show one architecture profile: limits, features and (for a SKU) its figures."""
    from .arch import load_arch

    arch = load_arch(name, extra_files=tuple(arch_file or ()))
    flat = arch.flat()
    if output is OutputFormat.json:
        _echo_json(flat)
        return
    title = arch.name + (f" ({arch.sku})" if arch.sku else "")
    typer.echo(f"{title}: compute capability {arch.compute_capability}, {arch.family}, {arch.vendor}")
    sources = getattr(arch, "sources", {}) or {}
    for key, value in flat.items():
        source = sources.get(key)
        shown = ", ".join(map(str, value)) if isinstance(value, list) else value
        typer.echo(f"  {key:38s} {shown}" + (f"    [{source}]" if source else ""))


# -- rules -----------------------------------------------------------------------


@rules_app.command("list")
def rules_list(output: OutputFormat = FormatOption) -> None:
    """List every rule: code, severity, stage, name and summary."""
    from .judge.ruleset import builtin_rules

    from .lint.findings import LINT_CODES

    # The YAML rules, then the lint command's own codes (stage "lint": read from the source, LNT*).
    rows = [(r.code, r.name, r.severity, r.stage, r.summary) for r in builtin_rules()]
    rows += [(c.code, c.name, c.severity, "lint", c.summary) for c in LINT_CODES.values()]
    if output is OutputFormat.json:
        _echo_json([dict(zip(("code", "name", "severity", "stage", "summary"), row)) for row in rows])
        return
    for code, name, severity, stage, summary in rows:
        typer.echo(f"{code}  {severity:7s} {stage:8s} {name:32s} {summary}")


@rules_app.command("show")
def rules_show(code: str = typer.Argument(..., help="Rule code or name, e.g. CFG004 or amd-only-option-on-nvidia.")) -> None:
    """Explain one rule: what it checks, why, an example and the fix."""
    from .lint.docgen import rule_text
    from .judge.ruleset import builtin_rules

    from .lint.findings import LINT_CODES

    rules = builtin_rules()
    rule = rules.get(code)
    lint_code = next((c for c in LINT_CODES.values() if code in (c.code, c.name)), None)
    if rule is None and lint_code is not None:
        typer.echo(f"{lint_code.code} {lint_code.name} ({lint_code.severity}, reported by the lint command itself)\n\n"
                   f"{lint_code.summary}\n\nDetails and examples: docs/lint-output.md")
        return
    if rule is None:
        import difflib

        keys = [r.code for r in rules] + [r.name for r in rules] + [c.code for c in LINT_CODES.values()]
        close = difflib.get_close_matches(code, keys, n=3)
        hint = f"did you mean: {', '.join(close)}? " if close else ""
        raise KernelrulesError(f"unknown rule {code!r}", hint=f"{hint}see 'kernelrules rules list'")
    typer.echo(rule_text(rule))


# -- check-config ------------------------------------------------------------------


@app.command("check-config")
def check_config(
    assignments: List[str] = typer.Argument(..., help="Config values as KEY=VALUE, e.g. BLOCK_M=128 num_warps=8."),
    arch: str = typer.Option(..., "--arch", help="Target architecture (name, alias or SKU)."),
    arch_file: Optional[List[Path]] = ArchFileOption,
    dtype: Optional[List[str]] = typer.Option(
        None, "--dtype", help="Element dtype the kernel uses (fp16, bf16, fp8e4nv, ...); repeatable."
    ),
    kernel_file: Optional[str] = typer.Option(
        None, "--kernel", help="Judge the config on this kernel, FILE.py or FILE.py:NAME: predictions and a cross-compile."
    ),
    space_file: Optional[Path] = typer.Option(
        None, "--space", help="Judge the config on the kernel of this space file (its signature and fixed values)."
    ),
    no_compile: bool = typer.Option(False, "--no-compile", help="With --kernel/--space: predictions only, no compile."),
    output: OutputFormat = FormatOption,
) -> None:
    """Judge one config on one architecture with every rule that can judge it."""
    from .arch import load_arch
    from .config import KernelConfig
    from .judge.engine import default_engine

    target = load_arch(arch, extra_files=tuple(arch_file or ()))
    config = KernelConfig.parse_assignments(assignments)
    _check_dtypes(dtype or ())
    kernel = {"dtypes": list(dtype)} if dtype else None
    facts = None
    if kernel_file or space_file:
        from .lint.check_kernel import check_on_kernel

        checked = check_on_kernel(config, target, kernel=kernel_file, space=str(space_file) if space_file else None,
                                  compile=not no_compile)
        verdict, facts = checked.record.verdict, checked.record.facts
    else:
        verdict = default_engine().check(config, target, kernel=kernel)
    if output is OutputFormat.json:
        data = verdict.to_json()
        if facts is not None:
            from .judge.facts_catalogue import CHECK_CONFIG_FACTS

            data["facts"] = {k: facts[k] for k in CHECK_CONFIG_FACTS if k in facts}
        _echo_json(data)
    else:
        _print_verdict(verdict, target)
        if facts:
            _print_facts(facts)
        if kernel_file and checked.guessed:
            guessed = ", ".join(f"{k}={v}" for k, v in checked.guessed.items())
            typer.echo(f"  judged with guessed constexpr values {guessed}; give them on the command line")
    raise typer.Exit(1 if verdict.rejected else 0)


def _check_dtypes(dtypes) -> None:
    """Every ``--dtype`` is a dtype the rules know (``fp99`` was judged as if it were none)."""
    from .predict.perf_general import DTYPE_BYTES
    from .specify.signatures import DTYPE_PATTERN as _DTYPES

    known = set(_DTYPES.split("|")) | set(DTYPE_BYTES)
    for name in dtypes:
        if name not in known:
            raise KernelrulesError(f"unknown dtype {name!r} for --dtype", hint=f"known: {', '.join(sorted(known))}")


def _print_facts(facts) -> None:
    """One line of the facts that explain a verdict on a real kernel."""
    from .judge.facts_catalogue import SUMMARY_FACTS

    shown = ", ".join(f"{k}={facts[k]}" for k in SUMMARY_FACTS if facts.get(k) not in (None, ""))
    typer.echo(f"  facts: {shown}")


def _print_verdict(verdict, target) -> None:
    label = target.name + (f" ({target.sku})" if target.sku else "")
    typer.echo(f"{label}: {verdict.verdict} [{verdict.config}]")
    for d in verdict.diagnostics:
        typer.echo(f"  {d.code} {d.severity}: {d.message} [{d.name}]")
        if d.fix:
            typer.echo(f"    fix: {d.fix}")
    if verdict.deferred:
        typer.echo(f"  deferred until compiled: {', '.join(verdict.deferred)}")
    if verdict.repair is not None:
        typer.echo(f"  nearest passing config: {verdict.repair}")
    elif verdict.rejected:
        typer.echo("  no passing config found by the rules' repairs")


# -- prune ---------------------------------------------------------------------------


@app.command("prune")
def prune_command(
    space: Path = typer.Argument(..., help="Space file (YAML): kernel, signature, fixed values and the space."),
    arch: str = typer.Option(..., "--arch", help="Target architecture(s), comma-separated: ada,hopper."),
    compile: bool = typer.Option(False, "--compile", help="Also cross-compile every surviving config and judge its facts."),
    output: OutputFormat = FormatOption,
    jobs: Optional[int] = typer.Option(None, "-j", "--jobs", help="Parallel compile workers (default: CPU count)."),
    timeout: float = typer.Option(30.0, "--timeout", help="Time limit per compile, seconds."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Compile cache directory."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary."),
) -> None:
    """Judge every config of a search space; exit 1 if any config is rejected."""
    from .lint.settings import positive_seconds

    timeout = positive_seconds(timeout, "--timeout")
    from .arch import load_arch
    from .compile.cache import ResultCache
    from .judge.pipeline import prune_space
    from .space import load_space

    loaded = load_space(space)
    loaded.require_configs()
    archs = [load_arch(name.strip(), ) for name in arch.split(",") if name.strip()]
    if not archs:  # --arch "" or ",": nothing would be judged, and exit 0 would say all is well
        raise KernelrulesError(f"no target architecture in --arch {arch!r}", hint="e.g. --arch ada,hopper")
    cache = ResultCache(cache_dir) if cache_dir is not None else ResultCache()
    with _progress(output is OutputFormat.text and not quiet) as progress:
        try:
            result = prune_space(loaded, archs, compile=compile, jobs=jobs, timeout=timeout, cache=cache,
                                 progress=progress)
        except KernelrulesError as exc:
            if exc.path is not None:
                raise
            raise KernelrulesError(exc.message, path=str(space), hint=exc.hint) from None  # name the space file
    if output is OutputFormat.json:
        _echo_json(result.to_json())
    else:
        _print_prune(result, quiet)
    raise typer.Exit(1 if result.rejected else 0)


class _progress:
    """A rich progress bar on stderr while compiles run (off when stderr is not a terminal)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled and sys.stderr.isatty()
        self.bar = None
        self.tasks: dict[str, int] = {}

    def __enter__(self):
        if self.enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                TimeElapsedColumn(), console=Console(stderr=True), transient=True)
            self.bar.start()
        return self.update

    def update(self, label: str, done: int, total: int) -> None:
        """Two lines: the kernels linted so far (label ``kernels``), and the current compile step,
        whose label names what is compiling (``ops/rms.py:fwd: compiling hopper``)."""
        if self.bar is None:
            return
        key = "kernels" if label == "kernels" else "current"
        if key not in self.tasks:
            self.tasks[key] = self.bar.add_task(label, total=total)
        self.bar.update(self.tasks[key], completed=done, total=total, description=label)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _print_prune(result, quiet: bool) -> None:
    from collections import Counter

    if not quiet:
        for record in result.rejected:
            v = record.verdict
            first = next(d for d in v.diagnostics if d.severity == "error")
            line = f"{v.arch} [{v.config}] {first.code} {first.message}"
            if v.repair is not None:
                line += f" -> nearest passing: {v.repair}"
            typer.echo(line)
    for note in result.notes:
        typer.echo(f"note: {note}")
    by_arch = Counter((r.verdict.arch, r.verdict.verdict) for r in result.records)
    codes = Counter((r.verdict.arch, d.code) for r in result.records for d in r.verdict.diagnostics
                    if d.severity == "error")
    for arch in dict.fromkeys(r.verdict.arch for r in result.records):
        kept, rejected = by_arch[(arch, "pass")], by_arch[(arch, "reject")]
        reasons = ", ".join(f"{code} {n}" for (a, code), n in sorted(codes.items()) if a == arch)
        typer.echo(f"{arch}: {kept} kept, {rejected} rejected" + (f" ({reasons})" if reasons else ""))


# -- lint --------------------------------------------------------------------------------


class LintFormat(str, Enum):
    text = "text"
    json = "json"
    sarif = "sarif"
    github = "github"


def _codes(text: Optional[str]) -> Optional[List[str]]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else None


@app.command("lint")
def lint_command(
    paths: List[Path] = typer.Argument(..., help="Python files or directories to lint."),
    arch: Optional[str] = typer.Option(None, "--arch", help="Target architecture(s), comma-separated: ada,hopper."),
    stage: Optional[str] = typer.Option(None, "--stage", help="config: predictions only (fast); compiled (default): also cross-compile."),
    output: LintFormat = typer.Option(LintFormat.text, "--format", help="Output format."),
    fail_on: Optional[str] = typer.Option(None, "--fail-on", help="Lowest severity that makes the exit code 1: error, warning or info."),
    exit_zero: bool = typer.Option(False, "--exit-zero", help="Exit 0 even with findings."),
    spec: Optional[Path] = typer.Option(None, "--spec", help="Launch-signature spec file (kernels: {name: {signature: ...}})."),
    trace: Optional[Path] = typer.Option(None, "--trace", help="Launch trace recorded by 'kernelrules trace'."),
    import_modules: bool = typer.Option(False, "--import", help="Import modules whose autotune configs exist only at run time (runs their code)."),
    select: Optional[str] = typer.Option(None, "--select", help="Only these codes or prefixes, comma-separated."),
    ignore: Optional[str] = typer.Option(None, "--ignore", help="Skip these codes or prefixes, comma-separated."),
    jobs: Optional[int] = typer.Option(None, "-j", "--jobs", help="Parallel compile workers."),
    timeout: Optional[float] = typer.Option(None, "--timeout", help="Time limit per compile, seconds."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Compile cache directory."),
    src: Optional[List[Path]] = typer.Option(None, "--src", help="Directory holding the package kernels import jit helpers from (repeatable; read, never imported)."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the totals (text format)."),
    pinned: Optional[List[Path]] = typer.Option(None, "--pinned", help="Also check this pinned table (JSON) against its kernel in PATHS (repeatable; docs/pinned.md)."),
) -> None:
    """Lint Triton kernels in source files for the target architectures, without running the files."""
    from .lint.linter import LintOptions, Linter
    from .lint.reporters import exit_code, render_github, render_json, render_sarif, render_text, totals_line
    from .lint.settings import load_settings

    for path in paths:
        if not path.exists():
            raise KernelrulesError("no such file or directory", path=str(path))
    settings = load_settings([str(p) for p in paths]).merge_cli(
        arch=arch, stage=stage, fail_on=fail_on, select=_codes(select), ignore=_codes(ignore), jobs=jobs,
        compile_timeout=timeout, cache_dir=str(cache_dir) if cache_dir else None,
        src=[str(s.resolve()) for s in src] if src else None)
    for directory in settings.src:
        if not Path(directory).is_dir():
            raise KernelrulesError("--src is not a directory", path=directory)
    _check_selectors(settings)
    if not settings.arch:
        raise KernelrulesError("no target architecture", hint="pass --arch ada,hopper or set arch in [tool.kernelrules]")
    loaded_trace = loaded_spec = None
    if trace is not None:  # a broken spec or trace is a usage error for the whole run (exit 2)
        from .specify.trace import load_trace

        if not trace.is_file():
            raise KernelrulesError("no such trace file", path=str(trace))
        loaded_trace = load_trace(trace)
    if spec is not None:
        from .specify.signatures import load_spec_file

        loaded_spec = load_spec_file(spec)
    tables = []
    if pinned:  # a table that does not load is a usage error, before any linting
        from .pinned import load_table

        tables = [load_table(p) for p in pinned]
    options = LintOptions.from_settings(settings, spec=loaded_spec, trace=loaded_trace, pinned=tables,
                                        import_modules=import_modules)
    with _progress(output is LintFormat.text and not quiet) as progress:
        report = Linter(options, progress=progress).run(paths)
    if not report.kernels and not report.findings:
        typer.echo(f"kernelrules: no @triton.jit kernels found in {', '.join(map(str, paths))}", err=True)
    if output is LintFormat.json:
        typer.echo(render_json(report))
    elif output is LintFormat.sarif:
        typer.echo(render_sarif(report))
    elif output is LintFormat.github:
        typer.echo(render_github(report))
    else:
        typer.echo(totals_line(report) if quiet else render_text(report, color=sys.stdout.isatty()))
    raise typer.Exit(exit_code(report, fail_on=settings.fail_on, exit_zero=exit_zero))


def _check_selectors(settings) -> None:
    """Every --select/--ignore/[tool.kernelrules] selector names a known code or prefix."""
    from .lint.findings import LINT_CODES
    from .judge.ruleset import load_rules

    settings.check_selectors([r.code for r in load_rules().rules] + list(LINT_CODES))


@app.command("trace", context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def trace_command(
    ctx: typer.Context,
    output: Path = typer.Option(Path("kernelrules-trace.jsonl"), "-o", "--output", help="Trace file to write."),
) -> None:
    """Run a command (after --) and record every Triton launch it makes; works under TRITON_INTERPRET=1."""
    from .specify.trace import run_trace

    command = list(ctx.args)
    if not command:
        raise KernelrulesError("no command to trace", hint="kernelrules trace -o trace.jsonl -- pytest tests/")
    code = run_trace(command, output)
    typer.echo(f"kernelrules: trace written to {output}", err=True)
    raise typer.Exit(code)


@app.command("spec")
def spec_command(
    path: Path = typer.Argument(..., help="A Python file with Triton kernels."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Where to write (default: the sidecar <module>.kernelrules.yaml; '-' for stdout)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing spec file."),
) -> None:
    """Write a launch-signature spec skeleton for every kernel in a file, filled with what could be inferred."""
    from .discover.kernels import discover
    from .specify.signatures import infer_signature, sidecar_path, spec_skeleton

    if not path.is_file():
        raise KernelrulesError("no such file", path=str(path))
    found = discover([path])
    for problem in found.problems:
        if problem.kind in ("unreadable-file", "syntax-error"):
            raise KernelrulesError(problem.message, path=str(problem.path), line=problem.line)
        # An autotune list or key kernelrules will not evaluate (a recursive call, a value too large)
        # says nothing about the launch signature: the skeleton is still written.
        typer.echo(f"kernelrules: warning: {problem.path}:{problem.line}: {shorten(problem.message, 300)}", err=True)
    if not found.kernels:
        raise KernelrulesError("no @triton.jit kernels found", path=str(path))
    signatures = {k.name: infer_signature(k, use_sidecar=False) for k in found.kernels}
    text = spec_skeleton(found.kernels, signatures)
    if output is not None and str(output) == "-":
        typer.echo(text, nl=False)
        return
    target = output or sidecar_path(path)
    if target.exists() and not force:
        raise KernelrulesError("spec file exists; not overwriting", path=str(target), hint="use --force or -o")
    write_output(target, text)
    typer.echo(f"wrote {target} ({len(found.kernels)} kernels)")


# -- tune, space and report (kernelrules/cli_tune.py) ----------------------------------------------

_register_tuning(app)
_register_pin(app)
name_every_command(app)


#: The command line's thresholds of Python's cyclic garbage collector (Python's default: 700, 10, 10).
#: A lint builds large acyclic data (the syntax tree of a 1 MB file is 400,000 objects, then its kernels and
#: judgements), and every collection of the older generations walks all of it: at 700 allocations a collection,
#: collecting took a third to a half of the CPU time of a lint of a 1 MB file (benchmarks/bench_big_file.py);
#: at (10,000, 10, 10), discovering sglang's 880 Triton modules took 7 s of CPU against 4 s at these
#: (measured back to back, docs/corpus-results.md "Speed"). Young cycles are still collected.
GC_THRESHOLDS = (100_000, 50, 100)


def main() -> None:
    """Entry point: run the app, turning user errors into one line and exit code 2."""
    gc.set_threshold(*GC_THRESHOLDS)  # this process only: the library leaves it alone
    from .compile.specialize import hide_torch_from_specializer

    hide_torch_from_specializer()  # this process launches no kernel with torch tensors: spare torch's import
    atexit.register(_quiet_teardown)  # registered first, so it runs after every other exit handler
    try:
        _run_app()
    finally:
        # Nothing left is garbage worth a pass: without this, the interpreter's last full collection walks
        # every syntax tree still cached (3 of a warm unsloth lint's 5 s of CPU). Exit frees the memory.
        gc.freeze()


def _quiet_teardown() -> None:
    """Send what the interpreter prints to stderr while it tears down nowhere, once Triton's library is loaded.

    Triton 3.9's nanobind bindings report "leaked" instances, types and functions when the interpreter
    shuts down (27 lines after a cold ``kernelrules lint``, none with Triton 3.6): not kernelrules'
    output, and after it. Runs as the last exit handler, when everything kernelrules prints is out."""
    if "triton._C.libtriton" not in sys.modules:
        return
    try:
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    except (OSError, ValueError):  # a closed stream or no stderr: nothing to quiet
        pass


def _run_app() -> None:
    """Run the app, turning user errors into one line and exit code 2."""
    try:
        app()
    except KernelrulesError as exc:
        typer.echo(f"kernelrules: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        typer.echo("kernelrules: interrupted", err=True)
        sys.exit(130)
    except Exception as exc:  # an internal error: still one line unless debugging
        if os.environ.get("KERNELRULES_DEBUG"):
            traceback.print_exc()
        typer.echo(
            f"kernelrules: internal error: {type(exc).__name__}: {mask_credentials(shorten(str(exc)))} "
            "(set KERNELRULES_DEBUG=1 for a traceback)",
            err=True,
        )
        sys.exit(EXIT_USAGE)
