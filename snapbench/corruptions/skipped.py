"""Why a corrupt run produced nothing: every skipped query counted by cause, with the first of each.

``snapbench corrupt`` goes on past unreadable queries and records them in ``skips.jsonl``; when no
output at all was written that is an input error, and its message must say what went wrong with
*all* of them, not only the first ("3 of 7 queries have an image too large ..., 4 of 7 have an
unreadable image ...").  The failed images are loaded again here to get their errors as objects
(their type is the cause; their message keeps parameter references, so the command line shows its
flags): this runs only when the whole run failed, where every load fails fast.
"""

from __future__ import annotations

import os

from ..core.errors import InputError, arg
from ..store import CorruptDir, read_skips
from .io import ImageLoadError, image_problem, load_image
from .manifest import load_manifest

__all__ = ["nothing_written_error"]

#: image_problem -> how the message says it ("N of M queries <...>"), in the order the message lists
#: them; a file that cannot be read and one that cannot be decoded are both "unreadable" here
_CAUSES: dict[str, str] = {
    "too large": "have an image too large",
    "file not found": "have no image file",
    "cannot be read": "have an unreadable image",
    "cannot be decoded": "have an unreadable image",
    "other": "were skipped for another reason",
}


def nothing_written_error(manifest_path: str | os.PathLike, out_dir: str | os.PathLike, n_queries: int,
                          max_pixels: int) -> InputError:
    """The error for a run that wrote no output: the skipped queries counted by cause, each cause
    with its first query's own error (naming the file and, for a size, the pixel limit)."""
    skips = read_skips(out_dir)
    whole = {str(s.get("id")): str(s.get("reason", "unknown")) for s in skips if s.get("condition") is None}
    skips_file = CorruptDir(out_dir).skips
    if not whole:  # every (query, condition) failed on its own: their reasons are per condition
        first = skips[0].get("reason", "unknown") if skips else "no query produced an output"
        return InputError(f"no output could be written ({len(skips)} skipped conditions, listed in {skips_file}); "
                          f"the first: {first}")
    records = {r.id: r for r in load_manifest(manifest_path, on_warning=lambda _: None)}
    by_cause: dict[str, list[str]] = {}
    for qid, reason in whole.items():
        rec = records.get(qid)
        try:
            if rec is not None and rec.image is not None:
                load_image(rec.image, max_pixels=max_pixels)
        except ImageLoadError as exc:
            if len(whole) == 1 and n_queries == 1:
                return exc  # the one query's own error says it all
            by_cause.setdefault(_CAUSES[image_problem(exc)], []).append(exc.render(arg))  # keeps the references
        else:  # no image to blame (or readable now, changed since the run): the recorded reason
            by_cause.setdefault(_CAUSES["other"], []).append(f"query {qid!r}: {reason}")
    parts = [f"{len(by_cause[label])} of {n_queries} queries {label} (first: {by_cause[label][0]})"
             for label in dict.fromkeys(_CAUSES.values()) if label in by_cause]
    return InputError(f"no query could be read ({len(whole)} of {n_queries} skipped, listed in {skips_file}): "
                      + "; ".join(parts))
