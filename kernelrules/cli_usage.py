"""Usage errors on one line: a bad option, argument, value or command says what is wrong and what to do.

Typer (Click) prints a usage error as the command's usage line, a hint and a boxed
message, several lines that scripts and CI logs show badly. Every other bad input of
kernelrules is one ``kernelrules: error:`` line (:mod:`kernelrules.errors`), so the root
command's group (:class:`OneLineUsageGroup`) catches Click's errors where Click raises
them (parsing the root's arguments; resolving, parsing and running the subcommand) and
prints one line on stderr instead::

    kernelrules lint: error: no such option: --foo (try 'kernelrules lint --help')

with Click's exit code for it (2 for a usage error, ``EXIT_USAGE``). ``--help``, and
the help printed for a command given no arguments, are Typer's, unchanged.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any, Iterator

import typer
from typer.core import TyperCommand, TyperGroup
from typer.models import DefaultPlaceholder

from .errors import mask_credentials, shorten

try:  # Typer 0.16 and later carry their own Click
    from typer._click import exceptions as _click_exceptions
except ImportError:  # pragma: no cover - older Typer, with Click installed beside it
    from click import exceptions as _click_exceptions  # type: ignore[no-redef]

ClickException = _click_exceptions.ClickException
#: Raised (Click 8.2 and later) after printing a command's help when it was given no arguments.
NoArgsIsHelpError = getattr(_click_exceptions, "NoArgsIsHelpError", ())


def usage_line(error: Any) -> str:
    """The one line for a Click error: ``<command path>: error: <message> (try '<command path> --help')``."""
    ctx = getattr(error, "ctx", None)
    where = ctx.command_path if ctx is not None else "kernelrules"
    message = " ".join(error.format_message().split()).rstrip(".").replace(": Value error, ", ": ")
    if message[:1].isupper() and message[1:2].islower():  # "No such option" -> "no such option"; "YAML" stays
        message = message[0].lower() + message[1:]
    helped = ctx is not None and ctx.command.get_help_option(ctx) is not None
    hint = f" (try '{where} --help')" if helped else ""
    return f"{where}: error: {mask_credentials(shorten(message, 500))}{hint}"


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """Turn a Click error raised inside the block into its one line on stderr and Click's exit code."""
    try:
        yield
    except NoArgsIsHelpError:
        raise  # the help is printed already; Typer exits with Click's code
    except ClickException as error:
        typer.echo(usage_line(error), err=True)
        sys.exit(error.exit_code)


class _NamesItsCommand:
    """Parsing that says which command an error is about: Click's parser raises some errors (an option given a
    value it does not take, an option missing its value) without the command's context."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)  # type: ignore[misc]
        except ClickException as error:
            if getattr(error, "ctx", None) is None:
                error.ctx = ctx  # type: ignore[attr-defined]
            raise


class OneLineCommand(_NamesItsCommand, TyperCommand):
    """A command whose usage errors name it."""


class OneLineGroup(_NamesItsCommand, TyperGroup):
    """A group of commands (``arch``, ``rules``, ``pin``) whose usage errors name it."""


class OneLineUsageGroup(OneLineGroup):
    """The root command: Click's errors in its own arguments and in every subcommand's become one line."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _one_line():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _one_line():
            return super().invoke(ctx)


def name_every_command(app: typer.Typer) -> None:
    """Make the commands and groups of ``app``, at every depth, the classes above (where they name no other class),
    so that every usage error names the command it is about. Call once all commands are registered."""
    for command in app.registered_commands:
        if command.cls in (None, TyperCommand):  # Typer's default
            command.cls = OneLineCommand
    for group in app.registered_groups:
        instance = group.typer_instance
        if instance is None:
            continue
        if isinstance(group.cls, DefaultPlaceholder) and isinstance(instance.info.cls, DefaultPlaceholder):
            instance.info.cls = OneLineGroup
        name_every_command(instance)
