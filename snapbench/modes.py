"""The retrieval modes and their similarity paths: the one table every layer reads.

Query = (image, question); gallery item = (image, caption).  A dual encoder gives four paths:
``II`` = sim(query image, gallery image), ``TT`` = sim(question, caption), ``IT`` = sim(query image,
caption), ``TI`` = sim(question, gallery image).  The modes are fixed combinations of them (the
SnapBench names in ``MODE_LABELS``): I→I = II; T→T = TT; IT→IT = (II + TT)/2; I→IT = (II + IT)/2;
T→IT = (TI + TT)/2.
"""

from __future__ import annotations

__all__ = ["PATHS", "PATH_SIDES", "MODES", "MODE_LABELS"]

#: The four similarity paths, in the order files, tables and weight columns use.
PATHS: tuple[str, str, str, str] = ("II", "TT", "IT", "TI")

#: Which side of the query and of the gallery item each path compares.
PATH_SIDES: dict[str, tuple[str, str]] = {
    "II": ("image", "image"),
    "TT": ("text", "text"),
    "IT": ("image", "text"),
    "TI": ("text", "image"),
}

#: Mode -> {path: weight}; the scores of a mode are the weighted sum of its paths.
MODES: dict[str, dict[str, float]] = {
    "I2I": {"II": 1.0},
    "T2T": {"TT": 1.0},
    "IT2IT": {"II": 0.5, "TT": 0.5},
    "I2IT": {"II": 0.5, "IT": 0.5},
    "T2IT": {"TI": 0.5, "TT": 0.5},
}

#: The SnapBench names of the modes (tables, figures).
MODE_LABELS: dict[str, str] = {"I2I": "I→I", "T2T": "T→T", "IT2IT": "IT→IT", "I2IT": "I→IT", "T2IT": "T→IT"}
