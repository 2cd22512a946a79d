"""Tests for the eight text operators, the entity finder and the registry.

Expected values come from independent paths: the entity surface form is written by hand per case,
edit distances come from a Damerau-Levenshtein implemented here, keyboard neighbours from key
geometry computed here, word multisets from a tokenizer written here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import unicodedata
from collections import Counter

import pytest

from snapbench.core.conditions import TEXT_OPERATORS
from snapbench.core.errors import TextCorruptionError
from snapbench.corruptions.text import (
    MAX_ATTEMPTS,
    QWERTY_NEIGHBOURS,
    SENTENCE_POOL,
    CorruptedText,
    EntityNotFoundError,
    corrupt_text,
    corrupt_text_with_params,
    find_entity,
    register_text_operator,
    text_operators,
    unregister_text_operator,
)

FISH = "What kind of fish is this?"
CHAR_OPS = ("char_add", "char_delete", "char_change", "char_swap")
RANDOM_OPS = CHAR_OPS + ("word_swap", "sent_add")

# (question, entity, surface form of the entity in the question -- its first occurrence).
CASES: list[tuple[str, str, str]] = [
    (FISH, "fish", "fish"),
    ("What car is this?", "car", "car"),
    ("Is this a golden retriever?", "golden retriever", "golden retriever"),
    ("What breed is this Golden Retriever puppy?", "golden retriever", "Golden Retriever"),
    ("What kind of berries are these?", "berry", "berries"),
    ("Which knife is this?", "knives", "knife"),
    ("Are these leaves from an oak?", "leaf", "leaves"),
    ("What species are these fishes?", "fish", "fishes"),
    ("Mushroom or toadstool, which one is this?", "mushroom", "Mushroom"),
    ("What's the name of this flower?", "flower", "flower"),
    ("Is this a t-shirt or a sweater?", "t-shirt", "t-shirt"),
    ("Where can I buy this mid-century armchair?", "armchair", "armchair"),
    ("What is this café called?", "café", "café"),
    ("¿Qué pájaro es este?", "pájaro", "pájaro"),
    ("这是什么鱼？", "鱼", "鱼"),
    ("Is this 🐟 a clownfish?", "clownfish", "clownfish"),
    ("Who designed this Eiffel Tower model?", "Eiffel Tower", "Eiffel Tower"),
    ("When was this Polaroid camera made?", "camera", "camera"),
    ("How old is this oak tree?", "oak tree", "oak tree"),
    ("How much does this e-bike cost?", "e-bike", "e-bike"),
    ("What is this dog's breed?", "dog", "dog"),
    ("Can you identify this mushroom for me?", "mushroom", "mushroom"),
    ("I saw this at the market. What fruit is this?", "fruit", "fruit"),
    ("What model is this iPhone?", "iphone", "iPhone"),
    ("Which Pokémon is this?", "Pokémon", "Pokémon"),
    ("What kind of butterfly is this?", "butterflies", "butterfly"),
    ("What is this sea   creature?", "sea creature", "sea   creature"),
    ("Where was this photo of the Brandenburger Tor taken?", "Brandenburger Tor", "Brandenburger Tor"),
    ("what bird is this", "bird", "bird"),
    ("  What type of cactus is this?  ", "cacti", "cactus"),
    ("IS THIS A SHIBA INU?", "shiba inu", "SHIBA INU"),
    ("Which mouse is this?", "mice", "mouse"),
    ("Is this plant poisonous to cats?", "plant", "plant"),
]
# Entities with no two-letter word / no QWERTY letter: only char_add can edit them.
NO_CHAR_EDIT = {"鱼"}
SEEDS = range(5)


def expected_span(question: str, surface: str) -> tuple[int, int]:
    s = question.index(surface)
    return s, s + len(surface)


# ---------------------------------------------------------------- independent reference helpers


def osa_distance(a: str, b: str) -> int:
    """Damerau-Levenshtein (optimal string alignment) distance, textbook DP."""
    d = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
    for i in range(len(a) + 1):
        d[i][0] = i
    for j in range(len(b) + 1):
        d[0][j] = j
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def geometric_neighbours() -> dict[str, set[str]]:
    """Letter keys within 1.3 key widths of each other on a staggered QWERTY layout."""
    rows = [("qwertyuiop", 0.0), ("asdfghjkl", 0.25), ("zxcvbnm", 0.75)]
    pos = {c: (i + off, r) for r, (keys, off) in enumerate(rows) for i, c in enumerate(keys)}
    return {
        a: {b for b, (xb, yb) in pos.items() if b != a and ((xa - xb) ** 2 + (ya - yb) ** 2) ** 0.5 < 1.3}
        for a, (xa, ya) in pos.items()
    }


KEYBOARD = geometric_neighbours()


def words(text: str) -> Counter:
    return Counter(re.findall(r"[\u3040-\u30ff\u4e00-\u9fff]|[^\W_]+", text))


def base(ch: str) -> str:
    return unicodedata.normalize("NFD", ch)[0].lower()


def split_edit(clean: str, new: str, span: tuple[int, int]) -> tuple[str, str]:
    """Assert the text outside ``span`` is untouched; return (old entity text, new entity text)."""
    s, e = span
    prefix, suffix = clean[:s], clean[e:]
    assert new.startswith(prefix) and new.endswith(suffix), (clean, new)
    assert len(new) >= len(prefix) + len(suffix)
    return clean[s:e], new[s : len(new) - len(suffix)]


# ---------------------------------------------------------------- SPEC §4 examples


def test_spec_examples_shape_on_fish() -> None:
    for seed in range(10):
        out = {op: corrupt_text(FISH, op, entity="fish", seed=seed, key="q1") for op in TEXT_OPERATORS}
        for op in CHAR_OPS:
            m = re.fullmatch(r"What kind of (\w+) is this\?", out[op])
            assert m, (op, out[op])
            assert osa_distance("fish", m[1]) == 1
        assert len(re.fullmatch(r"What kind of (\w+) is this\?", out["char_add"])[1]) == 5
        assert len(re.fullmatch(r"What kind of (\w+) is this\?", out["char_delete"])[1]) == 3
        assert out["word_repeat"] == "What kind of fish fish is this?"
        assert out["word_swap"] in ("What kind fish of is this?", "What kind of is fish this?")
        added = out["sent_add"]
        assert added.endswith(FISH) and added[: -len(FISH) - 1] in SENTENCE_POOL and added[-len(FISH) - 1] == " "
        assert out["sent_replace"] == "What is this?"
    swaps = {corrupt_text(FISH, "word_swap", entity="fish", seed=s, key="q1") for s in range(30)}
    assert swaps == {"What kind fish of is this?", "What kind of is fish this?"}


# ---------------------------------------------------------------- many realistic questions


@pytest.mark.parametrize("question,entity,surface", CASES)
def test_every_operator_changes_text_and_keeps_final_question_mark(question: str, entity: str, surface: str) -> None:
    for op in TEXT_OPERATORS:
        if op in CHAR_OPS[1:] and surface in NO_CHAR_EDIT:
            with pytest.raises(TextCorruptionError):
                corrupt_text(question, op, entity=entity, seed=0, key="k")
            continue
        for seed in SEEDS:
            r = corrupt_text_with_params(question, op, entity=entity, seed=seed, key=f"k{seed}")
            assert isinstance(r, CorruptedText) and r.operator == op
            assert r.text != question
            assert r.params["entity_span"] == list(expected_span(question, surface))
            if op in CHAR_OPS:  # a char edit always changes the text: no attempt is wasted
                assert r.params["attempt"] == 0
            json.dumps(r.params)  # must be serialisable for the manifest
            if question.rstrip().endswith(("?", "？")):
                assert r.text.rstrip().endswith(("?", "？")), (op, r.text)
                # the question mark is the last thing, not an earlier one left mid-text
                assert r.text.rstrip()[-1] in "?？"


@pytest.mark.parametrize("question,entity,surface", [c for c in CASES if c[2] not in NO_CHAR_EDIT])
def test_char_operators_make_one_edit_of_the_right_kind_inside_the_entity(question, entity, surface) -> None:
    span = expected_span(question, surface)
    for seed in SEEDS:
        key = f"q-{seed}"
        # char_add: one ASCII letter inserted between two letters (entity words here have >= 2 letters)
        new = corrupt_text(question, "char_add", entity=entity, seed=seed, key=key)
        old_w, new_w = split_edit(question, new, span)
        assert osa_distance(old_w, new_w) == 1 and len(new_w) == len(old_w) + 1
        ok = [
            j
            for j in range(1, len(new_w) - 1)
            if new_w[:j] + new_w[j + 1 :] == old_w
            and "a" <= new_w[j].lower() <= "z"
            and new_w[j - 1].isalpha()
            and new_w[j + 1].isalpha()
            and new_w[j].isupper() == (new_w[j - 1].isupper() and new_w[j + 1].isupper())
        ]
        assert ok, (old_w, new_w)

        # char_delete: one letter removed, every word keeps a letter
        new = corrupt_text(question, "char_delete", entity=entity, seed=seed, key=key)
        old_w, new_w = split_edit(question, new, span)
        assert osa_distance(old_w, new_w) == 1 and len(new_w) == len(old_w) - 1
        assert any(old_w[:j] + old_w[j + 1 :] == new_w and old_w[j].isalpha() for j in range(len(old_w)))
        assert all(any(c.isalpha() for c in w) for w in re.split(r"[\s\-']+", new_w) if w)

        # char_change: one letter replaced by a keyboard neighbour of its base letter, same case
        new = corrupt_text(question, "char_change", entity=entity, seed=seed, key=key)
        old_w, new_w = split_edit(question, new, span)
        assert osa_distance(old_w, new_w) == 1 and len(new_w) == len(old_w)
        (j,) = [i for i in range(len(old_w)) if old_w[i] != new_w[i]]
        assert new_w[j].lower() in KEYBOARD[base(old_w[j])]
        assert new_w[j].isupper() == old_w[j].isupper()

        # char_swap: one adjacent transposition of two different letters
        new = corrupt_text(question, "char_swap", entity=entity, seed=seed, key=key)
        old_w, new_w = split_edit(question, new, span)
        assert osa_distance(old_w, new_w) == 1 and len(new_w) == len(old_w)
        diff = [i for i in range(len(old_w)) if old_w[i] != new_w[i]]
        assert len(diff) == 2 and diff[1] == diff[0] + 1
        i = diff[0]
        assert new_w[i] == old_w[i + 1] and new_w[i + 1] == old_w[i]
        assert old_w[i].isalpha() and old_w[i + 1].isalpha() and old_w[i].lower() != old_w[i + 1].lower()


@pytest.mark.parametrize("question,entity,surface", CASES)
def test_word_and_sentence_operators_keep_other_words(question, entity, surface) -> None:
    for seed in SEEDS:
        key = f"w{seed}"
        rep = corrupt_text(question, "word_repeat", entity=entity, seed=seed, key=key)
        assert words(rep) == words(question) + words(surface)
        assert surface + " " + surface in rep or surface + surface in rep

        swp = corrupt_text(question, "word_swap", entity=entity, seed=seed, key=key)
        assert words(swp) == words(question)
        # only words move: punctuation and whitespace runs outside the entity stay in the same order
        outside_new, outside_old = swp.replace(surface, "Ω", 1), question.replace(surface, "Ω", 1)
        assert re.findall(r"[^\w\s]", outside_new) == re.findall(r"[^\w\s]", outside_old)
        assert re.findall(r"\s+", outside_new) == re.findall(r"\s+", outside_old)
        assert surface in swp and swp.index(surface) != question.index(surface)

        add = corrupt_text(question, "sent_add", entity=entity, seed=seed, key=key)
        restored = {add.replace(s + " ", "", 1) for s in SENTENCE_POOL if s + " " in add}
        restored |= {add.replace(" " + s, "", 1) for s in SENTENCE_POOL if " " + s in add}
        assert question in restored

        rpl = corrupt_text(question, "sent_replace", entity=entity, seed=seed, key=key)
        tokens = [w.lower() for w in re.findall(r"[^\W_]+", question.split(". ")[-1])]
        wh = next((w for w in tokens if w in {"what", "which", "who", "whose", "where", "when", "why", "how"}), "what")
        last = rpl.split(". ")[-1].strip()
        assert last.lower().startswith(wh) and last.endswith("?")
        assert surface.lower() not in rpl.lower()  # the category keyword is gone
        if ". " in question:  # earlier context sentences are kept
            assert rpl.startswith(question.split(". ")[0] + ". ")


def test_sent_add_appends_when_the_text_has_no_question_mark() -> None:
    q = "what bird is this"
    outs = [corrupt_text(q, "sent_add", entity="bird", seed=s, key="nb") for s in range(20)]
    assert any(o.startswith(q + " ") for o in outs) and any(o.endswith(" " + q) for o in outs)


def test_sent_add_after_goes_before_the_final_question() -> None:
    q = "I saw this at the market. What fruit is this?"
    for s in range(20):
        r = corrupt_text_with_params(q, "sent_add", entity="fruit", seed=s, key="m")
        sentence = r.params["sentence"]
        assert r.text in (f"{sentence} {q}", f"I saw this at the market. {sentence} What fruit is this?")


def test_sent_replace_on_an_already_generic_question_still_differs() -> None:
    out = corrupt_text("What is this?", "sent_replace", entity="this")
    assert out != "What is this?" and out.startswith("What") and out.endswith("?")
    out = corrupt_text("Which one is this?", "sent_replace", entity="one")
    assert out != "Which one is this?" and out.startswith("Which")


def test_whitespace_and_unicode_outside_the_edit_survive() -> None:
    q = "  Ist das ein Käfer,   oder eine 🐞 Spinne? "
    for op in TEXT_OPERATORS:
        for seed in range(3):
            out = corrupt_text(q, op, entity="Spinne", seed=seed, key="u")
            if op in CHAR_OPS or op == "word_repeat":
                assert out.startswith("  Ist das ein Käfer,   oder eine 🐞 ") and out.endswith("? ")
            if op == "word_swap":
                assert "🐞" in out and "Käfer,   oder" in out and out.endswith("? ")
            if op == "sent_add":
                assert q.strip() in out and out.startswith("  ") and out.endswith("? ")


# ---------------------------------------------------------------- determinism


def _outputs() -> dict[str, str]:
    return {
        f"{i}|{op}|{seed}": corrupt_text(q, op, entity=e, seed=seed, key=f"id{i}")
        for i, (q, e, surf) in enumerate(CASES)
        for op in TEXT_OPERATORS
        if not (op in CHAR_OPS[1:] and surf in NO_CHAR_EDIT)
        for seed in (0, 7)
    }


def test_same_seed_same_output_in_any_order_and_any_process() -> None:
    first = _outputs()
    assert _outputs() == first
    # reversed call order: no hidden shared RNG state
    rev = {k: corrupt_text(CASES[int(k.split("|")[0])][0], k.split("|")[1],
                           entity=CASES[int(k.split("|")[0])][1], seed=int(k.split("|")[2]),
                           key=f"id{k.split('|')[0]}") for k in reversed(list(first))}
    assert rev == first
    # the same calls in a fresh interpreter with another hash seed: only snapbench is imported there
    jobs = [[CASES[int(k.split("|")[0])][0], k.split("|")[1], CASES[int(k.split("|")[0])][1], int(k.split("|")[2]),
             f"id{k.split('|')[0]}"] for k in first]
    code = ("import json, sys; from snapbench.corruptions import corrupt_text; "
            "print(json.dumps([corrupt_text(q, op, entity=e, seed=s, key=k) for q, op, e, s, k in json.load(sys.stdin)]))")
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    proc = subprocess.run([sys.executable, "-c", code], input=json.dumps(jobs), capture_output=True, text=True, env=env,
                          check=True)
    assert dict(zip(first, json.loads(proc.stdout))) == first


def test_different_seeds_and_keys_give_different_outputs() -> None:
    for op in RANDOM_OPS:
        distinct = {corrupt_text(FISH, op, entity="fish", seed=s, key="q") for s in range(20)}
        # "fish" admits 3 transpositions and 2 word swaps; the other operators have many outcomes
        assert len(distinct) >= {"word_swap": 2, "char_swap": 3}.get(op, 4), (op, distinct)
        by_key = {corrupt_text(FISH, op, entity="fish", seed=0, key=f"q{k}") for k in range(20)}
        assert len(by_key) >= 2
        sample = [
            (q, e)
            for q, e, surf in CASES
            if not (op in CHAR_OPS[1:] and surf in NO_CHAR_EDIT)
            # word_swap has a choice only when the entity has a word on both sides
            and not (op == "word_swap" and not (words(q[: q.index(surf)]) and words(q[q.index(surf) + len(surf) :])))
        ]
        varied = sum(len({corrupt_text(q, op, entity=e, seed=s, key="x") for s in range(8)}) > 1 for q, e in sample)
        assert len(sample) >= 20 and varied >= len(sample) - 2, (op, varied, len(sample))


# ---------------------------------------------------------------- entity matching


@pytest.mark.parametrize(
    "question,entity,surface,how",
    [
        ("What kind of Fish is this?", "FISH", "Fish", "exact"),
        ("Is this shellfish or a fish?", "fish", "fish", "exact"),  # not inside "shellfish"
        ("Are these fishes?", "fish", "fishes", "plural"),
        ("Is this a fish?", "fishes", "fish", "plural"),
        ("Which berries are edible?", "berry", "berries", "plural"),
        ("Which berry is this?", "berries", "berry", "plural"),
        ("Are these knives sharp?", "knife", "knives", "plural"),
        ("What leaf is this?", "leaves", "leaf", "plural"),
        ("How many boxes are there?", "box", "boxes", "plural"),
        ("What are these mice?", "mouse", "mice", "plural"),
        ("Is this a retriever?", "golden retriever", "retriever", "last_word"),
        ("Are these retrievers?", "golden retriever", "retrievers", "last_word_plural"),
        ("What is this t-shirt made of?", "shirt", "shirt", "exact"),  # hyphen is a boundary
        ("Whose fish's fin is this?", "fish", "fish", "exact"),  # possessive is a boundary
        ("这是什么鱼？", "鱼", "鱼", "exact"),
        ("What kind of fish is this?", None, "fish", "fallback"),
        ("What breed is this dog?", None, "dog", "fallback"),
        ("Where was this photo taken?", None, "photo", "fallback"),
    ],
)
def test_find_entity_rules(question, entity, surface, how) -> None:
    s = question.rindex(surface)  # in these questions the intended match is the last occurrence
    assert find_entity(question, entity) == (s, s + len(surface))
    r = corrupt_text_with_params(question, "word_repeat", entity=entity)
    assert r.params["entity_match"] == how


@pytest.mark.parametrize(
    "question,entity",
    [
        ("What kind of fish is this?", "bird"),
        ("Is this shellfish?", "fish"),  # only inside another word
        ("Don't you know this?", "don"),  # "don't" is one word
        ("What is this?", None),  # nothing but stopwords
    ],
)
def test_entity_not_found_raises_and_never_edits_elsewhere(question, entity) -> None:
    with pytest.raises(EntityNotFoundError) as info:
        find_entity(question, entity)
    assert isinstance(info.value, ValueError)
    assert question in str(info.value)
    if entity is not None:
        assert repr(entity) in str(info.value)
    for op in TEXT_OPERATORS:
        with pytest.raises(EntityNotFoundError, match="query 'q9'"):
            corrupt_text(question, op, entity=entity, key="q9")


# ---------------------------------------------------------------- failures and retries


def test_operators_without_an_admissible_edit_raise() -> None:
    with pytest.raises(TextCorruptionError, match="'aa': no adjacent pair of different letters"):
        corrupt_text("Is this an aa?", "char_swap", entity="aa", key="k")
    assert corrupt_text("Is this an ox?", "char_swap", entity="ox") == "Is this an xo?"
    with pytest.raises(TextCorruptionError):
        corrupt_text("Is this plane an X?", "char_delete", entity="X")
    one_letter = corrupt_text("Is this plane an X?", "char_add", entity="X")
    old, new = split_edit("Is this plane an X?", one_letter, (17, 18))
    assert osa_distance(old, new) == 1 and new[new.index("X") - 1 : new.index("X")] != "X"
    with pytest.raises(TextCorruptionError):
        corrupt_text("fish fish?", "word_swap", entity="fish")  # only neighbour is identical
    with pytest.raises(TextCorruptionError):
        corrupt_text("Fish?", "word_swap", entity="fish")  # no neighbour at all


def test_retries_use_fresh_generators_then_raise() -> None:
    name = "test_identity_op"
    seen: list[float] = []

    @register_text_operator(name)
    def identity(text, span, rng):
        seen.append(float(rng.random()))
        return text, {}

    flaky_calls: list[int] = []

    @register_text_operator(name + "_flaky")
    def flaky(text, span, rng):
        flaky_calls.append(1)
        return (text if len(flaky_calls) == 1 else text.upper()), {"n": len(flaky_calls)}

    fixed_calls: list[object] = []

    @register_text_operator(name + "_fixed", random=False)
    def fixed(text, span, rng):
        fixed_calls.append(rng)
        return text, {}

    try:
        with pytest.raises(TextCorruptionError, match="unchanged in 1 attempt"):
            corrupt_text(FISH, name + "_fixed", entity="fish", key="r")
        assert fixed_calls == [None]  # no generator, no pointless retries
        with pytest.raises(TextCorruptionError, match="unchanged"):
            corrupt_text(FISH, name, entity="fish", key="r")
        assert len(seen) == MAX_ATTEMPTS and len(set(seen)) == MAX_ATTEMPTS
        r = corrupt_text_with_params(FISH, name + "_flaky", entity="fish", key="r")
        assert r.text == FISH.upper() and r.params["attempt"] == 1 and r.params["n"] == 2
    finally:
        for op in (name, name + "_flaky", name + "_fixed"):
            unregister_text_operator(op)


def test_registry() -> None:
    assert text_operators()[: len(TEXT_OPERATORS)] == TEXT_OPERATORS
    with pytest.raises(ValueError, match="already registered"):
        register_text_operator("char_add")(lambda text, span, rng: (text, {}))
    with pytest.raises(ValueError, match="unknown text operator 'nope'"):
        corrupt_text(FISH, "nope", entity="fish")
    with pytest.raises(ValueError):
        register_text_operator("bad name/")

    @register_text_operator("test_shout")
    def shout(text, span, rng):
        s, e = span
        return text[:s] + text[s:e].upper() + text[e:], {"shouted": text[s:e]}

    try:
        assert "test_shout" in text_operators()
        r = corrupt_text_with_params(FISH, "test_shout", entity="fish")
        assert r.text == "What kind of FISH is this?" and r.params["shouted"] == "fish"
    finally:
        unregister_text_operator("test_shout")
    assert "test_shout" not in text_operators()


def test_keyboard_map_matches_key_geometry() -> None:
    assert set(QWERTY_NEIGHBOURS) == set("abcdefghijklmnopqrstuvwxyz")
    for letter, near in QWERTY_NEIGHBOURS.items():
        assert set(near) == KEYBOARD[letter], letter
        assert len(set(near)) == len(near)


def test_sentence_pool() -> None:
    assert len(SENTENCE_POOL) >= 40 and len(set(SENTENCE_POOL)) == len(SENTENCE_POOL)
    for s in SENTENCE_POOL:
        assert s[0].isupper() and s.endswith(".") and "?" not in s and s.count(". ") == 0


def test_public_entry_point_and_bad_input() -> None:
    from snapbench.corruptions import corrupt_text as exported

    assert exported is corrupt_text
    with pytest.raises(TypeError, match="question must be a str"):
        corrupt_text(None, "char_add", entity="fish")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="entity must be a str"):
        corrupt_text(FISH, "char_add", entity=["fish"])  # type: ignore[arg-type]
    # a blank entity means "not given": the stopword fallback finds "fish"
    assert find_entity(FISH, "  ") == (13, 17)
