"""`snapbench conditions`: list condition ids."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def conditions(
    joint: bool = typer.Option(False, "--joint", help="Also list the 18 joint image+text conditions."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of objects (id, kind, operator, severity)."),
    grid: Optional[Path] = typer.Option(
        None, "--grid", help="Severity grid override (JSON/TOML); extra levels and registered operators are listed too."
    ),
) -> None:
    """List condition ids, one per line: clean, 45 image, 8 text (54 states); --joint adds 18 joint."""
    from ..core.jsonable import dumps
    from ..corruptions.plan import plan_conditions

    conds = plan_conditions(None, joint=joint, grid=grid).conditions  # the list a run with these options uses
    text = dumps([c.to_dict() for c in conds], indent=2) if as_json else "\n".join(c.id for c in conds)
    typer.echo(text)  # a reader that stops early (| head -1) is handled once, in cli.guarded

