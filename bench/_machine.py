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
