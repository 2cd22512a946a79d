"""Checks of user-given values, each written once: positive integers, comma lists, choices, finite arrays.

Every check raises :class:`~snapbench.core.errors.ConfigError` (options) or
:class:`~snapbench.core.errors.InputError` (file contents) naming the parameter, so the command line
shows the flag (see :mod:`snapbench.cli`).

The words of those messages are written once here too: :func:`unknown_name` (every refusal of a
name outside a known set: ``unknown image format 'pngg' (did you mean 'png'?); known: png, qoi,
...``; :func:`choice` and :class:`snapbench.core.registry.Table` raise it), :func:`did_you_mean` (the
close known names of a misspelt one), :func:`examples` (the first few of a list of ids) and
:func:`listing` (a list of values, e.g. levels ``1, 2, 3``: never Python's ``[1, 2, 3]``).
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import Any

import numpy as np

from .errors import ConfigError, InputError

__all__ = ["positive_int", "finite_number", "answer_threshold", "ci_level", "comma_list", "int_list", "choice", "check_finite", "did_you_mean",
           "suggestion", "examples", "listing", "hint_and_known", "unknown_name",
           "LIST_MAX"]

#: A known name is suggested for a misspelt one when difflib's similarity ratio reaches this...
_SUGGEST_CUTOFF = 0.6
#: ... and at most this many (the closest first).
_SUGGEST_MAX = 3
#: A known list of unbounded length (the conditions a folder holds) is cut after this many names.
LIST_MAX = 10


def positive_int(value: Any, param: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """``value`` as an int >= ``minimum`` (and <= ``maximum`` when given; bools and non-integers refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or int(value) < minimum:
        bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise ConfigError(f"must be an integer {bound}, got {value!r}", param=param)
    if maximum is not None and int(value) > maximum:
        raise ConfigError(f"must be an integer from {minimum} to {maximum}, got {value!r}", param=param)
    return int(value)


def finite_number(value: Any, param: str) -> float:
    """``value`` as a finite float."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"must be a number, got {value!r}", param=param) from None
    if not math.isfinite(x):
        raise ConfigError(f"must be finite, got {value!r}", param=param)
    return x


def answer_threshold(value: Any, param: str = "set_threshold", *, minus_inf: bool = False) -> float | None:
    """``--set-threshold`` (the score that admits an item into a query's answer set), the one check of
    every command taking it: ``None`` stays ``None``; otherwise a finite number (``nan`` admits nothing
    and ``inf`` rejects every query, and JSON would record either as null, as if no threshold were
    given).  ``minus_inf``: ``-inf`` is allowed too (``evaluate`` with TREC runs: each run's list is the
    answer)."""
    if value is None:
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"must be a number, got {value!r}", param=param) from None
    if not math.isfinite(x) and not (minus_inf and x == -math.inf):
        raise ConfigError(f"must be a finite number{' (or -inf)' if minus_inf else ''}, got {x!r}", param=param)
    return x


def ci_level(value: Any, param: str = "ci") -> float:
    """``value`` as the level of a confidence interval: a number in (0, 1), e.g. 0.95."""
    x = finite_number(value, param)
    if not 0 < x < 1:
        raise ConfigError(f"must be in (0, 1), e.g. 0.95; got {x!r}", param=param)
    return x


def comma_list(value: str | Sequence[str] | None, param: str) -> list[str] | None:
    """A comma-separated option (or an already split list) as a list of stripped, non-empty,
    de-duplicated items in order; ``None`` stays ``None``; a list with no item is an error."""
    if value is None:
        return None
    parts = value.split(",") if isinstance(value, str) else [str(v) for v in value]
    items = list(dict.fromkeys(p.strip() for p in parts if p.strip()))
    if not items:
        raise ConfigError(f"needs at least one item, got {value!r}", param=param)
    return items


def int_list(value: str | Sequence[int] | None, param: str, *, minimum: int = 1) -> tuple[int, ...] | None:
    """A comma list of integers >= ``minimum`` (e.g. the cut-offs k)."""
    items = comma_list(value if isinstance(value, str) or value is None else [str(v) for v in value], param)
    if items is None:
        return None
    try:
        out = tuple(int(x) for x in items)
    except ValueError:
        raise ConfigError(f"must be comma-separated integers, got {value!r}", param=param) from None
    bad = [x for x in out if x < minimum]
    if bad:  # worded as positive_int words one integer: the offending value, as typed
        where = "" if len(out) == 1 else f" (in {','.join(map(str, out))})"
        each = "must be" if len(out) == 1 else "each value must be"
        raise ConfigError(f"{each} an integer >= {minimum}, got {listing(bad)}{where}", param=param)
    return out


def choice(value: Any, choices: Collection[str], param: str, *, what: str = "value") -> str:
    """``value`` if it is one of ``choices``; otherwise a :class:`ConfigError` about ``param`` in the
    words of :func:`unknown_name` (``what`` names the kind of value: "image format", "correction")."""
    if value not in choices:
        raise ConfigError(unknown_name(what, value, choices), param=param)
    return str(value)


def check_finite(array: np.ndarray, *, what: str, path: str | os.PathLike | None = None,
                 row_names: Sequence[str] | None = None, row_offset: int = 0) -> None:
    """:class:`InputError` naming the first non-finite entry (row, and its id when given) of ``array``."""
    a = np.asarray(array)
    if a.dtype.kind not in "fc":
        return
    bad = ~np.isfinite(a)
    if not bad.any():
        return
    where = np.argwhere(bad)[0]
    row = int(where[0]) if a.ndim else 0
    name = f" (query {row_names[row]!r})" if row_names is not None and a.ndim else ""
    col = f", column {int(where[1])}" if a.ndim > 1 else ""
    raise InputError(
        f"{what}: non-finite value {a[tuple(where)]} at row {row + row_offset}{name}{col}; "
        f"{int(bad.sum())} such value(s)", path=path)


def suggestion(names: Sequence[str]) -> str:
    """The one wording of a suggestion: ``" (did you mean 'a', 'b' or 'c'?)"``; ``""`` for no name.

    For a caller that picks the names by a rule of its own (a case variant, a display form);
    :func:`did_you_mean` picks them by closeness.
    """
    quoted = [repr(str(n)) for n in names]
    if not quoted:
        return ""
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f" (did you mean {listed}?)"


def did_you_mean(name: str, choices: Iterable[str], *, key: Callable[[str], str] = str) -> str:
    """:func:`suggestion` of the ``choices`` closest to ``name`` (difflib ratio >= :data:`_SUGGEST_CUTOFF`,
    at most :data:`_SUGGEST_MAX`, closest first; equally close ones in the order of ``choices``, so
    'hit@l' suggests hit@1 before hit@5), or ``""`` when none is close.  ``key``: what of a name is
    compared (flags: the name without its dashes, which every flag shares and so make any two look close)."""
    matcher = difflib.SequenceMatcher()
    matcher.set_seq2(key(str(name)))  # as difflib.get_close_matches, whose ties go the reverse alphabetical way
    scored = []
    for i, c in enumerate(dict.fromkeys(str(c) for c in choices)):
        matcher.set_seq1(key(c))
        if matcher.ratio() >= _SUGGEST_CUTOFF:
            scored.append((-matcher.ratio(), i, c))
    return suggestion([c for _, _, c in sorted(scored)[:_SUGGEST_MAX]])


def examples(items: Iterable[Any], n: int = 5) -> str:
    """The first ``n`` of ``items`` as reprs, then ``" (and K more)"``: ids named in a message."""
    return listing(items, n, quote=True)


def listing(items: Iterable[Any], n: int | None = None, *, quote: bool = False) -> str:
    """``items`` as ``"a, b, c"`` (reprs with ``quote``), the first ``n`` then ``" (and K more)"`` when
    ``n`` is given: how a message lists values (severity levels, known names), never as ``[a, b]``."""
    items = list(items)
    shown = items if n is None else items[:n]
    more = f" (and {len(items) - len(shown)} more)" if len(shown) < len(items) else ""
    return ", ".join(repr(x) if quote else str(x) for x in shown) + more


def hint_and_known(name: Any, known: Iterable[Any], *, among: Iterable[Any] | None = None, n: int | None = None) -> str:
    """The tail of every refusal of ``name``: ``" (did you mean 'a'?); known: a, b, c"`` -- the close
    names (:func:`did_you_mean` over ``among``, default ``known``), then the valid ones (the first
    ``n``, when given, for long lists such as a folder's conditions; ``none`` for an empty list).

    For a message whose head is not "unknown <what> '<name>'" (``'hit@20' is not among the
    evaluated metrics``); otherwise use :func:`unknown_name`.
    """
    known = [str(k) for k in known]
    hint = did_you_mean(str(name), known if among is None else [str(a) for a in among])
    return f"{hint}; known: {listing(known, n) or 'none'}"


def unknown_name(what: str, name: Any, known: Iterable[Any], *, among: Iterable[Any] | None = None,
                 n: int | None = None, where: str = "") -> str:
    """The wording of a name outside a known set, for errors and notes alike:
    ``"unknown <what> '<name>'<where> (did you mean 'a', 'b' or 'c'?); known: a, b, c"``
    (see :func:`hint_and_known` for ``among`` and ``n``; ``where`` says where it was looked for,
    e.g. ``" in cj"``)."""
    return f"unknown {what} {name!r}{where}{hint_and_known(name, known, among=among, n=n)}"
