# ruff: noqa: E402  (imports after pytest.importorskip on purpose)
import hashlib
import pickle
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

nac = pytest.importorskip("nlpaug.augmenter.char")
naf = pytest.importorskip("nlpaug.flow")

from snapbench.corruptions import corrupt_text, corrupt_text_with_params, iter_variants
from snapbench.corruptions.text import get_text_operator
from snapbench.interop.nlpaug import SnapbenchAugmenter, register_nlpaug_operator

ROOT = Path(__file__).resolve().parents[1]
Q = "What kind of fish is this?"
QUESTIONS = [
    ("What kind of fish is this?", "fish"),
    ("Which mountain range is shown here?", "mountain range"),
    ("Where was this sandwich bought?", "sandwich"),
    ("What brand is this laptop?", "laptop"),
    ("Is this butterfly poisonous?", "butterfly"),
]


@pytest.fixture(scope="module", autouse=True)
def _registered():
    from snapbench.corruptions.text import unregister_text_operator

    register_nlpaug_operator("nlpaug_keyboard", nac.KeyboardAug(aug_char_max=1, aug_word_max=1), replace=True)
    register_nlpaug_operator("nlpaug_ocr", nac.OcrAug(), scope="question", replace=True)
    yield
    unregister_text_operator("nlpaug_keyboard")
    unregister_text_operator("nlpaug_ocr")


def test_snapbench_augmenter_in_nlpaug_flows():
    aug = SnapbenchAugmenter("char_swap", entity="fish", seed=3)
    key = hashlib.sha256(Q.encode()).hexdigest()
    expect = corrupt_text(Q, "char_swap", entity="fish", seed=3, key=key)
    assert aug.augment(Q) == [expect]
    assert aug.augment(Q) == [expect]  # the same text always gets the same edit
    # an entity edit followed by a sentence edit (entity=None: found by the fallback rule in the edited text)
    seq = naf.Sequential([aug, SnapbenchAugmenter("sent_add")])
    key2 = hashlib.sha256(expect.encode()).hexdigest()
    assert seq.augment(Q) == [corrupt_text(expect, "sent_add", key=key2)]
    assert naf.Sometimes([aug], aug_p=1.0).augment(Q) == [expect]
    assert aug.augment([Q, "Is this fish edible?"])[0] == expect
    fixed = SnapbenchAugmenter("char_add", entity="fish", key="q7")
    assert fixed.augment(Q) == [corrupt_text(Q, "char_add", entity="fish", key="q7")]


def test_snapbench_augmenter_errors():
    with pytest.raises(ValueError, match="unknown text operator"):
        SnapbenchAugmenter("nope")
    with pytest.raises(ValueError, match="not found"):
        SnapbenchAugmenter("char_swap", entity="zebra").augment(Q)
    assert SnapbenchAugmenter("char_swap", entity="zebra", errors="keep").augment(Q) == [Q]


def _reference(augmenter, text, seed):
    """nlpaug's documented way to be reproducible: seed the global RNGs, then augment."""
    random.seed(seed)
    np.random.seed(seed)
    out = augmenter.augment(text)
    return out[0] if isinstance(out, list) else out


def test_registered_operator_equals_nlpaug_seeded_the_global_way():
    for q, ent in QUESTIONS:
        res = corrupt_text_with_params(q, "nlpaug_keyboard", entity=ent, seed=2, key=q[:5])
        s, e = res.params["entity_span"]
        ref = _reference(nac.KeyboardAug(aug_char_max=1, aug_word_max=1), q[s:e], res.params["nlpaug_seed"])
        assert res.text == q[:s] + ref + q[e:]
        assert res.text[:s] == q[:s] and res.text[s + len(ref):] == q[e:]  # only the entity changed
        res2 = corrupt_text_with_params(q, "nlpaug_ocr", entity=ent, seed=2, key=q[:5])
        assert res2.text == _reference(nac.OcrAug(), q, res2.params["nlpaug_seed"])


def test_seeded_by_query_and_seed():
    outs = {corrupt_text(Q, "nlpaug_keyboard", entity="fish", seed=0, key=f"q{i}") for i in range(12)}
    assert len(outs) > 3
    assert corrupt_text(Q, "nlpaug_keyboard", entity="fish", seed=0, key="q1") == corrupt_text(
        Q, "nlpaug_keyboard", entity="fish", seed=0, key="q1")


def test_callers_global_random_state_is_untouched():
    random.seed(99)
    np.random.seed(99)
    expect_py = [random.random() for _ in range(3)]
    expect_np = np.random.random(3)
    random.seed(99)
    np.random.seed(99)
    a = random.random()
    b = np.random.random()
    corrupt_text(Q, "nlpaug_keyboard", entity="fish", key="x")
    corrupt_text(Q, "nlpaug_ocr", entity="fish", key="y")
    assert [a, random.random(), random.random()] == expect_py
    assert np.array_equal(np.r_[b, np.random.random(2)], expect_np)


def test_same_output_from_many_threads_as_sequentially():
    jobs = [(q, ent, f"k{i}") for i in range(8) for q, ent in QUESTIONS]
    seq = [corrupt_text(q, "nlpaug_keyboard", entity=e, key=k) for q, e, k in jobs]
    with ThreadPoolExecutor(4) as pool:
        par = list(pool.map(lambda j: corrupt_text(j[0], "nlpaug_keyboard", entity=j[1], key=j[2]), jobs))
    assert par == seq


def test_operator_pickles():
    op = get_text_operator("nlpaug_keyboard")
    clone = pickle.loads(pickle.dumps(op))
    rng = np.random.default_rng(1)
    assert clone(Q, (13, 17), np.random.default_rng(1)) == op(Q, (13, 17), rng)


def test_condition_and_variants():
    vs = list(iter_variants(None, Q, key="q1", entity="fish", conditions=["txt/nlpaug_keyboard"]))
    assert [v.condition for v in vs] == ["clean", "txt/nlpaug_keyboard"]
    assert vs[1].question == corrupt_text(Q, "nlpaug_keyboard", entity="fish", key="q1")


@pytest.mark.slow
def test_identical_in_another_process():
    code = (
        "import nlpaug.augmenter.char as nac, random\n"
        "random.seed(12345)\n"  # a different global state in the child must not matter
        "from snapbench.interop.nlpaug import register_nlpaug_operator\n"
        "from snapbench.corruptions import corrupt_text\n"
        "register_nlpaug_operator('nlpaug_keyboard', nac.KeyboardAug(aug_char_max=1, aug_word_max=1))\n"
        f"qs = {QUESTIONS!r}\n"
        "print('|'.join(corrupt_text(q, 'nlpaug_keyboard', entity=e, seed=4, key=q) for q, e in qs))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         env={"PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "7"}, check=True)
    here = "|".join(corrupt_text(q, "nlpaug_keyboard", entity=e, seed=4, key=q) for q, e in QUESTIONS)
    assert out.stdout.strip() == here


@pytest.mark.slow
def test_run_corruption_with_one_or_two_workers_writes_the_same_questions(tmp_path):
    """The registered nlpaug operator is shipped to spawned workers: --workers 2 == --workers 1,
    and the caller's global random state is what it was."""
    import json

    from snapbench.app.corrupt import run_corruption
    from snapbench.core.defaults import DEFAULT_DATA

    state = random.getstate()
    conds = ["txt/nlpaug_keyboard", "joint/motion_blur+nlpaug_keyboard/s1"]
    for workers in (1, 2):
        run_corruption(DEFAULT_DATA / "queries.jsonl", tmp_path / f"w{workers}", conditions=conds, workers=workers,
                       progress=False)
    assert random.getstate() == state
    lines = [sorted((tmp_path / f"w{w}" / "manifest.jsonl").read_text().splitlines()) for w in (1, 2)]
    assert lines[0] == lines[1]
    edited = [json.loads(x) for x in lines[0] if '"txt/nlpaug_keyboard"' in x]
    assert edited and all(e["text_params"] for e in edited)
