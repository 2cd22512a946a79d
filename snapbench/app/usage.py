"""The command class every ``snapbench`` command is built with: usage lines that read like Unix tools.

Typer writes a required argument in braces (``Usage: snapbench diagnose [OPTIONS] {queries}``), a
notation no other tool uses.  Here an argument is named in capitals, as the error messages name it
(``INPUT``, ``RUN_DIR``; :mod:`snapbench.app.flags`): ``QUERIES``, ``[NAME]`` when optional,
``RUN_DIR...`` when it takes several -- in the usage line, the Arguments section and the "Missing
argument" error alike.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand

__all__ = ["Command"]


class Command(TyperCommand):
    """:class:`typer.core.TyperCommand` with arguments named ``NAME`` (not ``{name}``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for p in self.params:
            if p.param_type_name == "argument" and p.metavar is None and p.name:
                p.metavar = p.name.upper()

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for p in self.get_params(ctx):
            if p.param_type_name != "argument":
                pieces.extend(p.get_usage_pieces(ctx))
                continue
            name = p.metavar or (p.name or "").upper()
            if p.nargs != 1 and not name.endswith("..."):
                name += "..."
            pieces.append(name if p.required else f"[{name}]")
        return pieces
