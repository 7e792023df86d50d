"""The ``kernelrules tune``, ``space`` and ``report`` commands (the GPU search driver's command line).

Registered on the main app by :mod:`kernelrules.cli`; kept apart so that the linter's
commands and the tuner's each stay a readable size. Same conventions: one-line errors
(:class:`~kernelrules.errors.KernelrulesError`), exit 0 when a winner was named.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import List, Optional

import typer

from .atomicio import write_output
from .errors import KernelrulesError


def register(app: typer.Typer) -> None:
    """Add the tuning commands to ``app``, in the order ``--help`` lists them."""
    app.command("tune")(tune_command)
    app.command("space")(space_command)
    app.command("report")(report_command)


def _seconds(text: Optional[str]) -> Optional[float]:
    """A duration: 600, 600s, 10m, 1.5h."""
    if text is None:
        return None
    units = {"s": 1.0, "m": 60.0, "h": 3600.0}
    raw = text.strip().lower()
    scale = units.get(raw[-1:], None)
    number = raw[:-1] if scale else raw
    try:
        value = float(number) * (scale or 1.0)
    except ValueError:
        raise KernelrulesError(f"cannot read the duration {text!r}", hint="e.g. 600, 600s, 10m or 1.5h") from None
    if not math.isfinite(value) or value <= 0:
        raise KernelrulesError(f"the duration {text!r} must be positive and finite")
    return value


def tune_command(
    spaces: List[Path] = typer.Argument(..., metavar="SPACE", help="Space file(s) (YAML) whose problem section says how to run the kernel; several are tuned in turn, the workers kept warm."),
    arch: Optional[str] = typer.Option(None, "--arch", help="Target architecture (default: the current GPU)."),
    trials: Optional[int] = typer.Option(None, "--trials", help="Stop when the study has judged this many configs."),
    time_budget: Optional[str] = typer.Option(None, "--time-budget", help="Stop asking for candidates after this long (600, 10m, 1h)."),
    stop_at_ms: Optional[float] = typer.Option(None, "--stop-at-ms", help="Stop asking for candidates once a config times at or under this many milliseconds."),
    storage: Optional[str] = typer.Option(None, "--storage", help="Study storage: an SQLite file or a URL (postgresql://...)."),
    study_dir: Optional[Path] = typer.Option(None, "--study-dir", help="Folder of the default SQLite study file."),
    study_name: Optional[str] = typer.Option(None, "--study-name", help="Study name (default: kernel, arch and sizes)."),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs to benchmark on, one worker each: 0,1,2."),
    interpret: bool = typer.Option(False, "--interpret", help="Run under TRITON_INTERPRET=1 on the CPU (timings meaningless)."),
    json_output: bool = typer.Option(False, "--json", help="JSON Lines: one record per trial, then the summary."),
    seed: int = typer.Option(0, "--seed", help="Sampler seed."),
    sampler: str = typer.Option("auto", "--sampler", help="auto (Sobol, then TPE), tpe, gp, qmc, random or grid."),
    stage: str = typer.Option("compiled", "--stage", help="Rules gate: config (predictions), compiled (also cross-compile) or none (the raw space, for comparisons)."),
    jobs: Optional[int] = typer.Option(None, "-j", "--jobs", help="Parallel compile workers of the gate."),
    timeout: float = typer.Option(60.0, "--timeout", help="Time limit per compile, seconds."),
    bench_timeout: float = typer.Option(60.0, "--bench-timeout", help="Time limit per check or timing of one config, seconds."),
    top_k: int = typer.Option(5, "--top-k", help="Configs re-measured at the end."),
    rounds: int = typer.Option(5, "--rounds", help="Interleaved rounds of the final re-measurement."),
    timer: str = typer.Option("held", "--timer", help="held (a GPU-side hold before each timed run; docs/tune.md) or do_bench (Triton's own loop)."),
    cache_dir: Optional[Path] = typer.Option(None, "--cache-dir", help="Compile cache directory."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Only the summary (text output)."),
    export: Optional[Path] = typer.Option(None, "--export", help="Write the winner into this pinned table (JSON; updated in place, docs/pinned.md)."),
    key: Optional[List[str]] = typer.Option(None, "--key", help="With --export: a tuning key value, NAME=VALUE (repeatable; default: from the space's problem sizes)."),
) -> None:
    """Search a space on the GPU(s): gate candidates with the rules, check them, time them, name the winner.

    Several space files are tuned in turn, the workers kept warm; exit 0 when every one named a winner."""
    from .tune.driver import TuneOptions, TuneSession, Tuner
    from .tune.output import Progress, json_line, summary_lines, trial_line
    from .tune.timing import TIMERS

    if sampler not in ("auto", "tpe", "gp", "qmc", "random", "grid"):
        raise KernelrulesError(f"unknown sampler {sampler!r}", hint="auto, tpe, gp, qmc, random or grid")
    if stage not in ("config", "compiled", "none"):
        raise KernelrulesError(f"unknown stage {stage!r}", hint="config, compiled or none")
    if timer not in TIMERS:
        raise KernelrulesError(f"unknown timer {timer!r}", hint="held or do_bench")
    if trials is not None and trials < 1:
        raise KernelrulesError("--trials must be at least 1")
    gpu_list = [g.strip() for g in gpus.split(",") if g.strip()] if gpus else None
    if gpus is not None and not gpu_list:
        raise KernelrulesError(f"cannot read --gpus {gpus!r}", hint="e.g. --gpus 0,1")
    for space in spaces:
        if not space.exists() and not space.is_symlink():  # a directory or a FIFO: load_space says what it is
            raise KernelrulesError("no such space file", path=str(space))
    if len(spaces) > 1:
        given = [name for name, value in (("--study-name", study_name), ("--export", export), ("--key", key),
                                          ("--stop-at-ms", stop_at_ms)) if value is not None and value != []]
        if given:
            raise KernelrulesError(f"{', '.join(given)} name{'s' if len(given) == 1 else ''} one problem's study, "
                                   f"winner or target: give one space file with {'it' if len(given) == 1 else 'them'}")

    def on_record(record: dict) -> None:
        if json_output:
            typer.echo(json_line("trial", record))
        elif not quiet and not sys.stderr.isatty():
            typer.echo(trial_line(record))
        sys.stdout.flush()  # a record per line as it happens, for whoever reads the pipe

    from .lint.settings import positive_seconds

    timeout = positive_seconds(timeout, "--timeout")
    bench_timeout = positive_seconds(bench_timeout, "--bench-timeout")
    budget = _seconds(time_budget)
    if stop_at_ms is not None and not (math.isfinite(stop_at_ms) and stop_at_ms > 0):
        raise KernelrulesError(f"--stop-at-ms {stop_at_ms:g} must be positive and finite")

    def options_for_one() -> TuneOptions:  # each problem its own (a run sets some of them)
        return TuneOptions(arch=arch, trials=trials, time_budget=budget, stop_at_ms=stop_at_ms, storage=storage,
                           study_dir=str(study_dir) if study_dir else None, study_name=study_name, gpus=gpu_list,
                           interpret=interpret, seed=seed, jobs=jobs, compile_timeout=timeout,
                           bench_timeout=bench_timeout, sampler=sampler, stage=stage, top_k=top_k, rounds=rounds,
                           timer=timer, cache_dir=str(cache_dir) if cache_dir else None, on_record=on_record)

    if key and export is None:
        raise KernelrulesError("--key is for --export", hint="add --export FILE.json")
    session = TuneSession() if len(spaces) > 1 else None
    winners = 0
    try:
        for number, space in enumerate(spaces):
            options = options_for_one()
            tuner = Tuner(space, options, session=session)
            plan = None
            if export is not None:  # checked before the run: a bad key or table costs no tuning
                from .tune.export import plan_export

                plan = plan_export(export, tuner.space, key or ())
            if interpret and not json_output and number == 0:  # once the first space loaded
                typer.echo("kernelrules: --interpret: timings are meaningless (TRITON_INTERPRET=1 on the CPU)", err=True)
            if session is not None and not json_output:
                typer.echo(f"== {space} ==")
            with Progress(not json_output and not quiet, min(len(tuner.configs), trials or len(tuner.configs))) as progress:
                options.on_progress = progress
                result = tuner.run()
            if json_output:
                extra = {"space": str(space)} if session is not None else {}
                typer.echo(json_line("summary", {**result.summary, "notes": result.notes, **extra}))
            else:
                for line in summary_lines(result.summary, result.notes):
                    typer.echo(line)
            if plan is not None and result.summary.get("winner"):
                from .tune.export import export_winner

                typer.echo(export_winner(plan, tuner.space, result.summary), err=json_output)
            winners += bool(result.summary.get("winner"))
    finally:
        if session is not None:
            session.close()
    raise typer.Exit(0 if winners == len(spaces) else 1)


def space_command(
    from_inductor: str = typer.Option(..., "--from-inductor", help="An Inductor kernel file or output_code.py, as FILE or FILE:KERNEL_NAME."),
    output: Optional[Path] = typer.Option(None, "-o", "--output", help="Space file to write (default: <kernel name>.tune.yaml beside FILE; '-' for stdout)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing space file."),
) -> None:
    """Write an editable tune space file for a torch.compile (Inductor) kernel, from its triton_meta and size hints."""
    from .tune.inductor_space import generate, split_target

    path, name = split_target(from_inductor)
    if not path.is_file():
        raise KernelrulesError("no such file", path=str(path))
    to_stdout = output is not None and str(output) == "-"
    if output is None:
        from .tune.inductor_space import find_kernel

        func, _offset, _decorator = find_kernel(path.resolve(), name)
        output = path.parent / f"{func.name}.tune.yaml"
    target = Path.cwd() / "space.tune.yaml" if to_stdout else output
    generated = generate(path, name, target)
    if to_stdout:
        typer.echo(generated.text, nl=False)
    else:
        if output.exists() and not force:
            raise KernelrulesError("space file exists; not overwriting", path=str(output), hint="use --force or -o")
        write_output(output, generated.text)
        typer.echo(f"wrote {output} ({generated.kernel}, {generated.kernel_type})")
    if generated.todo:
        raise KernelrulesError(f"{', '.join(generated.todo)} could not be inferred and {'is' if len(generated.todo) == 1 else 'are'} "
                               f"TODO in the space file: fill {'it' if len(generated.todo) == 1 else 'them'} in before tuning",
                               path=None if to_stdout else str(output))


def report_command(
    study: str = typer.Argument(..., help="The study's storage: an SQLite file (.db) or a URL."),
    study_name: Optional[str] = typer.Option(None, "--study-name", help="Which study (needed when the storage has several)."),
    output: Path = typer.Option(Path("tune-report.html"), "-o", "--output", help="HTML file to write."),
) -> None:
    """Write an HTML report of a tuning study: funnel, trials, winner against roofline and baseline."""
    from .tune.report import write_report

    path = write_report(study, study_name, output)
    typer.echo(f"wrote {path}")
