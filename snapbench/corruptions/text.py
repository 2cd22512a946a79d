"""The eight text operators (SPEC §4), their static tables and the text-operator registry.

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
  "taken/made/..."; see :data:`~snapbench.corruptions.entity.STOPWORDS`) and contains a letter.
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

The text-operator table holds one :class:`TextOperator` record per operator (an
:class:`~.plugins.OperatorTable`).  Built-ins register themselves below, when this module is
imported; users call :func:`register_text_operator`; installed packages add operators through the
entry point group ``snapbench.text_operators`` (:mod:`.plugins`), loaded on the first lookup.  A
built-in named in :data:`snapbench.core.conditions.TEXT_OPERATORS` without a registered
implementation is an error at every lookup, never a silent gap in a run.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from ..core.conditions import TEXT_OPERATORS
from ..core.errors import ConfigError, EntityNotFoundError, TextCorruptionError
from ..core.seeding import text_rng
from .entity import (
    POSSESSIVE_AFTER_RE,
    QUESTION_MARKS,
    SENT_BOUNDARY_RE,
    TERMINATORS,
    WORD_RE,
    Span,
    find_entity,
    locate,
    nospace,
)
from .plugins import TEXT_GROUP, OperatorTable

__all__ = [
    "TEXT_OPERATORS",
    "MAX_ATTEMPTS",
    "CorruptedText",
    "EntityNotFoundError",
    "TextOperator",
    "TextOperatorFn",
    "corrupt_text",
    "corrupt_text_with_params",
    "find_entity",
    "register_text_operator",
    "get_text_operator",
    "text_aliases",
    "text_operator",
    "text_operators",
    "user_text_operators",
    "restore_text_operators",
    "unregister_text_operator",
]

# --------------------------------------------------------------------------------------------
# The text-operator table

TextOperatorFn = Callable[[str, Span, "np.random.Generator | None"], tuple[str, dict[str, Any]]]
"""A text operator: ``fn(text, (start, end) of the entity, rng) -> (new_text, params)``; ``rng`` is
``None`` only for operators registered with ``random=False``."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


@dataclass(frozen=True)
class TextOperator:
    """A registered text corruption: the record of the text-operator table.

    ``fn(text, span, rng) -> (new_text, params)``; ``random=False`` for an operator that draws
    nothing (it gets ``rng=None`` and a single attempt); ``aliases`` are other names condition ids
    may use; ``origin`` is ``"builtin"``, ``"user"`` or ``"plugin"``.  A plugin's entry point may name
    such a record directly.
    """

    name: str
    fn: TextOperatorFn
    random: bool = True
    doc: str = field(default="", compare=False)
    aliases: tuple[str, ...] = ()
    origin: str = "user"


def _checked(op: TextOperator) -> TextOperator:
    """``op`` validated (see :func:`register_text_operator`)."""
    for n in (op.name, *op.aliases):
        if not isinstance(n, str) or not _NAME_RE.match(n):
            raise ConfigError(f"text operator name {n!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)",
                              param="name")
    if not callable(op.fn):
        raise ConfigError(f"text operator {op.name!r}: fn must be a callable", param="fn")
    return op


_TABLE = OperatorTable("text operator", TextOperator, group=TEXT_GROUP, check=_checked, builtins="TEXT_OPERATORS")


def register_text_operator(
    name: str, *, replace: bool = False, random: bool = True, aliases: tuple[str, ...] = ()
) -> Callable[[TextOperatorFn], TextOperatorFn]:
    """Decorator registering ``fn(text, span, rng) -> (new_text, params)`` as text operator ``name``.

    ``span`` is the entity's ``(start, end)``; ``rng`` a seeded ``numpy.random.Generator`` (one per
    attempt); ``params`` must be JSON-serialisable.  Returning ``text`` unchanged makes the caller
    retry with the next attempt's generator; raise :class:`TextCorruptionError` when no edit
    is possible at all.  An operator that draws nothing is registered with ``random=False``: it gets
    ``rng=None`` (deriving a generator costs more than most edits) and a single attempt, since a
    retry would give the same output.  Re-registering a name needs ``replace``.

    Operators registered at run time are shipped to ``run_corruption``'s worker processes by
    pickling ``fn``: use a module-level function or a picklable callable object (no lambdas or
    closures) if you run with ``workers > 1``.
    """
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigError(f"text operator name {name!r} must match [A-Za-z0-9_.-]+ (it appears in condition ids)",
                          param="name")

    def _register(fn: TextOperatorFn) -> TextOperatorFn:
        origin = "builtin" if getattr(fn, "__module__", None) == __name__ else "user"
        _TABLE.add(TextOperator(name, fn, random=bool(random), doc=(getattr(fn, "__doc__", None) or "").strip(),
                                aliases=tuple(aliases), origin=origin), replace=replace)
        return fn

    return _register


# the table's operations under the names the package exports (their docstrings: OperatorTable's)
text_operator = _TABLE.get
text_aliases = _TABLE.aliases
user_text_operators = _TABLE.user_operators
restore_text_operators = _TABLE.restore
unregister_text_operator = _TABLE.remove


def get_text_operator(name: str) -> TextOperatorFn:
    """The registered function for ``name`` (see :func:`text_operator` for the errors)."""
    return text_operator(name).fn


def text_operators() -> tuple[str, ...]:
    """Registered operator names: the eight built-ins in SPEC order, then the others by name."""
    return tuple(_TABLE.ordered())


MAX_ATTEMPTS = 10


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

# The static tables of the operators below (QWERTY neighbours, the unrelated-sentence pool, the
# generic questions of sent_replace) were written for snapbench (not copied from nlpaug or any other
# keyboard/typo list).  Changing any table changes corrupted outputs for the same seed, so treat
# edits to them like a version bump.

# Letter keys that touch each other on a US QWERTY keyboard: same-row left/right keys plus the
# keys above and below (rows are staggered, so a key touches two keys in the row above/below,
# except at the edges).  Symmetric by construction; tests re-derive it from key geometry.
QWERTY_NEIGHBOURS: dict[str, str] = {
    "q": "wa",
    "w": "qeas",
    "e": "wrsd",
    "r": "etdf",
    "t": "ryfg",
    "y": "tugh",
    "u": "yihj",
    "i": "uojk",
    "o": "ipkl",
    "p": "ol",
    "a": "qwsz",
    "s": "weadzx",
    "d": "ersfxc",
    "f": "rtdgcv",
    "g": "tyfhvb",
    "h": "yugjbn",
    "j": "uihknm",
    "k": "iojlm",
    "l": "opk",
    "z": "asx",
    "x": "sdzc",
    "c": "dfxv",
    "v": "fgcb",
    "b": "ghvn",
    "n": "hjbm",
    "m": "jkn",
}


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

# Unrelated everyday sentences for sent_add: short, category-free, no question marks, no named
# entities, so they add noise without adding retrieval cues.
SENTENCE_POOL: tuple[str, ...] = (
    "My phone battery is almost dead.",
    "I need to buy milk on the way home.",
    "The bus was late again this morning.",
    "It has been raining all week.",
    "I forgot my umbrella at the office.",
    "My coffee went cold while I was typing.",
    "The wifi here is really slow.",
    "I have a dentist appointment tomorrow.",
    "We are meeting friends for dinner tonight.",
    "I just got back from the gym.",
    "My sister is visiting next weekend.",
    "The laundry still needs folding.",
    "I should really clean my desk.",
    "Traffic was terrible on the way here.",
    "I slept badly last night.",
    "The neighbours are having a party.",
    "My keys were in my other jacket.",
    "I am waiting for a delivery.",
    "It is way too hot in this room.",
    "I keep forgetting to call my mom back.",
    "The train is packed today.",
    "My headphones stopped working yesterday.",
    "I have to finish a report by Friday.",
    "Lunch was a bit too salty.",
    "The elevator is out of order again.",
    "I left the window open this morning.",
    "My screen has a crack in the corner.",
    "We ran out of coffee at home.",
    "I am on my lunch break right now.",
    "The power went out for an hour.",
    "I need to water the plants later.",
    "My friend is running a little late.",
    "I just finished a long meeting.",
    "The store closes in twenty minutes.",
    "I am typing this with one hand.",
    "The kids are finally asleep.",
    "It is my day off today.",
    "I lost my charger somewhere.",
    "The printer jammed twice today.",
    "I walked ten thousand steps today.",
    "My parking ticket expires soon.",
    "The heater makes a strange noise.",
    "I have too many tabs open.",
    "Someone parked in my spot again.",
    "Dinner is almost ready.",
    "I need a new pair of running shoes.",
    "The meeting got moved to Thursday.",
    "My cat keeps walking on the keyboard.",
)

# sent_replace: generic questions per question word, with no category and no entity.  The first
# form that differs from the original question is used; the alternatives exist so that a question
# that already *is* the first generic form still changes.
_GENERIC_QUESTIONS: dict[str, tuple[str, ...]] = {
    "what": ("What is this?", "What is that?", "What am I looking at?"),
    "which": ("Which one is this?", "Which is this?", "Which one is that?"),
    "who": ("Who is this?", "Who is that?"),
    "whom": ("Who is this?", "Who is that?"),
    "whose": ("Whose is this?", "Whose is that?"),
    "where": ("Where is this?", "Where was this taken?", "Where is that?"),
    "when": ("When was this taken?", "When is this from?", "When was that?"),
    "why": ("Why is this like this?", "Why is that?"),
    "how": ("How is this?", "How does this work?", "How is that?"),
    "how much": ("How much is this?", "How much is that?"),
    "how many": ("How many are there?", "How many are in this?"),
    "how old": ("How old is this?", "How old is that?"),
    "how big": ("How big is this?", "How big is that?"),
    "how long": ("How long is this?", "How long is that?"),
}

_QUESTION_WORDS: frozenset[str] = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})
# "how" + one of these forms a two-word question word with its own generic questions.
_HOW_QUANTIFIERS: frozenset[str] = frozenset({"much", "many", "old", "big", "long"})


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
        if w in _QUESTION_WORDS:
            if w == "how" and i + 1 < len(words) and words[i + 1] in _HOW_QUANTIFIERS:
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
    forms = _GENERIC_QUESTIONS[qword]
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
