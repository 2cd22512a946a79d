"""compare on runs whose gallery holds at most k items: overlap@k is 1 by construction for every model
(the clean top-k is the whole gallery), so its +0.0 differences say nothing -- compare says so, with the
wording run and evaluate use (snapbench.evaluate.stability.whole_gallery_notes), and only then."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from snapbench.app.compare import CompareOptions, compare_runs
from snapbench.app.stages import RunOptions, run_encoders

QUESTIONS = ["a red bicycle near the lake", "two cats on a sofa", "the old town at night", "a bowl of ramen",
             "snow on the mountain road", "my passport photo page"]


def _runs(root: Path, n_gallery: int) -> Path:
    data = root / "data"
    data.mkdir(parents=True)
    (data / "queries.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n"
                                                for i, q in enumerate(QUESTIONS)))
    captions = (QUESTIONS * 3)[:n_gallery]
    (data / "gallery.jsonl").write_text("".join(json.dumps({"id": f"g{i}", "caption": f"{c} ({i})"}) + "\n"
                                                for i, c in enumerate(captions)))
    opts = RunOptions(resamples=50, progress=False, use_cache=False, report=False, ks=(1, 5, 10),
                      conditions=["txt/char_swap", "txt/word_swap"])
    run_encoders(data / "queries.jsonl", ["toy", "toy"], root / "runs", opts, names=["a", "b"])
    return root / "runs"


@pytest.mark.parametrize("n_gallery,noted", [(8, ["overlap@10"]), (12, [])])
def test_an_overlap_over_the_whole_gallery_is_noted_by_compare(tmp_path, n_gallery, noted):
    res = compare_runs([_runs(tmp_path, n_gallery)], tmp_path / "cmp", CompareOptions(formats=["csv"]))
    said = [n for n in res.notes if "1 by construction" in n]
    if noted:
        assert said == [f"the gallery has {n_gallery} items: overlap@10 is 1 by construction (the top-k holds the "
                        "whole gallery) and says nothing about how far the ranking moved; use a smaller --k or "
                        "rbo / flip@1"]
    else:
        assert said == []
