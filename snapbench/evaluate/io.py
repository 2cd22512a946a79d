"""What evaluation reads: score directories, qrels, query tags (file names, id lists, TREC parsing and
writing are the shared :mod:`snapbench.store`).

SCORES_DIR layouts
------------------
* ``.npy``: one Q x N score matrix per condition, file name = condition id with "/" -> "__"
  (``clean.npy``, ``img__motion_blur__s2.npy``, ``joint__compression+char_add__s3.npy``), plus
  ``query_ids.txt`` and ``gallery_ids.txt`` (one id per line: row and column order).  Files are
  opened with ``np.load(allow_pickle=False, mmap_mode="r")`` and read in row blocks.  Integer
  matrices are accepted; bool, complex, string and object arrays are not.  Per-path files
  ``<condition>.II.npy`` / ``.TT`` / ``.IT`` / ``.TI`` (or ``II/<condition>.npy`` ...) are used by
  retrieval modes (see ``modes``).  Operator names in file names are checked against the built-in
  ones (:func:`check_operator_names`): a case/underscore variant is an error with a did-you-mean, a
  name far from all of them is a user operator (warning).
* TREC runs: one ``<condition>.run`` or ``<condition>.trec`` per condition, lines
  ``qid Q0 docid rank score [tag]``.  Like trec_eval, the order comes from the score column (not the
  rank column); equal scores follow the gallery order.  ``query_ids.txt`` / ``gallery_ids.txt``
  are optional here: without them the ids are the sorted union of those in the runs and qrels.
  A query absent from a run retrieved nothing (an empty answer).

QRELS
-----
TREC qrels (``qid 0 docid rel``; rel > 0 = positive, graded when any rel > 1), or JSON
``{query_id: [gallery_id, ...]}`` (an empty list = zero-GT query) or
``{query_id: {gallery_id: grade}}``.  Decisions:

* a judged query id that is not in ``query_ids`` (a query without scores, e.g. dropped by
  ``snapbench encode``): left out with a warning and reported (``n_qrels_without_scores``); when no
  judged query has scores at all, an error (the id lists do not belong together);
* a gallery id that is not in ``gallery_ids``: error by default (such a positive can never be
  retrieved and would silently lower recall); ``unknown_items="drop"`` drops it with a warning;
* a query in ``query_ids`` that the qrels do not mention: zero-GT, with a warning (TREC qrels
  cannot spell out an empty judgement list, so this is the only consistent reading).

Every problem raises :class:`EvaluationInputError` naming the file and what is wrong.

This module gathers the readers: :mod:`.files` (score matrices, TREC runs, the error type),
:mod:`.qrels` (qrels, tags, groups) and :mod:`.scoresdir` (the folder).
"""

from __future__ import annotations

from ..store import read_ids
from .files import EvaluationInputError, RunRanking, load_score_matrix, read_run, write_run
from .qrels import load_qrels, load_tags, query_groups
from .scoresdir import ComposedScores, ScoresDir, check_operator_names

__all__ = [
    "ComposedScores",
    "EvaluationInputError",
    "RunRanking",
    "ScoresDir",
    "check_operator_names",
    "load_qrels",
    "load_score_matrix",
    "load_tags",
    "query_groups",
    "read_ids",
    "read_run",
    "write_run",
]
