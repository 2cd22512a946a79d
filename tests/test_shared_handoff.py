"""The local pool's hand-off of query variants: one recycled shared-memory block per query, written
variant by variant in the worker, mapped without a copy in the driver (run here in one process: the
worker function and the driver's pool are plain calls)."""

from __future__ import annotations

import gc
import mmap
import tracemalloc
from pathlib import Path

import cv2
import numpy as np
import pytest
from skimage import data

from snapbench.app.stages.sources import SharedTask, SourceTask, generate_sources, generate_sources_shared, take_shared
from snapbench.corruptions import register_image_operator, resolve_conditions, resolve_grid
from snapbench.corruptions.image import unregister_image_operator
from snapbench.engines.shm import SharedBlocks

SHM = Path("/dev/shm")
pytestmark = pytest.mark.skipif(not SHM.is_dir(), reason="maps blocks under /dev/shm")


@pytest.fixture(scope="module")
def query(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("q") / "q.png"
    cv2.imwrite(str(path), cv2.resize(data.astronaut(), (320, 240), interpolation=cv2.INTER_AREA)[..., ::-1])
    return path


def _task(path, sources=None, grid=None) -> SourceTask:
    grid = grid or resolve_grid(None)
    if sources is None:
        conds = resolve_conditions(None, joint=True, grid=grid)
        sources = tuple(dict.fromkeys(c.image_part.id if "image" in c.sides else "clean" for c in conds))
    return SourceTask(0, "q0", None if path is None else str(path), "What is this?", "astronaut", 3, sources,
                      ("clean", "txt/char_swap"), grid)


def _made(pool: SharedBlocks, task: SourceTask):
    """A worker's result for ``task``, given the block the driver's pool offers."""
    return generate_sources_shared(SharedTask(task, pool.offer()))


def _ours() -> set[str]:
    # blocks are named after the parent of the process that makes them (the driver, for a pool worker)
    import os

    return {p.name for p in SHM.iterdir() if p.name.startswith(f"snapbench{os.getppid()}_")}


def _base(a):
    """What an array's memory ultimately belongs to (through numpy views, the lease, memoryviews)."""
    while True:
        if isinstance(a, np.ndarray) and a.base is not None:
            a = a.base
        elif hasattr(a, "whole"):  # the driver's lease over a block
            a = a.whole
        elif isinstance(a, memoryview):
            a = a.obj
        else:
            return a


def test_images_arrive_unchanged_as_views_of_one_recycled_block(query):
    task = _task(query)
    direct = generate_sources(task)
    pool = SharedBlocks()
    try:
        first = take_shared(pool, _made(pool, task))
        assert first.images.keys() == direct.images.keys() and len(first.images) == 46
        assert first.texts == direct.texts and first.skips == direct.skips
        for key, img in first.images.items():
            assert np.array_equal(img, direct.images[key]), key
            assert img.flags.writeable and isinstance(_base(img), mmap.mmap)  # a view, no copy
        assert len({id(_base(a)) for a in first.images.values()}) == 1  # one block per query
        assert len({id(a.base) for a in first.images.values()}) == 1  # ... through one lease
        block = first.shared[0]
        assert pool.free == []  # the driver still holds views into it
        first.images["clean"][0, 0] = 255 - first.images["clean"][0, 0]  # writable (lands in the block)
        del first, img  # the loop variable is a view too
        gc.collect()
        assert pool.free == [block]  # its last view is gone: free again
        offered = pool.offer()
        assert offered.name == block
        second = take_shared(pool, generate_sources_shared(SharedTask(task, offered)))
        assert second.shared[0] == block  # written into the recycled block, over the write above
        assert all(np.array_equal(second.images[k], direct.images[k]) for k in direct.images)
        assert _ours() == {block}
    finally:
        pool.close()
    assert _ours() == set()
    assert np.array_equal(second.images["img/rotation/s1"], direct.images["img/rotation/s1"])  # still mapped


def test_a_block_too_small_is_replaced_and_an_unused_offer_returns(query, tmp_path):
    pool = SharedBlocks()
    try:
        small = take_shared(pool, _made(pool, _task(query, ("clean",))))
        block = small.shared[0]
        del small
        gc.collect()
        big = take_shared(pool, _made(pool, _task(query)))  # 46 images: the offer is too small
        assert big.shared[2] == block and big.shared[0] != block and block not in pool.sizes
        assert _ours() == {big.shared[0]}
        del big
        gc.collect()
        assert len(pool.free) == 1
        res = take_shared(pool, _made(pool, _task(tmp_path / "missing.png")))
        assert res.images == {} and "missing.png" in res.skips[0]["reason"]
        assert len(pool.free) == 1  # the offered block came back unused
    finally:
        pool.close()
    assert _ours() == set()


def grow(image, params):
    return cv2.resize(image, (image.shape[1] * 2, image.shape[0]), interpolation=cv2.INTER_NEAREST)


def test_an_image_larger_than_the_input_travels_through_the_pipe(query):
    register_image_operator("handoff_grow", apply=grow, grid={1: {}}, changes_size=True, replace=True)
    try:
        grid = resolve_grid(None)
        # the block holds two input-sized images; clean takes one, the doubled image does not fit
        task = _task(query, ("clean", "img/handoff_grow/s1"), grid)
        direct = generate_sources(task)
        pool = SharedBlocks()
        try:
            raw = _made(pool, task)
            assert isinstance(raw.images["img/handoff_grow/s1"], np.ndarray)  # did not fit the block
            assert isinstance(raw.images["clean"], tuple)  # (offset, shape) in the block
            got = take_shared(pool, raw)
            assert all(np.array_equal(got.images[k], direct.images[k]) for k in direct.images)
        finally:
            pool.close()
    finally:
        unregister_image_operator("handoff_grow")


def test_the_worker_holds_one_variant_at_a_time(tmp_path):
    # 46 variants go into the block as they are made: the worker's own arrays peak at a few image
    # sizes, where collecting them first held all 46 (the block is shared memory, not traced here)
    path = tmp_path / "big.png"
    cv2.imwrite(str(path), cv2.resize(data.astronaut(), (1024, 768), interpolation=cv2.INTER_CUBIC)[..., ::-1])
    task = _task(path)
    pool = SharedBlocks()
    try:
        take_shared(pool, _made(pool, task))  # warm caches and scratch buffers
        gc.collect()
        one = 768 * 1024 * 3
        tracemalloc.start()
        try:
            res = _made(pool, task)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert len(res.images) == 46 and peak < 8 * one, peak / one
        take_shared(pool, res)
    finally:
        pool.close()
