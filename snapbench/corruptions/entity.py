"""Where the entity is: the word model the text operators share.

What counts as a word (letters and digits in any script; scripts written without spaces count every
character as a word), and how a query's entity is found in its question: exact whole-word match,
then plural/stem forms both ways (fish/fishes, knife/knives, berry/berries), then the last word of a
multi-word entity; with no entity given, the last non-stopword.  An entity that cannot be found
raises :class:`EntityNotFoundError` -- never a silent edit elsewhere.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from ..core.errors import EntityNotFoundError

__all__ = ["Span", "STOPWORDS", "find_entity", "guess_entity", "locate", "nospace", "WORD_RE", "POSSESSIVE_AFTER_RE",
           "QUESTION_MARKS", "SENT_BOUNDARY_RE", "TERMINATORS"]

# The word lists of entity finding, written for snapbench.  Changing one changes which word a
# question's entity is found at, hence corrupted outputs for the same seed: treat edits like a
# version bump.

# Words skipped when guessing the entity of a question that has none: question words, auxiliaries,
# pronouns, determiners, prepositions, generic "kind of" nouns and the participles that end
# photo questions ("where was this taken").  Lower-case; possessive 's is stripped before lookup.
STOPWORDS: frozenset[str] = frozenset(
    """
    what which who whom whose where when why how whats dont doesnt isnt
    is are was were be been being am do does did can could would should will shall may might must
    have has had get got
    this that these those it its they them their there here i me my mine you your yours we our us
    he him his she her hers one ones
    a an the some any each every all both either neither no not
    of in on at to from by with for about into onto over under near behind above below between
    and or but if so than then as like
    kind kinds type types sort sorts variety name called named
    thing things stuff something anything object item
    please tell identify know show find see look looking
    taken made built located found seen shown pictured photographed called
    exactly really actually
    """.split()
)

# Irregular singular -> plural pairs used by the plural/stem matcher (whole words only).
_IRREGULAR_PLURALS: dict[str, str] = {
    "man": "men",
    "woman": "women",
    "child": "children",
    "person": "people",
    "mouse": "mice",
    "louse": "lice",
    "goose": "geese",
    "tooth": "teeth",
    "foot": "feet",
    "ox": "oxen",
    "cactus": "cacti",
    "fungus": "fungi",
    "octopus": "octopi",
    "die": "dice",
    "potato": "potatoes",
    "tomato": "tomatoes",
}

Span = tuple[int, int]


# --------------------------------------------------------------------------------------------
# Character classes


# Scripts written without spaces between words: a match there needs no word boundary and every
# character counts as a word for word_swap.
_NOSPACE_RANGES = "\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_NOSPACE_RE = re.compile(f"[{_NOSPACE_RANGES}]")
WORD_RE = re.compile(f"[{_NOSPACE_RANGES}]|[^\\W_{_NOSPACE_RANGES}]+(?:['’][^\\W_{_NOSPACE_RANGES}]+)*")
_POSSESSIVE_RE = re.compile(r"['’][sS]$")
POSSESSIVE_AFTER_RE = re.compile(r"['’][sS](?![^\W_])")
QUESTION_MARKS = "?？"
SENT_BOUNDARY_RE = re.compile(r"[.!?…]+[\"'”’)\]]*\s+|[。！？]+\s*")
TERMINATORS = ".!?。！？…"


def _is_word_char(ch: str) -> bool:
    # Combining marks belong to the letter before them ("cafe" + U+0301 is one word).
    return ch.isalnum() or unicodedata.category(ch)[0] == "M"


def nospace(ch: str) -> bool:
    return _NOSPACE_RE.match(ch) is not None


def _left_ok(text: str, s: int) -> bool:
    if s == 0:
        return True
    prev = text[s - 1]
    return not _is_word_char(prev) or nospace(prev) or nospace(text[s])


def _right_ok(text: str, e: int) -> bool:
    if e >= len(text):
        return True
    nxt = text[e]
    if nospace(nxt) or nospace(text[e - 1]):
        return True
    if _is_word_char(nxt):
        return False
    if nxt in "'’" and e + 1 < len(text) and _is_word_char(text[e + 1]):
        # Only a possessive 's ends the word; "don't" does not contain "don".
        return text[e + 1] in "sS" and (e + 2 >= len(text) or not _is_word_char(text[e + 2]))
    return True


# --------------------------------------------------------------------------------------------
# Entity finder


def _plural_forms(w: str) -> set[str]:
    forms = {w + "s", w + "es"}
    if len(w) >= 2 and w.endswith("y") and w[-2] not in "aeiou":
        forms.add(w[:-1] + "ies")
    if w.endswith("fe"):
        forms.add(w[:-2] + "ves")
    elif w.endswith("f"):
        forms.add(w[:-1] + "ves")
    if w in _IRREGULAR_PLURALS:
        forms.add(_IRREGULAR_PLURALS[w])
    return forms


_IRREGULAR_SINGULARS = {pl: sg for sg, pl in _IRREGULAR_PLURALS.items()}


def _singular_forms(w: str) -> set[str]:
    forms: set[str] = set()
    if len(w) > 3 and w.endswith("ies"):
        forms.add(w[:-3] + "y")
    if len(w) > 3 and w.endswith("ves"):
        forms.update((w[:-3] + "f", w[:-3] + "fe"))
    if len(w) > 2 and w.endswith("es"):
        forms.add(w[:-2])
    if len(w) > 1 and w.endswith("s") and not w.endswith("ss"):
        forms.add(w[:-1])
    if w in _IRREGULAR_SINGULARS:
        forms.add(_IRREGULAR_SINGULARS[w])
    return forms


def _word_pattern(word: str, plural: bool) -> str:
    w = word.lower()
    forms = {w} | (_plural_forms(w) | _singular_forms(w) if plural else set())
    # Longest first so "fishes" wins over "fish" at the same position.
    return "(?:" + "|".join(re.escape(f) for f in sorted(forms, key=lambda f: (-len(f), f))) + ")"


@functools.lru_cache(maxsize=4096)
def _entity_regex(words: tuple[str, ...], plural: bool) -> re.Pattern[str]:
    # Cached: a query set repeats each entity across the eight operators.
    return re.compile(r"\s+".join(_word_pattern(w, plural) for w in words), re.IGNORECASE)


def _search(text: str, words: list[str], plural: bool) -> Span | None:
    pattern = _entity_regex(tuple(words), plural)
    pos = 0
    while (m := pattern.search(text, pos)) is not None:
        s, e = m.span()
        if e > s and _left_ok(text, s) and _right_ok(text, e):
            return s, e
        pos = s + 1
    return None


def _fallback_entity(text: str) -> Span | None:
    best: Span | None = None
    for m in WORD_RE.finditer(text):
        s, e = m.span()
        word = m.group()
        if (pm := _POSSESSIVE_RE.search(word)) is not None:
            e = s + pm.start()
            word = word[: pm.start()]
        if word.lower().replace("’", "'").replace("'", "") in STOPWORDS or not any(c.isalpha() for c in word):
            continue
        best = (s, e)
    return best


def locate(text: str, entity: str | None) -> tuple[int, int, str]:
    if not isinstance(text, str):
        raise TypeError(f"question must be a str, got {type(text).__name__}")
    if entity is not None and not isinstance(entity, str):
        raise TypeError(f"entity must be a str or None, got {type(entity).__name__}")
    return _locate_cached(text, entity)


# The eight operators of one query look up the same (question, entity): cache the span.
@functools.lru_cache(maxsize=1024)
def _locate_cached(text: str, entity: str | None) -> tuple[int, int, str]:
    blank = entity is None or not entity.strip()
    if not text.strip():
        if not blank:
            raise EntityNotFoundError(f"entity {entity!r} not found: the question is empty",
                                      reason="the question is empty")
        why = "the question is empty and no entity was given"
        raise EntityNotFoundError(why, reason=why)
    if entity is None or blank:
        span = _fallback_entity(text)
        if span is None:
            raise EntityNotFoundError(
                f"no entity given and no candidate entity word (non-stopword) in question {text!r}",
                reason="no entity was given and the question has no candidate word",
            )
        return span[0], span[1], "fallback"
    words = entity.split()
    stages: list[tuple[list[str], bool, str]] = [(words, False, "exact"), (words, True, "plural")]
    if len(words) > 1:
        stages += [(words[-1:], False, "last_word"), (words[-1:], True, "last_word_plural")]
    for ws, plural, how in stages:
        if (span := _search(text, ws, plural)) is not None:
            return span[0], span[1], how
    raise EntityNotFoundError(
        f"entity {entity!r} not found in question {text!r} "
        "(tried exact, plural/stem and last-word matching)"
    )


def guess_entity(text: str) -> Span | None:
    """The span the text operators edit in a question with no entity (its last non-stopword word), or
    ``None`` when it has none: those queries' text conditions are skipped (:class:`EntityNotFoundError`)."""
    return _fallback_entity(text)


def find_entity(text: str, entity: str | None) -> tuple[int, int]:
    """Return the ``(start, end)`` character span of ``entity`` in ``text``.

    Matching is case-insensitive on whole words: exact phrase first, then plural/stem forms
    (either side may be the plural), then -- for a multi-word entity -- its last word; the leftmost
    match of the first successful stage is returned.  With ``entity=None`` (or blank) the last
    non-stopword word of the text is used.  Raises :class:`EntityNotFoundError` (a ``ValueError``)
    naming the entity and the question when nothing matches.
    """
    s, e, _ = locate(text, entity)
    return s, e
