"""The file contracts between the stages: every name, and one reader (and writer) per stage output.

Data flows load -> corrupt -> encode -> score -> fuse -> evaluate; each stage writes a folder the next
one reads.  Their names and formats live here, once, so that a producer and its consumers can never
disagree (one truncated-line rule for the JSONL a stage appends to, one id-list reader, one TREC float
format, both path-score layouts accepted by every reader).  The resume log of ``snapbench run``, not a
stage output, reads cut lines by its own rule (:mod:`snapbench.app.stages.resume`).

Each output folder is an object naming its files (:class:`CorruptDir`, :class:`EncodeDir`,
:class:`RunDir`); every command's ``run.json`` starts with its ``kind`` (:mod:`.folders`, which also
holds the one resume check).

``snapbench corrupt`` OUT (:func:`.jsonl.read_manifest`, :func:`.jsonl.read_skips`, :func:`read_run_json`)::

    OUT/run.json          seed, conditions, resolved severity grid, snapbench version (one JSON object)
    OUT/manifest.jsonl    one JSON object per output (at least ``id`` and ``condition``); appended
                          during the run, so a kill can cut the last line: an unparseable *last*
                          line is dropped (that output is simply redone), an unparseable line
                          elsewhere is an error
    OUT/skips.jsonl       one JSON object per skipped (query, condition); same last-line rule
    OUT/images/<condition file name>/<id>.png

``snapbench encode`` OUT::

    OUT/query_ids.txt, OUT/gallery_ids.txt                       (:func:`read_ids` / :func:`write_ids`)
    OUT/embeddings/gallery.{image,text}.npy                      (N x d)
    OUT/embeddings/<condition file name>.{image,text}.npy        (Q x d)     (:func:`find_embeddings`)
    OUT/paths/<condition file name>.{II,TT,IT,TI}.npy            (Q x N)     (:func:`find_path_scores`)

PATHS_DIR: the four similarity paths of each condition, either flat -- ``<cond>.II.npy`` ... -- or as
four sub-folders ``II/<cond>.npy`` ... (handy when each path came from one scoring run).  Both layouts
are read the same everywhere (``snapbench evaluate --mode``, ``snapbench moor --paths-dir``); one
condition in both layouts is an error.  Id lists come from the folder itself or, failing that,
from ``II/``.

SCORES_DIR (``snapbench moor`` writes it, ``snapbench evaluate`` reads it): one ``<cond>.npy`` (Q x N)
or one TREC run ``<cond>.run`` / ``<cond>.trec`` per condition, plus ``query_ids.txt`` and
``gallery_ids.txt``.  A condition's file name is its id with "/" as "__".

TREC (:func:`write_trec_run`, :func:`read_trec_run`, :func:`snapbench.store.trec.write_qrels`; qrels are read
and matched with the ids by :mod:`snapbench.data.qrels`, for the data loaders and ``evaluate`` alike):
run lines ``qid Q0 docid rank score tag`` -- scores written with ``repr(float(score))`` (the shortest
text that reads back to the same float64, so a float32 score round-trips exactly too); qrels lines
``qid 0 docid rel``.
"""

from __future__ import annotations

from .folders import (
    EMBEDDINGS_DIR,
    GALLERY_IDS,
    MANIFEST,
    PATH_NAMES,
    PATHS_DIR,
    QUERY_IDS,
    RUN_CONFIG,
    RUN_SUFFIXES,
    CompareDir,
    CorruptDir,
    EncodeDir,
    RunDir,
    check_resume,
    claim_output_dir,
    find_embeddings,
    find_ids,
    find_output_folder,
    find_path_scores,
    open_run_dir,
    output_kind,
    read_ids,
    read_run_json,
    refuse_output_folder,
    run_json_kind,
    write_ids,
    write_run_json,
)
from .trec import iter_trec_run, read_trec_run, write_trec_run

__all__ = [
    "find_output_folder",
    "refuse_output_folder",
    "CompareDir",
    "open_run_dir",
    "output_kind",
    "CorruptDir",
    "EMBEDDINGS_DIR",
    "EncodeDir",
    "GALLERY_IDS",
    "MANIFEST",
    "PATHS_DIR",
    "PATH_NAMES",
    "QUERY_IDS",
    "RUN_CONFIG",
    "RUN_SUFFIXES",
    "RunDir",
    "check_resume",
    "claim_output_dir",
    "find_embeddings",
    "find_ids",
    "find_path_scores",
    "iter_trec_run",
    "read_ids",
    "read_run_json",
    "read_trec_run",
    "run_json_kind",
    "write_ids",
    "write_run_json",
    "write_trec_run",
]
