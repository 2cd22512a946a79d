"""The ``snapbench`` command line: thin typer commands over the library modules.

Flow: ``corrupt`` -> ``encode`` (or your own encoder) -> ``evaluate`` / ``moor`` -> report;
``conditions`` and ``preview`` help plan a run; ``demo`` runs it all on the bundled photos.
"""

from __future__ import annotations

import typer

from .commands.conditions import conditions
from .commands.corrupt import corrupt
from .commands.demo import demo
from .commands.encode import encode
from .commands.evaluate import additivity, evaluate
from .commands.moor import moor
from .commands.preview import preview

app = typer.Typer(
    name="snapbench",
    help=(
        "Paired robustness evaluation of image+text retrieval.\n\n"
        "corrupt queries -> encode with your model -> evaluate ΔR@k with CIs -> fuse with MOOR."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.callback()
def _root() -> None:
    """Paired robustness evaluation of image+text retrieval."""


for _name, _command in (
    ("conditions", conditions),
    ("corrupt", corrupt),
    ("preview", preview),
    ("encode", encode),
    ("evaluate", evaluate),
    ("additivity", additivity),
    ("moor", moor),
    ("demo", demo),
):
    app.command(_name)(_command)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
