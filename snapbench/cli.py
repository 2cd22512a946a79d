"""The ``snapbench`` command line: thin typer commands over the library modules."""

from __future__ import annotations

import typer

from .commands.conditions import conditions

app = typer.Typer(
    name="snapbench",
    help=(
        "Paired robustness evaluation of image+text retrieval.\n\n"
        "corrupt queries -> score with your model -> evaluate ΔR@k with CIs -> fuse with MOOR."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)



@app.callback()
def _root() -> None:
    """Paired robustness evaluation of image+text retrieval."""


app.command("conditions")(conditions)
# --- commands registered by feature modules (one line each) -----------------------------------
from .commands.corrupt import corrupt as _corrupt; app.command("corrupt")(_corrupt)  # noqa: E402,E702
from .commands.preview import preview as _preview; app.command("preview")(_preview)  # noqa: E402,E702
from .commands.moor import moor as _moor; app.command("moor")(_moor)  # noqa: E402,E702
from .commands.evaluate import evaluate as _evaluate; app.command("evaluate")(_evaluate)  # noqa: E402,E702
from .commands.evaluate import additivity as _additivity; app.command("additivity")(_additivity)  # noqa: E402,E702
from .commands.encode import encode as _encode; app.command("encode")(_encode)  # noqa: E402,E702
from .commands.demo import demo as _demo; app.command("demo")(_demo)  # noqa: E402,E702
# ------------------------------------------------------------------------------------------------


def main() -> None:  # console-script entry point
    app()


if __name__ == "__main__":
    main()
