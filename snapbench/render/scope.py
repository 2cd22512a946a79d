"""What a run left out on purpose, so that its report says so once instead of showing "not found".

A run of a text-only model, or of data without images, evaluates T→T only: the image modes, MOOR,
the image and joint conditions cannot exist, and neither can what is built from them (coarse-text
drag, MOOR's gain and text share, additivity, the contact sheet).  Their absence is not a missing
file.  :func:`run_scope` reads it from ``run.json`` (the modes and conditions the run lists, the
notes that say why the rest was skipped); a folder without ``run.json`` has no such record, and its
report keeps naming what it did not find.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..core.targets import TARGET_ORDER
from ..store.rundir import TARGET_NAMES, RunData

__all__ = ["RunScope", "run_scope"]

# run.json notes that say why modes, MOOR or conditions were skipped (written by the pipeline)
_SKIP_NOTE_STARTS = ("modes skipped", "retrieval modes that can run", "MOOR and the fusion baselines")
_SKIP_NOTE_PARTS = ("condition(s) left out",)


@dataclass(frozen=True)
class RunScope:
    """What the run did not set out to produce.

    ``known``: whether run.json records the run's modes (otherwise nothing is known to be left out);
    ``modes_left_out``: the modes and MOOR the run did not evaluate; ``image_conditions`` /
    ``joint_conditions``: whether the run evaluated any; ``query_image``: whether run.json names a
    query image for the contact sheet; ``reasons``: the run's own notes on why (quoted once).
    """

    known: bool
    modes_left_out: list[str] = field(default_factory=list)
    image_conditions: bool = True
    joint_conditions: bool = True
    query_image: bool = True
    reasons: list[str] = field(default_factory=list)

    def left_out(self, target: str) -> bool:
        """Whether the run did not evaluate ``target`` (a mode or ``MOOR``) on purpose."""
        return self.known and target in self.modes_left_out

    @property
    def no_drag(self) -> bool:
        """Coarse-text drag needs I→I or IT→IT, and the run evaluated neither."""
        return self.left_out("I2I") and self.left_out("IT2IT")

    @property
    def no_additivity(self) -> bool:
        """Additivity needs joint conditions, and the run has none."""
        return self.known and not self.joint_conditions

    @property
    def no_contact_sheet(self) -> str:
        """Why the contact sheet (one query under every image condition) does not apply; empty when it does."""
        if not self.known:
            return ""
        if not self.query_image:
            return "the queries have no image to show"
        if not self.image_conditions:
            return "the run has no image conditions"
        return ""

    def sentence(self) -> str:
        """One plain paragraph: what this report does not show because the run did not make it, and
        why (the run's notes); empty when the run left nothing out."""
        items = []
        modes = [m for m in self.modes_left_out if m != "MOOR"]
        if modes:
            items.append("the modes " + ", ".join(TARGET_NAMES.get(m, m) for m in modes))
        if self.left_out("MOOR"):
            items.append("MOOR and the fixed-fusion baselines, with MOOR's gain over IT→IT and its text-path share")
        if self.no_drag:
            items.append("the coarse-text drag (it compares with I→I or IT→IT)")
        if not self.image_conditions:
            items.append("the image conditions")
        if self.no_additivity:
            items.append("joint conditions, and with them additivity (δ compares a joint condition with its parts)")
        if self.no_contact_sheet:
            items.append(f"the contact sheet of one query under every image condition ({self.no_contact_sheet})")
        if not items:
            return ""
        text = ("This run did not make " + "; ".join(items) + ", so this report has none of them: nothing is "
                "missing or broken.")
        if self.reasons:
            text += " Why, as the run recorded it: " + " ".join(r.rstrip(".") + "." for r in self.reasons)
        return text


def run_scope(data: RunData) -> RunScope:
    """What ``data``'s run left out, from its run.json (see the module docstring)."""
    run = data.run
    listed = run.get("modes")
    if not isinstance(listed, list):
        return RunScope(known=False)
    conditions = [str(c) for c in run.get("conditions") or [] if isinstance(c, str)]
    notes = [str(n) for n in run.get("notes") or []]
    sheet = run.get("contact_sheet")
    return RunScope(
        known=True,
        modes_left_out=[m for m in TARGET_ORDER if m not in listed],
        image_conditions=any(c.startswith("img/") for c in conditions),
        joint_conditions=any(c.startswith("joint/") for c in conditions),
        query_image=data.contact_sheet is not None or (isinstance(sheet, dict) and bool(sheet.get("image"))),
        reasons=[n for n in notes if n.startswith(_SKIP_NOTE_STARTS) or any(p in n for p in _SKIP_NOTE_PARTS)],
    )
