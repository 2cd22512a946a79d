"""The smoke run the run/report/compare tests share (built once per session by the ``smoke_*`` fixtures
of conftest.py), and the user encoders the several-model tests write next to themselves.

The smoke run is ``snapbench run`` of the bundled demo (12 real photos and questions, 33 gallery items)
with the toy encoder and a second model (:data:`MIRROR`, ranking differently) on
:data:`SMOKE_CONDITIONS`, run as one several-encoder run: ``multi/toy`` and ``multi/mirror``.  Each
encoder folder of such a run is byte-for-byte the folder of a run of that encoder alone (pinned in
test_run_multi.py), so ``multi/toy`` is also "the toy run".  Tests read these folders and never write
into them; a test that changes a run copies it first (``shutil.copytree(smoke_run, tmp_path / "r")``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from snapbench.app.stages import RunOptions

# an image, a text and a joint condition (its parts included), a blur and a compression level
SMOKE_CONDITIONS = ["clean", "img/motion_blur/s2", "img/compression/s3", "txt/char_swap", "txt/char_add",
                    "joint/compression+char_add/s3"]
SMOKE_RESAMPLES = 200
# `snapbench run` flags of a quick command-line run: few resamples, no report, no progress, no cache
FAST = ["--resamples", "100", "--no-report", "--no-progress", "--no-cache"]

# The toy features reversed and scaled: a second model that ranks differently from toy.  SlowMirror
# sleeps per image, for tests that stop a run while it encodes.
MIRROR = """
import time
from snapbench.models import get_encoder

class Mirror:
    '''The toy features reversed and scaled: a second model that ranks differently from toy.'''
    name = fingerprint = "mirror-v1"
    modalities = frozenset({"image", "text"})
    delay = 0.0

    def __init__(self):
        self.inner = get_encoder("toy")

    def encode_images(self, xs):
        time.sleep(self.delay * len(xs))
        return self.inner.encode_images(xs)[:, ::-1] * 2.0 + 0.1

    def encode_texts(self, xs):
        return self.inner.encode_texts(xs)[:, ::-1]

class SlowMirror(Mirror):
    delay = 0.03
"""
MIRROR_MODULE = "snapbench_cmp_mirror"
MIRROR_SPEC = f"{MIRROR_MODULE}:Mirror"


def smoke_options(**changes: Any) -> RunOptions:
    """The options of the smoke run (no report, no progress, no embedding cache), with ``changes``."""
    base: dict[str, Any] = dict(conditions=SMOKE_CONDITIONS, joint=False, resamples=SMOKE_RESAMPLES, report=False,
                                progress=False, use_cache=False)
    return RunOptions(**{**base, **changes})


def write_mirror(folder: Path) -> Path:
    """Write :data:`MIRROR` as ``folder/snapbench_cmp_mirror.py`` (import it with conftest's ``user_code``)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{MIRROR_MODULE}.py"
    path.write_text(MIRROR)
    return path
