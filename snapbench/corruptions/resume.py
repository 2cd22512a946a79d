"""Resuming a corruption run: what a folder's outputs depend on, and which outputs are kept.

* :func:`corrupt_fingerprint` -- everything the bytes of a corrupt folder depend on: the seed, the
  resolved grid, the image format, the OpenCV and NumPy majors (warps, resizes, JPEG and the
  Generator streams behind every sampled parameter may change there), the text renderer (font
  file, Pillow, FreeType: watermark and ui_elements pixels), the algorithm revision of each image
  operator of the folder's conditions, and the severity target (``severity_target``, present only
  when the run has one: a target changes every image) and ``measure: false`` (present only when
  measuring is off: a folder's lines are measured all or none).  Both keys are absent in the
  defaults, so folders written before they existed resume.  ``run.json`` records it, and
  :func:`snapbench.store.check_resume` (the one resume check of every command) refuses a rerun
  whose fingerprint differs, naming each differing entry.
* A ``run.json`` written before fingerprints existed (no ``kind``) is upgraded in place by
  :func:`upgrade_legacy_run_json`: its recorded seed, grid, format and versions become a
  fingerprint, so such folders still resume (and are refused for the same reasons as before).
* :func:`kept_outputs` -- the manifest lines a rerun keeps: their file still has the recorded sha256
  and the query's inputs are unchanged (``input_sha256``); a line cut by a kill is dropped, and so
  is, when measuring, a line written before measuring existed (no ``measured`` key: redone, the
  same bytes, now measured).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.conditions import parse_condition
from ..core.errors import ConfigError, arg
from ..core.jsonable import dumps
from ..store import CorruptDir, read_jsonl_records, read_run_json, write_run_json
from ..store.atomic import write_bytes_atomic
from .image import image_operator_revisions
from .image.add import renderer_versions
from .manifest import QueryRecord

__all__ = ["RunConfigError", "LEGACY_REVISION", "revision_fingerprint", "assumed_revisions", "corrupt_fingerprint", "measure_fingerprint", "upgrade_legacy_run_json", "kept_outputs", "clear_previous", "remove_stale_temps",
           "input_fingerprint", "dumps_line"]


class RunConfigError(ConfigError):
    """An output folder holds a run this one may not resume (another fingerprint, or another command's)."""


def _major(version: Any) -> int | None:
    head = str(version or "").split(".")[0]
    return int(head) if head.isdigit() else None


def _library_versions() -> dict[str, Any]:
    import cv2
    import numpy as np

    return {"opencv_major": _major(cv2.__version__), "numpy_major": _major(np.__version__),
            **{f"text_renderer.{k}": v for k, v in renderer_versions().items()}}


#: The revision of every image operator before revisions were recorded: a folder whose fingerprint
#: holds no ``revision.<op>`` entry was made with it.
LEGACY_REVISION = 1


def revision_fingerprint(ops: Iterable[str], recorded: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{"revision.<op>": n}`` for the image operators ``ops`` (sorted by name), the entries ``corrupt``
    and ``run`` add to their fingerprints: a registered operator's revision; for one not registered now
    (it produces nothing in this run) the revision ``recorded`` (the folder's fingerprint) holds, or
    :data:`LEGACY_REVISION` when it holds none."""
    names = sorted({op for op in ops if op})
    now = image_operator_revisions(names)
    recorded = recorded or {}
    return {f"revision.{op}": now[op] if op in now else recorded.get(f"revision.{op}", LEGACY_REVISION)
            for op in names}


def assumed_revisions(fingerprint: Mapping[str, Any]) -> dict[str, Any]:
    """What a folder written before operator revisions existed stands for, as
    :func:`snapbench.store.check_resume`'s ``assume``: :data:`LEGACY_REVISION` for every
    ``revision.<op>`` entry of ``fingerprint``."""
    return {k: LEGACY_REVISION for k in fingerprint if k.startswith("revision.")}


def _revisions(condition_ids: Iterable[str], recorded: Mapping[str, Any]) -> dict[str, Any]:
    return revision_fingerprint((parse_condition(c).image_operator for c in condition_ids), recorded)


def _grid_sha256(grid: Any) -> str:
    # run.json holds the grid itself; the fingerprint only needs to tell two grids apart
    text = json.dumps(grid, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def corrupt_fingerprint(seed: int, grid: Mapping[str, Any], image_format: str, condition_ids: Iterable[str],
                        recorded: Mapping[str, Any] | None = None, *, measure: bool = True,
                        target: Any = None) -> dict[str, Any]:
    """The fingerprint of a corrupt folder holding ``condition_ids`` (see the module docstring);
    ``grid`` as :func:`~.plan.grid_json` writes it (the fingerprint holds its sha256).  Flat keys, so
    a refusal names what differs (``revision.motion_blur 1 (this run: 2)``); ``recorded`` is the
    folder's recorded fingerprint (the revision of an operator no longer registered is taken from it);
    ``measure`` and ``target`` (a :class:`~.target.SeverityTarget`) add their keys only when not the
    defaults (on; none)."""
    fp = {"seed": int(seed), "grid": _grid_sha256(grid), "image_format": image_format, **_library_versions(),
          **_revisions(condition_ids, recorded or {})}
    return {**fp, **measure_fingerprint(measure, target)}


def measure_fingerprint(measure: bool, target: Any) -> dict[str, Any]:
    """The fingerprint entries of measuring and of a severity target, each only where it is not the
    default: ``severity_target`` (its spec; with the tolerance and evaluation budget when those are
    not the defaults) and ``measure: false``.
    Shared by ``corrupt`` and ``run``."""
    out: dict[str, Any] = {}
    if target is not None:
        t = target.to_json()
        # the spec alone when the search runs with its defaults, so a refusal shows both values in full
        default = target.tol is None and t["max_evals"] == type(target).max_evals
        out["severity_target"] = target.spec if default else (
            f"{target.spec} (tolerance {t['tolerance']:g}, max_evals {t['max_evals']})")
    if not measure:
        out["measure"] = False
    return out


def _legacy_fingerprint(cfg: Mapping[str, Any]) -> dict[str, Any]:
    """The fingerprint an old run.json stands for.  Versions it did not record were not checked then
    and are taken as today's; operator revisions did not exist (all were 1)."""
    now = _library_versions()
    fp: dict[str, Any] = {"seed": cfg.get("seed"), "grid": _grid_sha256(cfg.get("grid")),
                          "image_format": cfg.get("image_format", "png")}
    for key, field in (("opencv_major", "opencv_version"), ("numpy_major", "numpy_version")):
        fp[key] = _major(cfg[field]) if cfg.get(field) else now[key]
    renderer = cfg.get("text_renderer")
    fp.update({k: (renderer.get(k.split(".", 1)[1]) if isinstance(renderer, dict) else v)
               for k, v in now.items() if k.startswith("text_renderer.")})
    ops = sorted({c.image_operator for c in map(parse_condition, cfg.get("conditions", [])) if c.image_operator})
    return {**fp, **{f"revision.{op}": LEGACY_REVISION for op in ops}}


def upgrade_legacy_run_json(folder: Path) -> None:
    """Give a corrupt folder's run.json from before fingerprints its ``kind`` and fingerprint (in place,
    every recorded field kept), so :func:`snapbench.store.check_resume` can compare it."""
    cfg = read_run_json(folder, kind="corrupt")
    if cfg is None or isinstance(cfg.get("fingerprint"), dict):
        return
    body = {k: v for k, v in cfg.items() if k not in ("kind", "schema_version")}
    write_run_json(folder, "corrupt", {**body, "fingerprint": _legacy_fingerprint(cfg)})


def dumps_line(obj: Any) -> str:
    """One JSONL line of the manifest or skips (strict JSON, UTF-8 kept)."""
    return dumps(obj, indent=None)


def _sha256_file(path: Path) -> str | None:
    try:
        with open(path, "rb") as fh:
            return hashlib.file_digest(fh, "sha256").hexdigest()
    except OSError:
        return None


def input_fingerprint(rec: QueryRecord) -> str:
    """sha256 over what a query's outputs depend on besides seed and grid: the image file's bytes,
    the question and the entity (not the path, so a moved data set stays valid)."""
    image_sha = _sha256_file(rec.image) if rec.image is not None else None
    payload = json.dumps([image_sha, rec.question, rec.entity], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def kept_outputs(folder: CorruptDir, seed: int, fingerprints: Mapping[str, str], *,
                 measure: bool = True) -> dict[tuple[str, str], dict[str, Any]]:
    """The verified lines of ``manifest.jsonl`` by (query id, condition); the manifest is rewritten
    with exactly those (without a possibly cut last line).  With ``measure``, a line without the
    ``measured`` key (written before measuring existed) is not kept."""
    kept: dict[tuple[str, str], dict[str, Any]] = {}
    sha_cache: dict[str, str | None] = {}
    for line in read_jsonl_records(folder.manifest, required=("id", "condition"), what="manifest record"):
        if line.get("seed") != int(seed):  # possible only if run.json was deleted or edited
            raise RunConfigError(f"holds outputs made with seed {line.get('seed')} (this run: {int(seed)}); use a new "
                              f"output folder, or {arg('force')} to discard them", path=folder.manifest, param="force")
        qid = str(line["id"])
        if qid in fingerprints and line.get("input_sha256") != fingerprints[qid]:
            continue  # the image file, question or entity changed since: redo the query
        if measure and "measured" not in line:
            continue  # from before measuring: redone (same bytes), measured
        rel = line.get("path")
        if rel is not None:
            if rel not in sha_cache:
                sha_cache[rel] = _sha256_file(folder.root / rel)
            if sha_cache[rel] is None or sha_cache[rel] != line.get("sha256"):
                continue
        kept[(qid, str(line["condition"]))] = line
    data = "".join(dumps_line(v) + "\n" for v in kept.values()).encode("utf-8")
    write_bytes_atomic(folder.manifest, data, fsync=True)
    return kept


def clear_previous(folder: CorruptDir) -> None:
    """``force``: remove what an earlier run wrote (only our files and condition folders)."""
    for path in (folder.manifest, folder.skips, folder.run_json):
        path.unlink(missing_ok=True)
    if not folder.images.is_dir():
        return
    for sub in folder.images.iterdir():
        try:
            parse_condition(sub.name)
        except ConfigError:
            continue
        if sub.is_dir():
            shutil.rmtree(sub)
    try:
        folder.images.rmdir()
    except OSError:
        pass


def remove_stale_temps(folder: CorruptDir) -> None:
    """Delete temp files a killed run left behind (write_bytes_atomic names them ``.<name>.*.tmp``)."""
    images = folder.images
    dirs = [folder.root] + ([p for p in images.iterdir() if p.is_dir()] if images.is_dir() else [])
    for d in dirs:
        for tmp in d.glob(".*.tmp"):
            tmp.unlink(missing_ok=True)
