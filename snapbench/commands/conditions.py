"""`snapbench conditions`: list condition ids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from ..conditions import list_conditions


def conditions(
    joint: bool = typer.Option(False, "--joint", help="Also list the 18 joint image+text conditions."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON list of objects (id, kind, operator, severity)."),
    grid: Optional[Path] = typer.Option(
        None, "--grid", help="Severity grid override (JSON/TOML); extra levels and registered operators are listed too."
    ),
) -> None:
    """List condition ids, one per line: clean, 45 image, 8 text (54 states); --joint adds 18 joint."""
    from ..corruptions.image import default_grid, image_operators, load_grid
    from ..corruptions.text import text_operators

    table = load_grid(grid, base=default_grid()) if grid else default_grid()  # errors name the file
    ops = list(image_operators())  # every registered operator has levels (required at registration)
    severities = {op: sorted(table[op]) for op in ops}
    conds = list_conditions(joint=joint, image_operators=ops, text_operators=list(text_operators()), severities=severities)
    if as_json:
        typer.echo(json.dumps([c.to_dict() for c in conds], indent=2))
    else:
        for c in conds:
            typer.echo(c.id)
