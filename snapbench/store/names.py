"""File and folder names shared by the stages (the one copy of each)."""

from __future__ import annotations

from ..core import targets as modes

QUERY_IDS = "query_ids.txt"
GALLERY_IDS = "gallery_ids.txt"
MANIFEST = "manifest.jsonl"
SKIPS = "skips.jsonl"
RUN_CONFIG = "run.json"
EMBEDDINGS_DIR = "embeddings"  # encode's OUT/embeddings, run's DIR/embeddings
PATHS_DIR = "paths"  # encode's OUT/paths
DROPPED_QUERIES = "dropped_queries.json"  # encode's and run's queries left out of every state
#: The four similarity paths of a dual encoder, in this order everywhere (weights, files, reports).
PATH_NAMES: tuple[str, str, str, str] = modes.PATHS  # snapbench.core.targets: the one table of paths and modes
RUN_SUFFIXES = (".run", ".trec")
GALLERY_STEM = "gallery"
MODALITIES = ("image", "text")
