"""Condition ids: the 54 states (clean + 45 image + 8 text) and the joint image+text conditions.

Ids are stable strings used in file names, tables and the CLI:

* ``clean``
* ``img/<operator>/s<severity>``           e.g. ``img/motion_blur/s2``
* ``txt/<operator>``                       e.g. ``txt/char_swap``
* ``joint/<image op>+<text op>/s<sev>``    e.g. ``joint/compression+char_add/s3``

In file names "/" becomes "__" (``img__motion_blur__s2.npy``).

Ids are spelled in one place, :attr:`Condition.id`: build them as ``Condition.image("motion_blur",
2).id`` (never with an f-string), parse them with :func:`parse_condition`.

This module holds the benchmark's taxonomy: which built-in operators there are, in the paper's
order, and each image operator's primitive (:data:`IMAGE_PRIMITIVES`, read the other way
:data:`PRIMITIVE_OF`) -- vocabulary that results, reports and comparisons read without loading an
operator.  Everything else about an image operator (levels, knob, revision, diagnose flag) is its
one registration in :mod:`snapbench.corruptions.image`, which reads its primitive from this list (a
built-in registration of an operator not listed is refused; a listed operator nobody registered is
an error at every lookup).  It is also the one place that turns requested ids into the ordered list
of a run (:func:`build_conditions`, over a :class:`ConditionSpace`: what can exist) and the one
condition order (:func:`condition_sort_key`).  It knows only names; the operators themselves live in
:mod:`snapbench.corruptions`, whose :func:`~snapbench.corruptions.plan.plan_conditions` builds the
space of the registered operators and a grid.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral
from typing import Any, Literal

from .errors import ConfigError
from .validate import did_you_mean, listing

__all__ = [
    "IMAGE_OPERATORS",
    "IMAGE_PRIMITIVES",
    "PRIMITIVE_OF",
    "TEXT_OPERATORS",
    "TEXT_LEVELS",
    "SEVERITIES",
    "JOINT_PAIRS",
    "JOINT_PAIR_LABELS",
    "KINDS",
    "KIND_SIDES",
    "Condition",
    "ConditionPlan",
    "ConditionSpace",
    "build_conditions",
    "condition_sort_key",
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
#: Built-in image operator -> its primitive (:data:`IMAGE_PRIMITIVES` read the other way).
PRIMITIVE_OF: dict[str, str] = {op: prim for prim, ops in IMAGE_PRIMITIVES.items() for op in ops}

TEXT_LEVELS: dict[str, tuple[str, ...]] = {
    "char": ("char_add", "char_delete", "char_change", "char_swap"),
    "word": ("word_repeat", "word_swap"),
    "sentence": ("sent_add", "sent_replace"),
}
TEXT_OPERATORS: tuple[str, ...] = tuple(op for ops in TEXT_LEVELS.values() for op in ops)

SEVERITIES: tuple[int, ...] = (1, 2, 3)

#: The paper's six joint pairs (image operator, text operator), each at the three image severities,
#: in its order -> the abbreviation its tables and figures name the pair by.
JOINT_PAIR_LABELS: dict[tuple[str, str], str] = {
    ("compression", "char_add"): "C+C",
    ("downscale", "char_delete"): "D+D",
    ("low_light", "word_swap"): "L+W",
    ("mosaic", "sent_add"): "M+S",
    ("overexposure", "word_repeat"): "E+W",
    ("rotation", "sent_replace"): "R+S",
}
JOINT_PAIRS: tuple[tuple[str, str], ...] = tuple(JOINT_PAIR_LABELS)

# positions in the paper's order (condition_sort_key)
_IMAGE_POS = {op: i for i, op in enumerate(IMAGE_OPERATORS)}
_TEXT_POS = {op: i for i, op in enumerate(TEXT_OPERATORS)}
_PAIR_POS = {pair: i for i, pair in enumerate(JOINT_PAIRS)}

Kind = Literal["clean", "image", "text", "joint"]
_NAME = r"[A-Za-z0-9_.\-]+"
_NAME_RE = re.compile(rf"^{_NAME}$")
_IMG_RE = re.compile(rf"^img/({_NAME})/s(\d+)$")
_TXT_RE = re.compile(rf"^txt/({_NAME})$")
_JOINT_RE = re.compile(rf"^joint/({_NAME})\+({_NAME})/s(\d+)$")
_FORMS = "clean, img/<op>/s<N>, txt/<op>, joint/<image op>+<text op>/s<N>"
# which fields each kind has: (image_operator, text_operator, severity)
_SHAPE: dict[str, tuple[bool, bool, bool]] = {
    "clean": (False, False, False),
    "image": (True, False, True),
    "text": (False, True, False),
    "joint": (True, True, True),
}
#: The kinds of condition, clean first.
KINDS: tuple[str, ...] = tuple(_SHAPE)
#: Kind -> the sides of the query (``image``, ``text``) its conditions corrupt: a run evaluates a
#: condition only when its modes read every one of them (clean needs none).
KIND_SIDES: dict[str, frozenset[str]] = {
    kind: frozenset(side for side, has in zip(("image", "text"), shape) if has) for kind, shape in _SHAPE.items()
}


@dataclass(frozen=True)
class Condition:
    """One evaluation state: which operator(s) corrupt the query, and at which image severity.

    Build one with :meth:`clean`, :meth:`image`, :meth:`text`, :meth:`joint` or
    :func:`parse_condition`; :attr:`id` is the one place ids are spelled.
    """

    kind: Kind
    image_operator: str | None = None
    text_operator: str | None = None
    severity: int | None = None

    def __post_init__(self) -> None:
        # a malformed Condition would spell an id no parser reads back ("img/None/sNone"); operator
        # names can come from data (a dataset's released variants), so this is a user-facing error
        shape = _SHAPE.get(self.kind)
        if shape is None:
            raise ConfigError(f"Condition kind must be one of {', '.join(_SHAPE)}, got {self.kind!r}")
        for has, name, value in zip(shape, ("image_operator", "text_operator", "severity"),
                                    (self.image_operator, self.text_operator, self.severity)):
            if not has and value is not None:
                raise ConfigError(f"a {self.kind} condition has no {name} (got {value!r})")
            if has and name != "severity" and not (isinstance(value, str) and _NAME_RE.match(value)):
                raise ConfigError(f"{name} of a {self.kind} condition must match {_NAME}, got {value!r}")
            if has and name == "severity" and (isinstance(value, bool) or not isinstance(value, Integral) or value < 0):
                raise ConfigError(f"severity of a {self.kind} condition must be an integer >= 0, got {value!r}")

    @classmethod
    def clean(cls) -> "Condition":
        return cls("clean")

    @classmethod
    def image(cls, operator: str, severity: int) -> "Condition":
        """``img/<operator>/s<severity>``."""
        return cls("image", image_operator=operator, severity=int(severity))

    @classmethod
    def text(cls, operator: str) -> "Condition":
        """``txt/<operator>``."""
        return cls("text", text_operator=operator)

    @classmethod
    def joint(cls, image_operator: str, text_operator: str, severity: int) -> "Condition":
        """``joint/<image_operator>+<text_operator>/s<severity>``."""
        return cls("joint", image_operator=image_operator, text_operator=text_operator, severity=int(severity))

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
    def sides(self) -> frozenset[str]:
        """The sides of the query this condition corrupts (:data:`KIND_SIDES` of its kind)."""
        return KIND_SIDES[self.kind]

    @property
    def filename(self) -> str:
        """The id with "/" replaced by "__" (no extension)."""
        return condition_to_filename(self.id)

    @property
    def image_part(self) -> "Condition | None":
        """The image-only condition inside this one (for joint: its image half)."""
        if "image" in self.sides:
            return Condition("image", image_operator=self.image_operator, severity=self.severity)
        return None

    @property
    def text_part(self) -> "Condition | None":
        if "text" in self.sides:
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


def parse_condition(condition_id: str, *, param: str | None = None) -> Condition:
    """Parse a condition id (or its file-name form) into a :class:`Condition`.

    Raises :class:`~snapbench.core.errors.ConfigError` (a ``ValueError``) naming the id when it is not of
    one of the four documented shapes; ``param`` is the parameter the id came from, if any.
    Operator names are not checked against a registry here (users may register their own).
    """
    cid = filename_to_condition(str(condition_id).strip())
    if cid == "clean":
        return Condition("clean")
    if m := _IMG_RE.match(cid):
        return Condition("image", image_operator=m[1], severity=int(m[2]))
    if m := _TXT_RE.match(cid):
        return Condition("text", text_operator=m[1])
    if m := _JOINT_RE.match(cid):
        return Condition("joint", image_operator=m[1], text_operator=m[2], severity=int(m[3]))
    raise ConfigError(f"not a condition id: {condition_id!r} (expected one of {_FORMS})", param=param)


def condition_sort_key(condition: str | Condition) -> tuple:
    """Sort key of the one condition order: a list of the built-in conditions sorted with it is in
    the order of :func:`list_conditions` (``joint=True``), the order of a default run.

    clean, then image conditions (operator in the paper's order, then severity), text conditions
    (paper's order), joint conditions (pair in :data:`JOINT_PAIRS` order, then severity).  What
    that list lacks follows the built-ins of its kind: an operator or a joint pair that is not
    built in (a user-registered one) by operator (paper's order, then name), a severity outside
    :data:`SEVERITIES` next to the other severities of its operator.
    """
    c = condition if isinstance(condition, Condition) else parse_condition(condition)
    img, txt = c.image_operator or "", c.text_operator or ""
    return (
        KINDS.index(c.kind),
        _PAIR_POS.get((img, txt), len(JOINT_PAIRS)),
        _IMAGE_POS.get(img, len(IMAGE_OPERATORS)),
        img,
        _TEXT_POS.get(txt, len(TEXT_OPERATORS)),
        txt,
        c.severity or 0,
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

    out = [Condition.clean()]
    out += [Condition.image(op, s) for op in image_operators for s in sevs(op)]
    out += [Condition.text(op) for op in text_operators]
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
        out += [Condition.joint(img_op, txt_op, s) for s in sevs]
    return out


# ------------------------------------------------------------------------------------------------
# the one builder of a run's condition list
# ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionSpace:
    """Which conditions can exist: image operators with their severities and text operators, in
    listing order, and the joint pairs a run with ``joint`` adds.

    The registered operators and a severity grid make one
    (:func:`snapbench.corruptions.plan.generated_space`); a dataset's released variants make
    another (:meth:`from_parts`).  ``source`` says which, in error messages ("" for the registered
    operators).  ``image_aliases`` / ``text_aliases`` map other names of an operator to its name;
    ``unavailable`` maps operators that exist but cannot be used (a plugin that failed to load) to why.
    """

    image_severities: Mapping[str, Sequence[int]]
    text_operators: Sequence[str]
    joint_pairs: Sequence[tuple[str, str]] = JOINT_PAIRS
    source: str = ""
    image_aliases: Mapping[str, str] = field(default_factory=dict)
    text_aliases: Mapping[str, str] = field(default_factory=dict)
    unavailable: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_parts(cls, image_parts: Iterable[tuple[str, int]], text_operators: Iterable[str], *,
                   source: str = "") -> "ConditionSpace":
        """The space of a fixed set of variants: ``(image operator, severity)`` parts and text
        operators (e.g. what a dataset ships), in the one condition order
        (:func:`condition_sort_key`: built-in operators in the paper's order, others by name)."""
        parts = sorted({Condition.image(str(o), int(s)) for o, s in image_parts}, key=condition_sort_key)
        sevs: dict[str, list[int]] = {}
        for part in parts:
            sevs.setdefault(str(part.image_operator), []).append(int(part.severity or 0))
        texts = sorted({Condition.text(str(op)) for op in text_operators}, key=condition_sort_key)
        return cls(sevs, [str(t.text_operator) for t in texts], source=source)

    def defaults(self, joint: bool) -> list[Condition]:
        """clean, every image part, every text operator (and, with ``joint``, the joint pairs both of
        whose operators exist, at every severity of the image operator)."""
        pairs = [(i, t) for i, t in self.joint_pairs if i in self.image_severities and t in self.text_operators]
        return list_conditions(joint=joint, image_operators=list(self.image_severities),
                               text_operators=list(self.text_operators),
                               severities={op: list(s) for op, s in self.image_severities.items()}, joint_pairs=pairs)

    def canonical(self, cond: Condition) -> Condition:
        """``cond`` with operator aliases replaced by the operators' names."""
        img = self.image_aliases.get(cond.image_operator, cond.image_operator) if cond.image_operator else None
        txt = self.text_aliases.get(cond.text_operator, cond.text_operator) if cond.text_operator else None
        if (img, txt) == (cond.image_operator, cond.text_operator):
            return cond
        return Condition(cond.kind, image_operator=img, text_operator=txt, severity=cond.severity)

    def problem(self, cond: Condition) -> str | None:
        """Why ``cond`` is not in this space (``None`` when it is)."""
        where = f" in {self.source}" if self.source else ""
        for op in (cond.image_operator, cond.text_operator):
            if op in self.unavailable:
                return f"operator {op!r} is not available: {self.unavailable[op]}"
        if cond.image_operator is not None:
            levels = self.image_severities.get(cond.image_operator)
            if levels is None:
                return f"unknown image operator {cond.image_operator!r}{where}"
            if cond.severity not in levels:
                return f"image operator {cond.image_operator!r} has no severity s{cond.severity}{where} (levels: {listing(levels)})"
        if cond.text_operator is not None and cond.text_operator not in self.text_operators:
            return f"unknown text operator {cond.text_operator!r}{where}"
        return None

    def valid_ids(self) -> list[str]:
        """Every valid condition id: the defaults, then each joint pair (what a misspelt id is matched to)."""
        valid = [c.id for c in self.defaults(False)]
        valid += [Condition.joint(i, t, s).id for i, levels in self.image_severities.items()
                  for t in self.text_operators for s in levels]
        return valid


@dataclass(frozen=True)
class ConditionPlan:
    """The conditions of a run in run order (``clean`` first), the joint parts added to them, and
    (when the plan was made for generated variants) the resolved severity grid."""

    conditions: list[Condition]
    added_parts: list[Condition]
    grid: Mapping[str, Mapping[int, Mapping[str, Any]]] | None = None


def _requested(items: Iterable[str | Condition], space: ConditionSpace, param: str | None) -> list[Condition]:
    """clean + each requested condition once, in request order, validated against ``space``."""
    out: list[Condition] = [Condition.clean()]
    for item in items:
        raw = item.id if isinstance(item, Condition) else str(item).strip()
        if not raw:
            continue
        try:
            cond = space.canonical(item if isinstance(item, Condition) else parse_condition(raw))
            why = space.problem(cond)
        except ConfigError:
            cond, why = None, "not a condition id"
        if why is not None:
            hint = did_you_mean(raw, space.valid_ids())
            raise ConfigError(
                f"unknown condition {raw!r} ({why}){hint}\nvalid forms: {_FORMS}\n"
                f"image operators: {', '.join(space.image_severities) or '(none)'}\n"
                f"text operators: {', '.join(space.text_operators) or '(none)'}\n"
                "(snapbench conditions lists every id)", param=param)
        if cond not in out:
            out.append(cond)
    return out


def build_conditions(
    requested: Iterable[str | Condition] | None,
    *,
    joint: bool = False,
    space: ConditionSpace,
    param: str | None = "conditions",
) -> ConditionPlan:
    """The ordered conditions of a run: the one place requested ids become a condition list.

    ``requested=None``: :meth:`ConditionSpace.defaults` (clean + every image part + every text
    operator; ``joint`` adds the space's joint pairs).  Otherwise clean + the requested ids in
    order (duplicates dropped, aliases resolved), then with ``joint`` the joint pairs not listed;
    each joint condition's image and text parts go right before it unless planned earlier
    (additivity needs them), and the parts that were not requested are listed in
    :attr:`ConditionPlan.added_parts`.  An id outside ``space`` is a
    :class:`~snapbench.core.errors.ConfigError` about ``param`` with the closest valid ids.
    """
    if requested is None:
        return ConditionPlan(space.defaults(joint), [])
    wanted = _requested(requested, space, param)
    if joint:
        wanted += [c for c in space.defaults(True) if c.kind == "joint" and c not in wanted]
    out: list[Condition] = []
    added: list[Condition] = []
    listed = set(wanted)
    for cond in wanted:
        if cond in out:
            continue
        if cond.kind == "joint":
            for part in (cond.image_part, cond.text_part):
                if part not in out:
                    out.append(part)
                    if part not in listed:
                        added.append(part)
        out.append(cond)
    return ConditionPlan(out, added)
