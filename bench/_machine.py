"""One description of the machine for every RESULTS_*.md (bench scripts run as `python bench/x.py`)."""

from __future__ import annotations

import os
import platform
import subprocess

import numpy as np


def machine() -> str:
    """CPU model (lscpu), logical CPUs, OS, and the versions that move the numbers."""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        model = next((ln.split(":", 1)[1].strip() for ln in out.splitlines() if ln.startswith("Model name")), "?")
    except OSError:
        model = platform.processor() or "?"
    try:
        import cv2

        opencv = f", OpenCV {cv2.__version__}"
    except ImportError:
        opencv = ""
    return (f"{model}, {os.cpu_count()} logical CPUs, {platform.system()} {platform.release()}, "
            f"Python {platform.python_version()}, NumPy {np.__version__}{opencv}")


# SPEC §2 times two primitives on the anchor machine (where the authors' figures were measured); timing
# them here in the same run tells how much slower or faster this machine is, so anchors can be scaled.
REFERENCE_PRIMITIVES_MS = {"exact GaussianBlur sigma 10, 1024x768": 16.0, "2.4M standard normals (numpy)": 19.0}


def timed_ms(fn, repeats: int) -> float:
    """Median wall time of ``fn()`` in ms over ``repeats`` runs, after one warm-up call (caches, JIT)."""
    import statistics
    import time

    fn()
    ts = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def reference_primitives(repeats: int = 7) -> tuple[dict[str, float], float]:
    """Median ms of SPEC §2's two reference primitives here (one thread) and the geometric-mean factor
    (this machine's time / the anchor machine's; > 1 means slower)."""
    import cv2

    cv2.setNumThreads(1)
    rng = np.random.default_rng(0)
    probe = rng.integers(0, 256, size=(768, 1024, 3), dtype=np.uint8)
    here = {
        "exact GaussianBlur sigma 10, 1024x768": timed_ms(lambda: cv2.GaussianBlur(probe, (0, 0), 10.0), repeats),
        "2.4M standard normals (numpy)": timed_ms(lambda: rng.standard_normal(2_359_296), repeats),
    }
    factor = float(np.exp(np.mean([np.log(here[k] / v) for k, v in REFERENCE_PRIMITIVES_MS.items()])))
    return here, factor
