"""Question detectors of `snapbench diagnose` on real-style questions and snapbench's own text operators."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from snapbench.core.install_hint import install_hint
from snapbench.corruptions import corrupt_text, load_manifest
from snapbench.diagnose import diagnose_question, load_thresholds
from snapbench.diagnose.text import FUNCTION_WORDS, Vocabulary, content_tokens, entity_score, oov_score

HERE = Path(__file__).parent
CHAR_OPS = ("char_add", "char_delete", "char_change", "char_swap")


@pytest.fixture(scope="module")
def records() -> list[dict]:
    recs = [json.loads(line) for line in (HERE / "data" / "questions.jsonl").read_text().splitlines()]
    demo = HERE.parent / "snapbench" / "assets" / "demo" / "queries.jsonl"
    return recs + [{"id": r.id, "question": r.question, "entity": r.entity} for r in load_manifest(demo)]


@pytest.fixture(scope="module")
def vocab() -> Vocabulary:
    return Vocabulary(load_thresholds()["oov"]["min_count"])


def _rate(records, op, detector, vocab, *, entity=True) -> float:
    th = load_thresholds()
    out = []
    for r in records:
        q = r["question"] if op == "clean" else corrupt_text(r["question"], op, entity=r["entity"], key=r["id"])
        out.append(diagnose_question(q, r["entity"] if entity else None, th, vocab)[detector].flag)
    return float(np.mean(out))


def test_oov_flags_char_operators_far_more_than_clean_questions(records, vocab) -> None:
    assert len(records) >= 100
    clean = _rate(records, "clean", "oov", vocab)
    assert clean <= 0.05
    for op in CHAR_OPS:
        assert _rate(records, op, "oov", vocab) >= 0.6, op
        assert _rate(records, op, "oov", vocab) >= 10 * max(clean, 0.01), op


def test_entity_and_content_detectors_see_what_they_should(records, vocab) -> None:
    # a destroyed entity word (char operators) or a replaced question: the record's entity is gone
    for op in (*CHAR_OPS, "sent_replace"):
        assert _rate(records, op, "no_entity", vocab) >= 0.95, op
    for op in ("clean", "word_repeat", "word_swap", "sent_add"):
        assert _rate(records, op, "no_entity", vocab) == 0.0, op
    # "What is this?" has no content token and no entity-bearing word
    assert _rate(records, "sent_replace", "few_content_tokens", vocab) == 1.0
    assert _rate(records, "sent_replace", "no_entity", vocab, entity=False) >= 0.95
    assert _rate(records, "clean", "no_entity", vocab, entity=False) <= 0.05


def test_oov_is_the_share_of_unknown_words(vocab) -> None:
    assert oov_score("What kind of fish is this?", vocab) == 0.0
    assert oov_score("What kind of fiish is this?", vocab) == pytest.approx(1 / 6)
    assert oov_score("Wht knd of fsh is ths?", vocab) == pytest.approx(4 / 6)
    assert oov_score("iPhone 15 or S23?", vocab) == pytest.approx(0.0)  # words with digits are not checked
    assert oov_score("???", vocab) == 0.0
    assert oov_score("What's this dog's name?", vocab) == 0.0  # contraction, possessive


def test_vocabulary_is_pyspellcheckers_list_plus_extra_words() -> None:
    from spellchecker import SpellChecker

    freq = SpellChecker(language="en").word_frequency.dictionary
    v = Vocabulary(0, extra=["Uniqlo"])
    sample = list(freq)[::5000]
    assert all(w in v for w in sample)
    assert "uniqlo" in v and "uniqlo" not in freq
    assert "zzqxv" not in v
    strict = Vocabulary(1000)
    rare = next(w for w, c in freq.items() if c < 1000 and w.isalpha() and w not in FUNCTION_WORDS)
    assert rare in v and rare not in strict


def test_content_tokens_and_entity_rule() -> None:
    assert content_tokens("What kind of fish is this?") == ["kind", "fish"]
    assert content_tokens("What is this?") == []
    assert content_tokens("Where is Anna's bike?") == ["anna", "bike"]
    assert entity_score("What kind of fish is this?", "fish") == 1.0
    assert entity_score("What kind of fishes are these?", "fish") == 1.0  # plural, as the operators match
    assert entity_score("What kind of fsh is this?", "fish") == 0.0
    assert entity_score("What kind of fish is this?", None) == 1.0  # 'kind' is generic, 'fish' is not
    assert entity_score("How do I fix this?", None) == 0.0
    assert entity_score("Please identify this thing", None) == 0.0


def test_missing_word_list_fails_with_install_hint(monkeypatch) -> None:
    from snapbench.diagnose import text

    text._spellchecker_words.cache_clear()
    monkeypatch.setitem(sys.modules, "spellchecker", None)
    try:
        with pytest.raises(ImportError, match=re.escape(install_hint("diagnose"))):
            Vocabulary(0)
    finally:
        text._spellchecker_words.cache_clear()
