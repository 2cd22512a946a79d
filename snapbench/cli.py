"""The ``snapbench`` command line: thin typer commands over the library modules.

Flow: ``corrupt`` -> ``encode`` (or your own encoder) -> ``evaluate`` / ``moor`` -> report;
``conditions`` and ``preview`` help plan a run; ``diagnose`` measures the issues real queries have;
``demo`` runs it all on the bundled photos.
"""

from __future__ import annotations

import functools
import importlib
import warnings
from typing import Any, Callable

import typer

from ._version import __version__
from .atomic import removing_empty_output_dirs
from .commands.compare import compare
from .commands.conditions import conditions
from .commands.corrupt import corrupt
from .commands.demo import demo
from .commands.diagnose import diagnose
from .commands.encode import encode
from .commands.evaluate import additivity, evaluate
from .commands.flags import flag
from .commands.interrupts import interrupted_message
from .commands.moor import moor
from .commands.preview import preview
from .commands.report import report
from .commands.run import run
from .commands.stress import stress
from .commands.usage import Command
from .errors import SnapbenchError
from .signals import Terminated, exit_status, stop_on_termination

app = typer.Typer(
    name="snapbench",
    help=(
        "Paired robustness evaluation of image+text retrieval.\n\n"
        "corrupt queries -> encode with your model -> evaluate ΔR@k with CIs -> fuse with MOOR."
    ),
    no_args_is_help=True,
    rich_markup_mode=None,  # help texts are plain: 'snapbench[codecs]' must not be read as a markup tag
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"snapbench {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the snapbench version and exit."
    ),
) -> None:
    """Paired robustness evaluation of image+text retrieval."""
    from .engines.shm import remove_stale_shared

    remove_stale_shared()  # shared-memory blocks a killed snapbench left behind (any command cleans them)


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """Warnings reach the terminal as one ``warning: ...`` line, not Python's file:line format."""
    typer.echo(f"warning: {message}", err=True)


def guarded(command: Callable[..., Any], on_interrupt: str | None = None) -> Callable[..., Any]:
    """Run a command; map snapbench's errors and OS errors to ``error: <file>: <problem>``, exit 2.

    A command that fails leaves no output folder it created and wrote nothing into
    (:func:`snapbench.atomic.removing_empty_output_dirs`).

    Ctrl-C prints ``on_interrupt`` (default: the command's line in
    :mod:`snapbench.commands.interrupts`) and exits 130; SIGTERM and SIGHUP do the same with exit
    status 143 and 129 (:mod:`snapbench.signals`).

    This is the one place where library exceptions become CLI messages: commands raise
    :class:`~snapbench.errors.SnapbenchError` (or let ``OSError`` through) instead of printing.
    """

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with warnings.catch_warnings(), removing_empty_output_dirs(), stop_on_termination():
                warnings.showwarning = _show_warning
                return command(*args, **kwargs)
        except SnapbenchError as exc:
            typer.echo(f"error: {exc.render(flag)}", err=True)
            raise typer.Exit(2) from None
        except ImportError as exc:
            if "pip install" not in str(exc):  # a broken installation, not a missing extra: keep the traceback
                raise
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        except BrokenPipeError:
            # the reader went away (`snapbench conditions | head -1`): stop quietly, like other Unix
            # tools; stdout is pointed at /dev/null so Python's final flush does not complain
            import os
            import sys

            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None
        except OSError as exc:
            where = exc.filename if exc.filename is not None else ""
            what = exc.strerror or str(exc)
            typer.echo(f"error: {where}: {what}" if where else f"error: {what}", err=True)
            raise typer.Exit(2) from None
        except (KeyboardInterrupt, Terminated) as exc:
            typer.echo(on_interrupt or interrupted_message(command.__name__), err=True)
            raise typer.Exit(exit_status(exc)) from None

    return wrapper


class _Command(Command):
    """:class:`~snapbench.commands.usage.Command` whose flag values that do not parse (``--topk abc``,
    ``--ci x``) are said as every other refusal is: ``error: --topk: 'abc' is not a valid integer``,
    exit 2 -- not click's usage block.  Ranges are the library's checks (no typer ``min=``/``max=``),
    so ``--topk 0`` reads ``error: --topk: must be an integer >= 1, got 0`` like a library call.
    A missing argument keeps click's usage error (it names the argument and shows the usage line)."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except typer.BadParameter as exc:
            if isinstance(exc, _MISSING) or exc.param is None:
                raise
            p = exc.param
            name = (next((o for o in p.opts if o.startswith("--")), p.opts[0]) if p.param_type_name == "option"
                    else p.metavar or (p.name or "").upper())
            typer.echo(f"error: {name}: {exc.message.rstrip('.')}", err=True)
            raise typer.Exit(2) from None


# click's MissingParameter, from the click typer raises with (recent typer versions carry their own copy)
_MISSING: type = importlib.import_module(typer.BadParameter.__module__).MissingParameter


for _name, _command in (
    ("conditions", conditions),
    ("corrupt", corrupt),
    ("preview", preview),
    ("encode", encode),
    ("evaluate", evaluate),
    ("additivity", additivity),
    ("moor", moor),
    ("run", run),
    ("report", report),
    ("compare", compare),
    ("diagnose", diagnose),
    ("demo", demo),
    ("stress", stress),
):
    app.command(_name, cls=_Command)(guarded(_command, interrupted_message(_name)))


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
