"""Question detectors: out-of-vocabulary rate, content tokens, an entity-bearing word.

Words are what the text operators call words (:data:`snapbench.corruptions.entity.WORD_RE`: runs of
letters and digits, apostrophes inside), lower-cased, with ’ read as '.  Words with a digit (model
numbers, years) are neither checked against the word list nor counted as content.

* ``oov``: the share of words missing from the English word list -- pyspellchecker's English
  frequency list (about 160,000 words from subtitles, shipped inside the package: no download),
  restricted to words seen at least ``min_count`` times, plus :data:`FUNCTION_WORDS` and any words
  the caller adds.  A contraction or possessive counts as known when the part before the apostrophe
  is known.  0 for a question without words.
* ``few_content_tokens``: the number of words that are not :data:`FUNCTION_WORDS` (closed-class
  words: articles, pronouns, prepositions, conjunctions, auxiliaries, question words).
* ``no_entity``: with the record's entity: 1 when the text operators' entity finder
  (:func:`snapbench.corruptions.entity.find_entity`: exact, plural/stem, last-word match) finds it in the
  question, else 0.  Without one: the number of entity-bearing candidates -- content words that are
  also not generic (:data:`snapbench.corruptions.entity.STOPWORDS`: kind, type, thing, identify,
  taken, ...) nor one of the common question verbs (:data:`_QUESTION_VERBS`), and have two letters or
  more.  No part-of-speech tagger is used: it is a rule, documented, not a parser.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

from ..core.errors import EntityNotFoundError
from ..core.install_hint import import_extra
from ..corruptions.entity import STOPWORDS, WORD_RE, find_entity

__all__ = [
    "FUNCTION_WORDS",
    "Vocabulary",
    "content_tokens",
    "entity_score",
    "oov_score",
    "text_scores",
    "words",
]

#: Closed-class English words (and their common contractions): never content, always known.
FUNCTION_WORDS: frozenset[str] = frozenset(
    """
    a an the this that these those some any each every all both either neither no none another other such
    i me my mine myself you your yours yourself he him his himself she her hers herself it its itself
    we us our ours ourselves they them their theirs themselves one
    what which who whom whose where when why how whatever whichever whoever
    is are was were be been being am do does did doing done have has had having
    can could will would shall should may might must ought
    of in on at to from by with without for about into onto over under near behind above below between
    among through across along around against toward towards upon within beside besides off out up down
    and or but nor so yet if than then because while although though unless whether as like
    not no yes very too also just only even still here there now ever again once
    please ok okay
    what's where's who's when's how's why's that's there's here's it's he's she's let's
    i'm i've i'd i'll you're you've you'd you'll we're we've we'd we'll they're they've they'd they'll
    isn't aren't wasn't weren't don't doesn't didn't can't cannot couldn't won't wouldn't shouldn't
    haven't hasn't hadn't mustn't
    """.split()
)

#: Verbs common in snap-and-ask questions; not entity-bearing (used only when no entity is given).
_QUESTION_VERBS: frozenset[str] = frozenset(
    """
    buy bought cost costs cook cooked eat eaten use used fix clean make mean means say says said wear worn
    grow grows water work works go goes come comes live lives play plays playing need want like call
    help tell find get open close fit fits sell sells sold happen happened wrong safe real best good new old
    """.split()
)


def words(question: str) -> list[str]:
    """The question's words: lower case, ’ read as ' (see the module docstring)."""
    return [m.group().lower().replace("’", "'") for m in WORD_RE.finditer(question)]


def _lexical(word: str) -> bool:
    return any(c.isalpha() for c in word) and not any(c.isdigit() for c in word)


def content_tokens(question: str) -> list[str]:
    """Words with a letter and no digit that are not :data:`FUNCTION_WORDS` (possessive 's dropped)."""
    out = []
    for w in words(question):
        if not _lexical(w) or w in FUNCTION_WORDS:
            continue
        base = w[:-2] if w.endswith("'s") else w
        if base not in FUNCTION_WORDS:
            out.append(base)
    return out


class Vocabulary:
    """The known English words: pyspellchecker's list (count >= ``min_count``) + function words +
    ``extra`` (lower-cased).  Loading the list takes ~0.1 s; build one and reuse it."""

    def __init__(self, min_count: float = 0, extra: Iterable[str] = ()) -> None:
        self.words = frozenset(_spellchecker_words(int(min_count))) | FUNCTION_WORDS | {
            w.strip().lower().replace("’", "'") for w in extra if w.strip()}

    def __contains__(self, word: str) -> bool:
        if word in self.words:
            return True
        head = word.split("'", 1)[0]
        return "'" in word and bool(head) and head in self.words


@functools.lru_cache(maxsize=4)
def _spellchecker_words(min_count: int) -> frozenset[str]:
    SpellChecker = import_extra("spellchecker", "diagnose",
                                "the oov detector needs the English word list of pyspellchecker").SpellChecker
    freq = SpellChecker(language="en", distance=1).word_frequency.dictionary
    return frozenset(w for w, c in freq.items() if c >= min_count)


def oov_score(question: str, vocabulary: Vocabulary) -> float:
    """Share of the question's words (letters only, no digits) missing from ``vocabulary``."""
    ws = [w for w in words(question) if _lexical(w)]
    if not ws:
        return 0.0
    return sum(1 for w in ws if w not in vocabulary) / len(ws)


def _few_content_tokens_score(question: str) -> float:
    """Number of content tokens (:func:`content_tokens`)."""
    return float(len(content_tokens(question)))


def entity_score(question: str, entity: str | None) -> float:
    """1/0 whether ``entity`` is found in ``question``; without an entity, the number of
    entity-bearing candidate words (see the module docstring)."""
    if entity is not None and entity.strip():
        try:
            find_entity(question, entity)
        except EntityNotFoundError:
            return 0.0
        return 1.0
    cands = [w for w in content_tokens(question)
             if len(w) >= 2 and w.replace("'", "") not in STOPWORDS and w not in _QUESTION_VERBS]
    return float(len(cands))


def text_scores(question: str, entity: str | None, vocabulary: Vocabulary) -> dict[str, float]:
    """Every text detector's score for one question."""
    return {
        "oov": oov_score(question, vocabulary),
        "few_content_tokens": _few_content_tokens_score(question),
        "no_entity": entity_score(question, entity),
    }
