"""``snapbench run``: data -> variants -> encoder -> paths -> fusion -> evaluation -> report, one call.

:func:`run_benchmark` loads a dataset (:mod:`snapbench.data`), streams every query's variants from
the corruption API into an encoder (no image files; with ``workers > 1`` spawned processes corrupt
while the main process encodes), scores the four similarity paths, composes the retrieval modes,
fuses with MOOR and fixed-fusion baselines, and writes one report per mode in the schema of
``snapbench evaluate``::

    DIR/run.json                      what was run (dataset, encoder, seed, grid, conditions, modes)
    DIR/embeddings/gallery.{image,text}.npy
    DIR/embeddings/queries/<source>.{image,text}.npy   one row per query (all queries of the dataset)
    DIR/embeddings/queries/blocks.jsonl                finished query blocks (the resume log)
    DIR/dropped_queries.json          queries left out of every state, with the reason
    DIR/<MODE>/report.json            MODE in I2I, T2T, IT2IT, I2IT, T2IT (those the data + model allow)
    DIR/<MODE>/per_query.csv          query_id, condition, metric, value
    DIR/MOOR/report.json, DIR/MOOR/text_share.json
    DIR/fusion/<baseline>/report.json comb_sum, rrf over the available paths
    DIR/report.html (+ tables/, figures/) when the report extra is installed

Decisions:

* **Sources, not conditions, are encoded.**  A condition's query image comes from one *image
  source* (``clean`` for clean and text conditions, ``img/<op>/s<N>`` for image and joint ones) and
  its question from one *text source*; each source is generated and encoded once per query, so
  the 18 joint conditions cost no encoder time.
* **Resume at query-block granularity.**  Queries are processed in fixed blocks of
  :data:`BLOCK_QUERIES`; each finished block's embeddings are flushed to the per-source ``.npy``
  files and then recorded in ``blocks.jsonl`` (fsynced).  A killed run redoes only unfinished
  blocks; batches never cross block boundaries, so a resumed run encodes exactly the same batches
  as an uninterrupted one and ends with the same numbers.  Evaluation (seconds) is always redone.
* **Paired on the same queries.**  A query that cannot be produced under some evaluated condition
  (bad image, entity not found, a released file missing) is dropped from every state and listed.
* **Memory** is bounded by the batch and the embeddings: scores are computed per row block inside
  the evaluator (no Q x N matrix is ever held), gallery images are decoded batch by batch.
"""

from __future__ import annotations

from .plan import BLOCK_QUERIES, MODES, RunOptions, RunResult
from .run import run_benchmark

__all__ = ["RunOptions", "RunResult", "run_benchmark", "MODES", "BLOCK_QUERIES"]
