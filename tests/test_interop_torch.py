# ruff: noqa: E402  (imports after pytest.importorskip on purpose)
import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from PIL import Image
from skimage import data
from torch.utils.data import DataLoader

from snapbench.app.corrupt import run_corruption
from snapbench.core.errors import ConfigError
from snapbench.corruptions import corrupt_image, corrupt_text
from snapbench.interop.torch import (
    CorruptedQueries,
    CorruptedQueriesIterable,
    SnapbenchTransform,
    collate_queries,
)

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "snapbench" / "assets" / "demo" / "queries.jsonl"
CONDS = ["clean", "img/scribble/s2", "img/cropping/s3", "txt/char_swap", "joint/low_light+word_swap/s1"]


@pytest.fixture(scope="module")
def corrupt_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("corrupt")
    run_corruption(DEMO, out, seed=5, conditions=CONDS, progress=False)
    written = {}
    for line in (out / "manifest.jsonl").read_text().splitlines():
        rec = json.loads(line)
        # decode the PNG with Pillow (an independent decoder) back to pixels
        pixels = np.asarray(Image.open(io.BytesIO((out / rec["path"]).read_bytes())).convert("RGB"))
        written[(rec["id"], rec["condition"])] = (pixels, rec["question"])
    return written


def _check_same(items, written):
    # `corrupt` also writes the parts of a joint condition (for additivity); the dataset yields
    # exactly the conditions asked for
    asked = {c for _, c in ((it["id"], it["condition"]) for it in items)}
    written = {k: v for k, v in written.items() if k[1] in asked}
    got = {}
    for it in items:
        img = it["image"]
        img = img.numpy() if isinstance(img, torch.Tensor) else img
        got[(it["id"], it["condition"])] = (img, it["question"])
    assert set(got) == set(written)
    for k, (img, q) in got.items():
        assert q == written[k][1], k
        assert img.dtype == np.uint8 and np.array_equal(img, written[k][0]), k


def test_dataloader_with_two_workers_equals_snapbench_corrupt(corrupt_run):
    ds = CorruptedQueries(DEMO, CONDS, seed=5)
    assert len(ds) == 12 * len(CONDS)
    loader = DataLoader(ds, batch_size=4, shuffle=True, num_workers=2, collate_fn=collate_queries,
                        generator=torch.Generator().manual_seed(0))
    _check_same([it for batch in loader for it in batch], corrupt_run)


def test_iterable_dataset_shards_queries_without_changing_items(corrupt_run):
    ds = CorruptedQueriesIterable(DEMO, CONDS, seed=5)
    for workers in (0, 2):
        loader = DataLoader(ds, batch_size=3, num_workers=workers, collate_fn=collate_queries)
        items = [it for batch in loader for it in batch]
        assert len(items) == len(ds) == 12 * len(CONDS)
        _check_same(items, corrupt_run)


def test_as_tensor_gives_chw_uint8(corrupt_run):
    ds = CorruptedQueries(DEMO, ["img/scribble/s2"], seed=5, as_tensor=True)
    it = ds[0]
    assert isinstance(it["image"], torch.Tensor) and it["image"].dtype == torch.uint8
    hwc = it["image"].permute(1, 2, 0).numpy()
    assert np.array_equal(hwc, corrupt_run[(it["id"], "img/scribble/s2")][0])


def test_skips_like_corrupt(tmp_path):
    img = tmp_path / "a.png"
    Image.fromarray(data.astronaut()[::8, ::8]).save(img)
    (tmp_path / "q.jsonl").write_text(
        json.dumps({"id": "ok", "image": "a.png", "question": "What kind of fish is this?", "entity": "fish"}) + "\n"
        + json.dumps({"id": "bad", "image": "a.png", "question": "What is this?", "entity": "zebra"}) + "\n"
    )
    ds = CorruptedQueries(tmp_path / "q.jsonl", ["clean", "txt/char_add"])
    assert [(ds[i]["id"], ds[i]["condition"]) for i in range(len(ds))] == [
        ("ok", "clean"), ("ok", "txt/char_add"), ("bad", "clean")]
    assert ds.skipped[0]["id"] == "bad" and "zebra" in ds.skipped[0]["reason"]
    assert ds[1]["question"] == corrupt_text("What kind of fish is this?", "char_add", entity="fish", key="ok")
    with pytest.raises(ConfigError, match="unknown image operator 'nope'"):
        CorruptedQueries(tmp_path / "q.jsonl", ["img/nope/s1"])


def test_transform_on_arrays_pil_and_tensors():
    photo = np.ascontiguousarray(data.chelsea()[::3, ::3])
    t = SnapbenchTransform("scribble", 2, seed=1)
    key = hashlib.sha256(f"{photo.shape[0]}x{photo.shape[1]}x3:".encode() + photo.tobytes()).hexdigest()
    ref = corrupt_image(photo, "scribble", 2, seed=1, key=key)
    assert np.array_equal(t(photo), ref)
    assert np.array_equal(np.asarray(t(Image.fromarray(photo))), ref)
    chw = torch.from_numpy(photo.transpose(2, 0, 1).copy())
    out = t(chw)
    assert out.shape == chw.shape and out.dtype == torch.uint8
    assert np.array_equal(out.permute(1, 2, 0).numpy(), ref)
    # a different image gets a different key; a given key overrides the content key
    assert np.array_equal(t(photo, key="q1"), corrupt_image(photo, "scribble", 2, seed=1, key="q1"))
    assert np.array_equal(SnapbenchTransform("scribble", 2, seed=1, key="q1")(photo), t(photo, key="q1"))
    with pytest.raises(ValueError, match=r"no severity 7 \(levels: 1, 2, 3\)"):
        SnapbenchTransform("scribble", 7)
    with pytest.raises(ValueError, match="3xHxW uint8"):
        t(torch.zeros(3, 4, 4))


def test_transform_in_a_dataloader_does_not_depend_on_workers():
    photos = [np.ascontiguousarray(p()[::6, ::6, :3]) for p in (data.astronaut, data.chelsea, data.coffee, data.rocket)]

    class Imgs(torch.utils.data.Dataset):
        def __init__(self):
            self.t = SnapbenchTransform("mosaic", 3, seed=2)

        def __len__(self):
            return len(photos)

        def __getitem__(self, i):
            return self.t(torch.from_numpy(photos[i].transpose(2, 0, 1).copy()))

    a = [x for b in DataLoader(Imgs(), batch_size=1, num_workers=0) for x in b]
    b = [x for b in DataLoader(Imgs(), batch_size=1, num_workers=2) for x in b]
    assert all(torch.equal(x, y) for x, y in zip(a, b))
