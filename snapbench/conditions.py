"""Condition ids: the 54 states (clean + 45 image + 8 text) and the joint image+text conditions.

Ids are stable strings used in file names, tables and the CLI:

* ``clean``
* ``img/<operator>/s<severity>``           e.g. ``img/motion_blur/s2``
* ``txt/<operator>``                       e.g. ``txt/char_swap``
* ``joint/<image op>+<text op>/s<sev>``    e.g. ``joint/compression+char_add/s3``

In file names "/" becomes "__" (``img__motion_blur__s2.npy``).

This module is the one source of the built-in operator names and of each image operator's
primitive (:data:`IMAGE_PRIMITIVES`): the image registry takes a built-in's primitive from here and
refuses a registration that disagrees, and the severity grid holds parameters only.  It knows only
names; the operators themselves live in :mod:`snapbench.corruptions`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Literal, Sequence

__all__ = [
    "IMAGE_OPERATORS",
    "IMAGE_PRIMITIVES",
    "TEXT_OPERATORS",
    "TEXT_LEVELS",
    "SEVERITIES",
    "JOINT_PAIRS",
    "Condition",
    "parse_condition",
    "condition_to_filename",
    "filename_to_condition",
    "list_conditions",
    "joint_conditions",
]

# SnapBench taxonomy, in the paper's order.
IMAGE_PRIMITIVES: dict[str, tuple[str, ...]] = {
    "degrade": ("low_light", "overexposure", "defocus_blur", "motion_blur", "compression", "low_resolution"),
    "transform": ("rotation", "perspective", "lens_distortion"),
    "remove": ("cropping", "downscale"),
    "add": ("watermark", "mosaic", "scribble", "ui_elements"),
}
IMAGE_OPERATORS: tuple[str, ...] = tuple(op for ops in IMAGE_PRIMITIVES.values() for op in ops)

TEXT_LEVELS: dict[str, tuple[str, ...]] = {
    "char": ("char_add", "char_delete", "char_change", "char_swap"),
    "word": ("word_repeat", "word_swap"),
    "sentence": ("sent_add", "sent_replace"),
}
TEXT_OPERATORS: tuple[str, ...] = tuple(op for ops in TEXT_LEVELS.values() for op in ops)

SEVERITIES: tuple[int, ...] = (1, 2, 3)

# The paper's six joint pairs (image operator, text operator), each at the three image severities.
JOINT_PAIRS: tuple[tuple[str, str], ...] = (
    ("compression", "char_add"),     # C+C
    ("downscale", "char_delete"),    # D+D
    ("low_light", "word_swap"),      # L+W
    ("mosaic", "sent_add"),          # M+S
    ("overexposure", "word_repeat"), # E+W
    ("rotation", "sent_replace"),    # R+S
)

Kind = Literal["clean", "image", "text", "joint"]
_NAME = r"[A-Za-z0-9_.\-]+"
_IMG_RE = re.compile(rf"^img/({_NAME})/s(\d+)$")
_TXT_RE = re.compile(rf"^txt/({_NAME})$")
_JOINT_RE = re.compile(rf"^joint/({_NAME})\+({_NAME})/s(\d+)$")


@dataclass(frozen=True)
class Condition:
    """One evaluation state: which operator(s) corrupt the query, and at which image severity."""

    kind: Kind
    image_operator: str | None = None
    text_operator: str | None = None
    severity: int | None = None

    @property
    def id(self) -> str:
        if self.kind == "clean":
            return "clean"
        if self.kind == "image":
            return f"img/{self.image_operator}/s{self.severity}"
        if self.kind == "text":
            return f"txt/{self.text_operator}"
        return f"joint/{self.image_operator}+{self.text_operator}/s{self.severity}"

    @property
    def filename(self) -> str:
        """The id with "/" replaced by "__" (no extension)."""
        return condition_to_filename(self.id)

    @property
    def image_part(self) -> "Condition | None":
        """The image-only condition inside this one (for joint: its image half)."""
        if self.kind in ("image", "joint"):
            return Condition("image", image_operator=self.image_operator, severity=self.severity)
        return None

    @property
    def text_part(self) -> "Condition | None":
        if self.kind in ("text", "joint"):
            return Condition("text", text_operator=self.text_operator)
        return None

    def to_dict(self) -> dict:
        d: dict = {"id": self.id, "kind": self.kind}
        if self.image_operator is not None:
            d["image_operator"] = self.image_operator
        if self.text_operator is not None:
            d["text_operator"] = self.text_operator
        ops = [o for o in (self.image_operator, self.text_operator) if o is not None]
        d["operator"] = "+".join(ops) if ops else None
        d["severity"] = self.severity
        return d

    def __str__(self) -> str:
        return self.id


def parse_condition(condition_id: str) -> Condition:
    """Parse a condition id (or its file-name form) into a :class:`Condition`.

    Raises ``ValueError`` naming the id when it is not of one of the four documented shapes.
    Operator names are not checked against a registry here (users may register their own).
    """
    cid = filename_to_condition(condition_id.strip())
    if cid == "clean":
        return Condition("clean")
    if m := _IMG_RE.match(cid):
        return Condition("image", image_operator=m[1], severity=int(m[2]))
    if m := _TXT_RE.match(cid):
        return Condition("text", text_operator=m[1])
    if m := _JOINT_RE.match(cid):
        return Condition("joint", image_operator=m[1], text_operator=m[2], severity=int(m[3]))
    raise ValueError(
        f"not a condition id: {condition_id!r} (expected 'clean', 'img/<op>/s<N>', 'txt/<op>' "
        "or 'joint/<image op>+<text op>/s<N>')"
    )


def condition_to_filename(condition_id: str) -> str:
    return condition_id.replace("/", "__")


def filename_to_condition(name: str) -> str:
    return name.replace("__", "/")


def list_conditions(
    *,
    joint: bool = False,
    image_operators: Sequence[str] = IMAGE_OPERATORS,
    text_operators: Sequence[str] = TEXT_OPERATORS,
    severities: Sequence[int] | dict[str, Sequence[int]] = SEVERITIES,
    joint_pairs: Iterable[tuple[str, str]] = JOINT_PAIRS,
) -> list[Condition]:
    """clean, then every image operator at every severity, then every text operator (54 by default);
    with ``joint=True`` the joint pairs at every severity follow (18 by default).

    ``severities`` may be a per-operator mapping when a custom grid adds or removes levels.
    """

    def sevs(op: str) -> Sequence[int]:
        return severities.get(op, SEVERITIES) if isinstance(severities, dict) else severities

    out = [Condition("clean")]
    out += [Condition("image", image_operator=op, severity=s) for op in image_operators for s in sevs(op)]
    out += [Condition("text", text_operator=op) for op in text_operators]
    if joint:
        out += joint_conditions(joint_pairs, severities=severities)
    return out


def joint_conditions(
    pairs: Iterable[tuple[str, str]] = JOINT_PAIRS,
    *,
    severities: Sequence[int] | dict[str, Sequence[int]] = SEVERITIES,
) -> list[Condition]:
    """Joint conditions for ``pairs`` of (image operator, text operator) at every severity."""
    out = []
    for img_op, txt_op in pairs:
        sevs = severities.get(img_op, SEVERITIES) if isinstance(severities, dict) else severities
        out += [Condition("joint", image_operator=img_op, text_operator=txt_op, severity=s) for s in sevs]
    return out
