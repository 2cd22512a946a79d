"""The eight text operators (SPEC §4), the entity finder and the text-operator registry.

Every operator edits the *entity* of the question (given per query, located by :func:`find_entity`)
or, at sentence level, the question around it:

========  ============  ======================================================================
level     operator      edit (example on "What kind of fish is this?", entity "fish")
========  ============  ======================================================================
char      char_add      insert one random letter strictly inside an entity word: "fiish"
char      char_delete   delete one letter of an entity word that has >= 2 letters: "fsh"
char      char_change   replace one letter by a QWERTY neighbour, keeping case: "gish"
char      char_swap     transpose one adjacent pair of different letters: "ifsh"
word      word_repeat   repeat the entity span once: "fish fish"
word      word_swap     swap the entity span with its left or right neighbour word (seeded)
sentence  sent_add      add an unrelated everyday sentence before or after (seeded)
sentence  sent_replace  replace the question by a generic one with the same question word
========  ============  ======================================================================

Decisions (documented here because they change outputs):

* **Entity matching** (:func:`find_entity`): case-insensitive, on whole words, in three stages --
  exact phrase, then plural/stem forms (fish/fishes, berry/berries, knife/knives, leaf/leaves,
  irregulars such as mouse/mice; both directions), then, for a multi-word entity, its last word
  (exact, then plural).  The leftmost match of the first stage that matches wins.  Hyphens and
  possessive ``'s`` are word boundaries ("shirt" is found in "t-shirt", "fish" in "fish's"); other
  apostrophes join words ("don" is not in "don't").  In scripts written without spaces (CJK, kana,
  Thai) a match needs no word boundary.  Whitespace inside the entity matches any whitespace run.
  Positions are code-point offsets into the text exactly as given (no Unicode normalisation).
* **No entity** (``entity=None`` or blank): the entity is the last word of the text that is not a
  stopword (question words, auxiliaries, pronouns, determiners, prepositions, "kind/type/name",
  "taken/made/..."; see :data:`~snapbench.corruptions.text_data.STOPWORDS`) and contains a letter.
  An entity that is given but not found raises :class:`EntityNotFoundError`; so does a text with
  no candidate word when none is given.  All operators resolve the entity, including the sentence
  ones, so a query with a bad entity is skipped consistently across the eight text conditions.
* **Char operators** act on the letter runs inside the entity span (a multi-word entity offers all
  of its words); the position is drawn uniformly over all admissible positions.  ``char_add``
  inserts between two letters of a run (positions 1..len-1, so first and last letters stay); only
  when no run has two letters (a one-letter entity such as "X" or "鱼") may it insert before or
  after the letter.  The inserted letter is a-z, upper-case when the letters on both sides of the
  insertion point are upper-case.  ``char_change`` edits only letters whose base letter (accents
  stripped, NFD) is a-z; a precomposed "é" becomes a neighbour of "e" (the accent goes with the
  key), while a separate combining mark stays in place (one code point is substituted either way).
  ``char_swap`` transposes the two characters literally ("Fish" -> "iFsh") so the edit is exactly
  one Damerau transposition; "different" is judged case-insensitively.
* **word_swap**: words are runs of letters/digits joined by internal apostrophes; a character of a
  no-space script is one word.  Only the two words move; everything between and around them
  (spaces, punctuation) stays in place.  Side is drawn 50/50 when both neighbours exist and both
  swaps change the text.
* **word_repeat** inserts ``" " + span`` after the span (no space in no-space scripts).
* **sent_add**: side drawn 50/50.  "before" inserts at the start of the text.  "after" appends at
  the end -- unless the text ends with a question mark, which must stay last: then the sentence
  goes immediately before the final question sentence (for a one-sentence question this equals
  "before").  ``params["placement"]`` records where it went.
* **sent_replace** replaces the final sentence (the question; earlier context sentences are kept)
  by the first generic form for its question word (the first of what/which/who/.../how found in
  it, "how much/many/old/big/long" kept as a unit, "what" when none) that differs from the
  original, compared case-insensitively and ignoring spacing and final punctuation.
* Every corrupted text differs from the clean one.  The operator runs with
  ``text_rng(seed, key, operator, attempt)`` for attempt = 0, 1, ... :data:`MAX_ATTEMPTS`-1 until
  the output differs; an operator that has no admissible edit at all (``char_swap`` on "aa")
  raises :class:`TextCorruptionError` at once, and a deterministic operator (``random=False``) gets
  one attempt, as a retry would repeat it.  No whitespace is normalised anywhere.

Randomness: ``char_*``, ``word_swap`` and ``sent_add`` draw from the generator; ``word_repeat`` and
``sent_replace`` are deterministic.  Only instance-local generators from
:func:`snapbench.core.seeding.text_rng` are used, so outputs depend on (text, entity, seed, key,
operator) alone -- not on the process, call order or thread.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.conditions import TEXT_OPERATORS
from ..core.errors import ConfigError, InputError
from ..core.seeding import text_rng
from .entity import (
    POSSESSIVE_AFTER_RE,
    QUESTION_MARKS,
    SENT_BOUNDARY_RE,
    TERMINATORS,
    WORD_RE,
    EntityNotFoundError,
    Span,
    find_entity,
    locate,
    nospace,
)
from .text_data import (
    GENERIC_QUESTIONS,
    HOW_QUANTIFIERS,
    QUESTION_WORDS,
    QWERTY_NEIGHBOURS,
    SENTENCE_POOL,
)
from .text_registry import (
    TextOperator,
    TextOperatorFn,
    get_text_operator,
    register_text_operator,
    restore_text_operators,
    text_operator,
    text_operators,
    unregister_text_operator,
    user_text_operators,
)

__all__ = [
    "TEXT_OPERATORS",
    "MAX_ATTEMPTS",
    "CorruptedText",
    "TextCorruptionError",
    "EntityNotFoundError",
    "TextOperator",
    "TextOperatorFn",
    "corrupt_text",
    "corrupt_text_with_params",
    "find_entity",
    "register_text_operator",
    "get_text_operator",
    "text_operators",
    "user_text_operators",
    "restore_text_operators",
    "unregister_text_operator",
]

MAX_ATTEMPTS = 10

class TextCorruptionError(InputError):
    """The operator could not produce a text that differs from the input."""


@dataclass(frozen=True)
class CorruptedText:
    """A corrupted question, the operator that made it and the JSON-serialisable edit description.

    ``params`` always has ``entity``, ``entity_span`` ([start, end) in the *clean* text),
    ``entity_match`` (exact / plural / last_word / last_word_plural / fallback) and ``attempt``,
    plus the operator's own keys (positions refer to the clean text unless named ``*_new``).
    """

    text: str
    operator: str
    params: dict[str, Any]


# --------------------------------------------------------------------------------------------
# Public entry points


def corrupt_text_with_params(
    text: str, operator: str, *, entity: str | None = None, seed: int = 0, key: str = ""
) -> CorruptedText:
    """Apply text ``operator`` to ``text`` and return the result with the edit's parameters.

    Deterministic in (text, entity, seed, key, operator).  Raises :class:`EntityNotFoundError`
    when the entity cannot be located and :class:`TextCorruptionError` when no differing output
    is produced within :data:`MAX_ATTEMPTS` attempts; both are ``ValueError`` and name the query
    ``key`` when one is given.
    """
    record = text_operator(operator)
    fn, operator = record.fn, record.name  # an alias is seeded and recorded as the operator it names
    where = f"query {key!r}: " if key else ""
    try:
        s, e, how = locate(text, entity)
    except EntityNotFoundError as exc:
        raise EntityNotFoundError(f"{where}{exc}", reason=exc.reason) from None
    deterministic = not record.random
    attempts = 1 if deterministic else MAX_ATTEMPTS
    for attempt in range(attempts):
        rng = None if deterministic else text_rng(seed, key, operator, attempt)
        try:
            new_text, params = fn(text, (s, e), rng)  # type: ignore[arg-type]
        except TextCorruptionError as exc:
            raise TextCorruptionError(f"{where}{operator} on {text!r}: {exc}") from None
        if not isinstance(new_text, str) or not isinstance(params, dict):
            raise ConfigError(f"text operator {operator!r} must return (str, dict), got "
                              f"({type(new_text).__name__}, {type(params).__name__})")
        if new_text != text:
            head = {"entity": text[s:e], "entity_span": [s, e], "entity_match": how}
            return CorruptedText(new_text, operator, {**head, **params, "attempt": attempt})
    raise TextCorruptionError(
        f"{where}{operator} left question {text!r} unchanged in {attempts} attempt(s)"
    )


def corrupt_text(text: str, operator: str, *, entity: str | None = None, seed: int = 0, key: str = "") -> str:
    """The corrupted question (see :func:`corrupt_text_with_params`)."""
    return corrupt_text_with_params(text, operator, entity=entity, seed=seed, key=key).text


# --------------------------------------------------------------------------------------------
# Character operators


def _letter_runs(text: str, span: Span) -> list[Span]:
    """Maximal runs of letters (with their combining marks) inside ``span``."""
    runs: list[Span] = []
    start = None
    for i in range(span[0], span[1]):
        ch = text[i]
        inside = ch.isalpha() or (start is not None and unicodedata.category(ch)[0] == "M")
        if inside and start is None:
            start = i
        elif not inside and start is not None:
            runs.append((start, i))
            start = None
    if start is not None:
        runs.append((start, span[1]))
    return runs


def _pick(rng: np.random.Generator, n: int) -> int:
    # floor(u * n) with a 53-bit uniform u: uniform for any n we use, and ~3x cheaper than
    # rng.integers(n) (which dominates a single edit otherwise).
    return int(rng.random() * n)


def _no_edit(text: str, span: Span, why: str) -> TextCorruptionError:
    return TextCorruptionError(f"cannot edit entity {text[span[0]:span[1]]!r}: {why}")


@register_text_operator("char_add")
def _char_add(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    runs = _letter_runs(text, span)
    positions = [p for a, b in runs for p in range(a + 1, b)]
    if not positions:  # only one-letter words: before or after the letter is all there is
        positions = [p for a, b in runs for p in (a, b)]
    if not positions:
        raise _no_edit(text, span, "it has no letter")
    pos = positions[_pick(rng, len(positions))]
    letter = chr(ord("a") + _pick(rng, 26))
    left = text[pos - 1] if pos > span[0] and text[pos - 1].isalpha() else ""
    right = text[pos] if pos < span[1] and text[pos].isalpha() else ""
    sides = left + right
    if sides and all(c.isupper() for c in sides):
        letter = letter.upper()
    return text[:pos] + letter + text[pos:], {"position": pos, "inserted": letter}


@register_text_operator("char_delete")
def _char_delete(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    positions = [p for a, b in _letter_runs(text, span) if b - a >= 2 for p in range(a, b) if text[p].isalpha()]
    if not positions:
        raise _no_edit(text, span, "no word with two letters (a word must keep one)")
    pos = positions[_pick(rng, len(positions))]
    return text[:pos] + text[pos + 1 :], {"position": pos, "deleted": text[pos]}


def _base_letter(ch: str) -> str:
    return unicodedata.normalize("NFD", ch)[0].lower()


@register_text_operator("char_change")
def _char_change(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    positions = [p for p in range(span[0], span[1]) if text[p].isalpha() and _base_letter(text[p]) in QWERTY_NEIGHBOURS]
    if not positions:
        raise _no_edit(text, span, "no letter a-z (with or without accent) on a QWERTY key")
    pos = positions[_pick(rng, len(positions))]
    original = text[pos]
    neighbours = QWERTY_NEIGHBOURS[_base_letter(original)]
    new = neighbours[_pick(rng, len(neighbours))]
    if original.isupper():
        new = new.upper()
    return text[:pos] + new + text[pos + 1 :], {"position": pos, "original": original, "replacement": new}


@register_text_operator("char_swap")
def _char_swap(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    positions = [
        p
        for a, b in _letter_runs(text, span)
        for p in range(a, b - 1)
        if text[p].isalpha() and text[p + 1].isalpha() and text[p].casefold() != text[p + 1].casefold()
    ]
    if not positions:
        raise _no_edit(text, span, "no adjacent pair of different letters")
    pos = positions[_pick(rng, len(positions))]
    new = text[:pos] + text[pos + 1] + text[pos] + text[pos + 2 :]
    return new, {"position": pos, "pair": text[pos : pos + 2]}


# --------------------------------------------------------------------------------------------
# Word operators


@register_text_operator("word_repeat", random=False)
def _word_repeat(text: str, span: Span, rng: np.random.Generator | None) -> tuple[str, dict[str, Any]]:
    s, e = span
    sep = "" if nospace(text[e - 1]) else " "
    new = text[:e] + sep + text[s:e] + text[e:]
    return new, {"inserted_span_new": [e + len(sep), e + len(sep) + (e - s)], "separator": sep}


def _neighbours(text: str, span: Span) -> dict[str, Span]:
    s, e = span
    out: dict[str, Span] = {}
    left = None
    for m in WORD_RE.finditer(text, 0, s):
        left = m.span()
    if left is not None:
        out["left"] = left
    # A possessive 's belongs to the entity's word, not to its right neighbour.
    if (pm := POSSESSIVE_AFTER_RE.match(text, e)) is not None:
        e = pm.end()
    if (m := WORD_RE.search(text, e)) is not None:
        out["right"] = m.span()
    return out


@register_text_operator("word_swap")
def _word_swap(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    s, e = span
    ent = text[s:e]
    options = {side: sp for side, sp in _neighbours(text, span).items() if text[sp[0] : sp[1]] != ent}
    if not options:
        raise _no_edit(text, span, "no neighbouring word that differs from it")
    if len(options) == 1:
        (side,) = options
    else:
        side = "left" if rng.random() < 0.5 else "right"
    a, b = options[side]
    if side == "left":
        new = text[:a] + ent + text[b:s] + text[a:b] + text[e:]
    else:
        new = text[:s] + text[a:b] + text[e:a] + ent + text[b:]
    return new, {"side": side, "neighbour": text[a:b], "neighbour_span": [a, b]}


# --------------------------------------------------------------------------------------------
# Sentence operators


def _last_sentence_start(text: str) -> int:
    """Start of the final sentence (the question): after the last sentence boundary before it."""
    body_end = len(text.rstrip())
    question_end = len(text[:body_end].rstrip(TERMINATORS))
    start = len(text) - len(text.lstrip())
    for m in SENT_BOUNDARY_RE.finditer(text, 0, question_end):
        if m.end() < question_end:
            start = m.end()
    return start


@register_text_operator("sent_add")
def _sent_add(text: str, span: Span, rng: np.random.Generator) -> tuple[str, dict[str, Any]]:
    index = _pick(rng, len(SENTENCE_POOL))
    sentence = SENTENCE_POOL[index]
    side = "before" if rng.random() < 0.5 else "after"
    body_end = len(text.rstrip())
    if side == "before":
        pos = len(text) - len(text.lstrip())
        placement = "start"
    elif text[:body_end].endswith(tuple(QUESTION_MARKS)):
        pos = _last_sentence_start(text)
        placement = "before_question"
    else:
        pos = body_end
        placement = "end"
    if placement == "end":
        new = text[:pos] + " " + sentence + text[pos:]
    else:
        new = text[:pos] + sentence + " " + text[pos:]
    return new, {
        "side": side,
        "placement": placement,
        "position": pos,
        "sentence_index": index,
        "sentence": sentence,
    }


def _question_word(question: str) -> str:
    words = [m.group().lower().replace("’", "'").split("'")[0] for m in WORD_RE.finditer(question)]
    for i, w in enumerate(words):
        if w in QUESTION_WORDS:
            if w == "how" and i + 1 < len(words) and words[i + 1] in HOW_QUANTIFIERS:
                return f"how {words[i + 1]}"
            return w
    return "what"


def _norm_question(q: str) -> str:
    return " ".join(q.casefold().replace("’", "'").split()).rstrip(TERMINATORS + " ")


@register_text_operator("sent_replace", random=False)
def _sent_replace(text: str, span: Span, rng: np.random.Generator | None) -> tuple[str, dict[str, Any]]:
    start = _last_sentence_start(text)
    end = len(text.rstrip())
    question = text[start:end]
    qword = _question_word(question)
    forms = GENERIC_QUESTIONS[qword]
    for i, form in enumerate(forms):
        if _norm_question(form) != _norm_question(question):
            new = text[:start] + form + text[end:]
            return new, {
                "question_word": qword,
                "replaced_span": [start, end],
                "replacement": form,
                "form_index": i,
            }
    raise TextCorruptionError(f"sent_replace: every generic {qword!r} question equals {question!r}")
