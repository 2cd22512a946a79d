"""``snapbench run``: data -> variants -> encoder(s) -> paths -> fusion -> evaluation -> report, one call.

:func:`run_benchmark` loads a dataset (:mod:`snapbench.data`), streams every query's variants from
the corruption API into an encoder (no image files; with ``workers > 1`` spawned processes corrupt
while the main process encodes), scores the four similarity paths, composes the retrieval modes,
fuses with MOOR and fixed-fusion baselines, and writes one report per mode in the schema of
``snapbench evaluate``.  The run folder's layout is :class:`snapbench.store.RunDir` (the one
description of it).  :func:`run_encoders` runs several encoders on one corruption pass, one run
folder each (``DIR/<name>/``), listed in ``DIR/run.json`` under ``encoder_runs``.

The run is a chain of stages, each a module with one entry point and a typed hand-off:

1. plan -- :func:`.plan.plan_run` -> :class:`.plan.RunPlan` (modes, conditions, variant sources);
2. resume -- :func:`.resume.open_run` -> :class:`.resume.RunState` (run.json, finished query blocks);
3. encode gallery -- :func:`.gallery.encode_gallery` -> :class:`.gallery.GalleryEmbeddings` (with
   ``workers > 1``, while the workers start and corrupt the first queries of stage 4);
4. encode queries -- :func:`.queries.encode_queries` -> :class:`.queries.QueryEmbeddings` per encoder
   (one variant stream feeds every encoder);
5. score -- :func:`.score.score_targets` -> :class:`.score.Scores` (each target's scores per row block);
6. evaluate -- :func:`.evaluation.evaluate_all` -> the report of each target (a mode, MOOR, a baseline);
7. report -- :func:`.report.finish_run` -> :class:`RunResult` (final run.json, report.html).

:mod:`.run` chains them; :mod:`.sources` is the variant stream; :mod:`.encoders` opens the encoders (the
embedding cache included) and holds the one encoding loop, ``encode_batches`` (shared with ``snapbench encode``).

Decisions:

* **Sources, not conditions, are encoded.**  A condition's query image comes from one *image
  source* (``clean`` for clean and text conditions, ``img/<op>/s<N>`` for image and joint ones) and
  its question from one *text source*; each source is generated and encoded once per query, so
  the 18 joint conditions cost no encoder time.
* **One corruption pass for every encoder.**  Each query is corrupted once into the sources some
  encoder still needs and each encoder takes its own: its batches, files and reports are those of
  a run of it alone.
* **The gallery overlaps the workers' start.**  Starting the pool's interpreters and the first
  queries' corruption take about a second in which the main process would wait; the gallery is
  encoded then (the ``meanwhile`` hook of :func:`snapbench.engines.ordered_map`).  The data still
  flows one way: the queries' embeddings are taken only once the gallery's are done, and at most
  one window of query results waits in shared memory meanwhile.
* **Resume at query-block granularity, per encoder.**  Queries are processed in fixed blocks of
  :data:`BLOCK_QUERIES`; each finished block's embeddings are flushed to the per-source ``.npy``
  files and then recorded in the encoder's ``blocks.jsonl`` (fsynced).  A killed run redoes only
  unfinished blocks; batches never cross block boundaries, so a resumed run encodes exactly the same
  batches as an uninterrupted one and ends with the same numbers.  Evaluation (seconds) is redone,
  unless the folder holds the run complete with the same evaluation settings.
* **Paired on the same queries.**  A query that cannot be produced under some evaluated condition
  (bad image, entity not found, a released file missing) is dropped from every state and listed.
* **Memory** is bounded by the batch and the embeddings: scores are computed per row block inside
  the evaluator (no Q x N matrix is ever held), gallery images are decoded batch by batch.
"""

from __future__ import annotations

from typing import Any

from .options import BLOCK_QUERIES, RunOptions, RunResult, RunSetResult

__all__ = ["RunOptions", "RunResult", "RunSetResult", "run_benchmark", "run_encoders", "MODES", "BLOCK_QUERIES"]

# The options are imported eagerly and the run lazily: the command line reads RunOptions' defaults
# for its flags when it starts, which must not import the whole pipeline (encoders, evaluation, OpenCV).
_LAZY: dict[str, str] = {"MODES": "plan", "run_benchmark": "run", "run_encoders": "run"}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
