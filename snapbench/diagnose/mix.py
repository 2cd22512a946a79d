"""From diagnose flags to benchmark conditions: the one table, and the traffic mix it gives.

:data:`FLAG_CONDITIONS` says which conditions of a ``snapbench run`` each diagnose flag stands for
(docs/diagnose.md quotes it).  :func:`build_mix` turns the flags of the diagnosed queries into
condition weights -- each query is one unit of traffic spread over conditions, so the weights over
conditions (clean included) sum to 1:

* a query with no flag is ``clean``;
* a side with several flags splits its query evenly over the flags, after dropping a flag that
  another flag on the side explains (``explained_by``); a flag splits its share evenly over its
  operators, an operator evenly over its severities;
* a query flagged on both sides splits evenly over the (image flag, text flag) pairs; a pair goes to
  the run's joint conditions that combine one of the image flag's conditions with one of the text
  flag's conditions (weighted as the two flags weight those conditions); when the run has none, to
  every (image condition, text condition) pair of the two flags, each *estimated additively* as
  ``max(0, min(1, R(img) + R(txt) − R(clean)))`` -- the paper's expected joint value without
  interaction, optimistic where the run finds super-additivity (the mix names the pairs to
  estimate, :attr:`Mix.estimated`; ``snapbench traffic`` computes the values);
* fallbacks when the run lacks a flag's conditions: other severities of the same operators the run
  has, else ``clean`` (the benchmark does not measure that issue); each fallback is a note.

Severities: a flag stands for the severities of its operators at which the detector flags at least
half of the operator's variants on the validation photos (docs/diagnose.md "Validation"): the
detectors were tuned for precision and see the heavy end.  An image flag's conditions are declared
where the image operator is registered (its :class:`~snapbench.corruptions.image.DiagnoseFlag`) and
read from there; the text flags are written here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.conditions import Condition, parse_condition
from ..core.errors import ConfigError
from ..core.validate import unknown_name
from ..corruptions.image import builtin_image_operators
from .thresholds import DETECTORS

__all__ = ["FLAG_CONDITIONS", "FlagConditions", "Mix", "Signature", "build_mix", "signature_kind"]

_CHAR_OPS = ("txt/char_add", "txt/char_delete", "txt/char_change", "txt/char_swap")


@dataclass(frozen=True)
class FlagConditions:
    """The conditions one flag stands for (image conditions for an image detector, text conditions
    for a question detector) and the flags on the same side that explain it away."""

    conditions: tuple[str, ...]
    explained_by: tuple[str, ...] = ()
    why: str = ""


#: The text detectors' flags -> the run conditions each stands for (the image detectors' come from
#: the image operators' registrations, :func:`_image_flags`).
_TEXT_FLAGS: dict[str, FlagConditions] = {
    "oov": FlagConditions(_CHAR_OPS, why="recall 0.72-0.97 on the four character operators"),
    "few_content_tokens": FlagConditions(("txt/sent_replace",), why="recall 1.00 on sent_replace only"),
    "no_entity": FlagConditions(
        ("txt/sent_replace",), explained_by=("oov",),
        why="fires on sent_replace and on character typos of the entity; with oov flagged, the typo explains it"),
}


def _image_flags() -> dict[str, FlagConditions]:
    """Each image detector's flag -> the conditions of the built-in operators that declare it (their
    :class:`~snapbench.corruptions.image.DiagnoseFlag`), operators in the paper's order; ``why``
    joins the operators' recalls (prefixed by the operator when the flag has several)."""
    by_flag: dict[str, list] = {}
    for op in builtin_image_operators().values():
        if op.diagnose is not None:
            by_flag.setdefault(op.diagnose.flag, []).append(op)
    out = {}
    for flag, ops in by_flag.items():
        conditions = tuple(Condition.image(op.name, s).id for op in ops for s in op.diagnose.severities)
        why = "; ".join(op.diagnose.why if len(ops) == 1 else f"{op.name}: {op.diagnose.why}" for op in ops)
        out[flag] = FlagConditions(conditions, why=why)
    return out


#: detector -> the run conditions its flag stands for, in the detectors' order.  Severities: those at
#: which the detector's recall on the validation photos is >= 0.5 (docs/diagnose.md,
#: bench/RESULTS_diagnose_validation.md).
FLAG_CONDITIONS: dict[str, FlagConditions] = {**_image_flags(), **_TEXT_FLAGS}
FLAG_CONDITIONS = {flag: FLAG_CONDITIONS[flag] for flag in DETECTORS if flag in FLAG_CONDITIONS}

#: (image flags, text flags) of one query.
Signature = tuple[frozenset[str], frozenset[str]]


def signature_kind(sig: Signature) -> str:
    """``clean``, ``image_only``, ``text_only`` or ``both`` (the diagnose summary's four-way split)."""
    i, t = bool(sig[0]), bool(sig[1])
    return "both" if i and t else "image_only" if i else "text_only" if t else "clean"


def _check_mapping(mapping: Mapping[str, FlagConditions]) -> dict[str, FlagConditions]:
    """``mapping`` checked: known detectors, condition ids of the detector's side, known ``explained_by``."""
    out: dict[str, FlagConditions] = {}
    for flag, entry in mapping.items():
        if flag not in DETECTORS:
            raise ConfigError(unknown_name("detector", flag, DETECTORS, where=" in the flag -> conditions table"),
                              param="mapping")
        if not isinstance(entry, FlagConditions):
            entry = FlagConditions(tuple(entry))
        want = "image" if DETECTORS[flag].side == "image" else "text"
        for cid in entry.conditions:
            try:
                kind = parse_condition(cid).kind
            except ValueError as exc:
                raise ConfigError(f"{flag}: {exc}", param="mapping") from None
            if kind != want:
                raise ConfigError(f"{flag} is a {DETECTORS[flag].side} detector; {cid!r} is not an {want} "
                                  "condition", param="mapping")
        for other in entry.explained_by:
            if other not in DETECTORS or DETECTORS[other].side != DETECTORS[flag].side:
                raise ConfigError(f"{flag}: explained_by {other!r} is not a {DETECTORS[flag].side} detector",
                                  param="mapping")
        out[flag] = entry
    return out


def _operator(c: Condition) -> str:
    return str(c.image_operator if c.kind == "image" else c.text_operator)


def _split_evenly(conditions: Sequence[str]) -> dict[str, float]:
    """Weights over ``conditions``: 1/operators per operator, shared evenly by its severities."""
    by_op: dict[str, list[str]] = {}
    for cid in dict.fromkeys(conditions):
        by_op.setdefault(_operator(parse_condition(cid)), []).append(cid)
    return {cid: 1.0 / len(by_op) / len(cids) for cids in by_op.values() for cid in cids}


@dataclass
class Mix:
    """Condition weights per signature: ``rows[s]`` over :attr:`conditions` sums to 1.

    ``estimated`` maps a joint id the run lacks to the (image, text) conditions it is estimated from.
    """

    conditions: list[str]
    rows: np.ndarray
    estimated: dict[str, tuple[str, str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def weights(self, counts: np.ndarray) -> np.ndarray:
        """Weights over :attr:`conditions` for ``counts`` queries per signature (sums to 1)."""
        c = np.asarray(counts, dtype=np.float64)
        return c @ self.rows / c.sum(axis=-1, keepdims=True)


class _Builder:
    """Resolves flags against the run's conditions, remembering fallbacks and estimates once."""

    def __init__(self, mapping: Mapping[str, FlagConditions], present: Sequence[str]) -> None:
        self.mapping, self.present = mapping, list(present)
        self.present_set = set(present)
        self.estimated: dict[str, tuple[str, str]] = {}
        self.estimated_pairs: dict[str, None] = {}  # "image flag + text flag" pairs estimated, in order
        self.notes: dict[str, str] = {}
        self._cache: dict[str, dict[str, float]] = {}

    def active(self, flags: Iterable[str]) -> list[str]:
        fs = set(flags)
        return sorted(f for f in fs if f in self.mapping and not set(self.mapping[f].explained_by) & fs)

    def flag(self, f: str) -> dict[str, float]:
        """A flag's weights over the run's conditions (with the documented fallbacks)."""
        if f not in self._cache:
            want = self.mapping[f].conditions
            have = [c for c in want if c in self.present_set]
            if not have and want:
                ops = {_operator(parse_condition(c)) for c in want}
                kind = parse_condition(want[0]).kind
                have = [c for c in self.present if (p := parse_condition(c)).kind == kind and _operator(p) in ops]
                self.notes[f] = (f"{f}: the run has none of {', '.join(want)}; "
                                 + (f"using {', '.join(have)} instead" if have else
                                    "its queries count as clean (the run does not measure this issue)"))
            elif len(have) < len(want):
                self.notes[f] = (f"{f}: the run lacks {', '.join(c for c in want if c not in self.present_set)}; "
                                 f"using {', '.join(have)}")
            self._cache[f] = _split_evenly(have) if have else {"clean": 1.0}
        return self._cache[f]

    def side(self, flags: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        for f in flags:
            for c, w in self.flag(f).items():
                out[c] = out.get(c, 0.0) + w / len(flags)
        return out

    def measured_joints(self, fi: str, ft: str) -> dict[str, float]:
        wi = _split_evenly(self.mapping[fi].conditions) if self.mapping[fi].conditions else {}
        wt = _split_evenly(self.mapping[ft].conditions) if self.mapping[ft].conditions else {}
        out = {}
        for c in self.present:
            p = parse_condition(c)
            if p.kind == "joint":
                w = wi.get(p.image_part.id, 0.0) * wt.get(p.text_part.id, 0.0)
                if w > 0:
                    out[c] = w
        total = sum(out.values())
        return {c: w / total for c, w in out.items()}

    def combine(self, ci: str, ct: str) -> str:
        """The condition of an (image, text) pair: one side clean -> the other; else the run's joint
        condition, or an estimated one."""
        if ci == "clean" or ct == "clean":
            return ct if ci == "clean" else ci
        pi, pt = parse_condition(ci), parse_condition(ct)
        jid = Condition("joint", image_operator=pi.image_operator, text_operator=pt.text_operator,
                        severity=pi.severity).id
        if jid not in self.present_set:
            self.estimated[jid] = (ci, ct)
        return jid

    def both(self, fis: list[str], fts: list[str]) -> dict[str, float]:
        out: dict[str, float] = {}
        share = 1.0 / (len(fis) * len(fts))
        for fi in fis:
            for ft in fts:
                pair = self.measured_joints(fi, ft)
                if not pair:
                    for ci, wi in self.flag(fi).items():
                        for ct, wt in self.flag(ft).items():
                            c = self.combine(ci, ct)
                            pair[c] = pair.get(c, 0.0) + wi * wt
                    if any(c in self.estimated for c in pair):
                        self.estimated_pairs.setdefault(f"{fi} + {ft}", None)
                for c, w in pair.items():
                    out[c] = out.get(c, 0.0) + share * w
        return out

    def signature(self, sig: Signature) -> dict[str, float]:
        fi, ft = self.active(sig[0]), self.active(sig[1])
        if fi and ft:
            return self.both(fi, ft)
        if fi or ft:
            return self.side(fi or ft)
        return {"clean": 1.0}


def build_mix(signatures: Sequence[Signature], run_conditions: Sequence[str],
              mapping: Mapping[str, FlagConditions] = FLAG_CONDITIONS) -> Mix:
    """Condition weights of each signature against a run with ``run_conditions`` (clean first).

    Columns: ``clean``, then the run's conditions the mix uses in the run's order, then estimated
    joint conditions.  Flags absent from ``mapping`` are ignored (the caller reports them)."""
    if "clean" not in run_conditions:
        raise ConfigError("the run has no 'clean' condition (a traffic mix weighs conditions against clean)")
    b = _Builder(_check_mapping(mapping), run_conditions)
    per_sig = [b.signature(s) for s in signatures]
    used = {c for d in per_sig for c, w in d.items() if w > 0}
    cols = ["clean"] + [c for c in run_conditions if c in used and c != "clean"]
    cols += sorted(c for c in used if c not in set(cols))
    index = {c: i for i, c in enumerate(cols)}
    rows = np.zeros((len(per_sig), len(cols)))
    for s, d in enumerate(per_sig):
        for c, w in d.items():
            rows[s, index[c]] += w
    estimated = {c: b.estimated[c] for c in cols if c in b.estimated}
    notes = list(b.notes.values())
    if estimated:
        notes.append(f"the run has no joint condition for {', '.join(sorted(b.estimated_pairs))}: their "
                     f"{len(estimated)} joint condition(s) are estimated additively as R(image) + R(text) − R(clean), "
                     "clipped to [0, 1] (optimistic where the run finds super-additivity)")
    return Mix(cols, rows, estimated, notes)
