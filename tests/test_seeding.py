import json
import subprocess
import sys

import numpy as np

from snapbench.core.seeding import derive_generator, image_rng, stable_hash, text_rng


def test_stable_hash_is_process_independent():
    # Python's hash() is salted per process; ours must not be.  Compare against a fresh interpreter
    # started with a different PYTHONHASHSEED.
    code = (
        "from snapbench.core.seeding import stable_hash, image_rng;"
        "print(stable_hash(0, 'q1', 'cropping', 2));"
        "print(image_rng(7, 'q1', 'cropping', 2).integers(0, 2**31, 4).tolist())"
    )
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={"PYTHONHASHSEED": str(s), "PATH": ""}).stdout
        for s in (1, 2)
    ]
    assert runs[0] == runs[1]
    lines = runs[0].split("\n")
    assert int(lines[0]) == stable_hash(0, "q1", "cropping", 2)
    assert json.loads(lines[1]) == image_rng(7, "q1", "cropping", 2).integers(0, 2**31, 4).tolist()


def test_every_part_matters():
    base = (0, "q1", "cropping", 2)
    variants = [(1, "q1", "cropping", 2), (0, "q2", "cropping", 2), (0, "q1", "mosaic", 2), (0, "q1", "cropping", 3)]
    h = stable_hash(*base)
    assert all(stable_hash(*v) != h for v in variants)
    # type-tagged: the string "1" and the int 1 are different parts
    assert stable_hash("1") != stable_hash(1)
    # separators: ("ab", "c") and ("a", "bc") must differ
    assert stable_hash("ab", "c") != stable_hash("a", "bc")


def test_generators_are_independent_instances():
    a = image_rng(0, "k", "op", 1)
    b = image_rng(0, "k", "op", 1)
    a.random(100)  # consuming one must not move the other
    assert b.random() == image_rng(0, "k", "op", 1).random()
    assert text_rng(0, "k", "op", 0).random() != text_rng(0, "k", "op", 1).random()
    before = np.random.get_state()[1].copy()
    derive_generator("x").random(10)
    assert np.array_equal(before, np.random.get_state()[1])  # global RNG untouched
