"""Contact sheet of one query: the clean image and every image condition as labelled thumbnails.

Layout: a first row with the clean image, then one row per image operator with one column per
severity (15 rows x 3 by default).  Every thumbnail is scaled by the *same* factor as the clean
image and centred in its cell (letterbox), so size-changing operators (cropping, downscale) appear
at their true relative size; their pixel size is also written in the label.  With a question, the
text conditions are rendered as lines under the grid.  Labels use OpenCV's Hershey font, which only
has ASCII: other characters are drawn as "?" (the returned lines keep the real text).  With
``measure`` (the default) each thumbnail's label has a second line with the variant's measured
SSIM and PSNR (:mod:`.measure`), and under a severity target whether the target was reached.

Memory: each variant is made at full size (the sheet shows the variants as they are), becomes its
thumbnail at once and is dropped before the next one is made, so a sheet holds a few image sizes at
a time, not one per condition.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from ..core.errors import InputError

__all__ = ["ContactSheet", "contact_sheet"]

_BG = (255, 255, 255)
_CELL_BG = (225, 225, 225)
_STRIP_BG = (40, 40, 40)
_FONT = 0  # cv2.FONT_HERSHEY_SIMPLEX


@dataclass(frozen=True)
class ContactSheet:
    """The sheet (HxWx3 uint8 RGB), the text lines drawn under it (``condition: question``), and per
    image condition its measured strength and severity-target outcome (as the manifest records them)."""

    image: np.ndarray
    lines: list[str]
    measured: dict[str, dict[str, Any]] = field(default_factory=dict)
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)


def _ascii(text: str) -> str:
    return "".join(ch if 32 <= ord(ch) < 127 else "?" for ch in text)


def _put_fitted(canvas: np.ndarray, text: str, x: int, y_base: int, max_w: int, colour, scale: float = 0.42) -> None:
    import cv2

    text = _ascii(text)
    while scale > 0.25:
        (w, _), _ = cv2.getTextSize(text, _FONT, scale, 1)
        if w <= max_w:
            break
        scale -= 0.02
    cv2.putText(canvas, text, (x, y_base), _FONT, scale, colour, 1, cv2.LINE_AA)


def _wrap(text: str, max_w: int, scale: float) -> list[str]:
    import cv2

    words, lines, cur = _ascii(text).split(" "), [], ""
    for word in words:
        cand = f"{cur} {word}" if cur else word
        if cur and cv2.getTextSize(cand, _FONT, scale, 1)[0][0] > max_w:
            lines.append(cur)
            cur = word
        else:
            cur = cand
    lines.append(cur)
    return lines


def _thumb(image: np.ndarray, factor: float, box_w: int, box_h: int) -> np.ndarray:
    import cv2

    h, w = image.shape[:2]
    f = min(factor, box_w / w, box_h / h)  # never overflow the cell (a variant larger than clean)
    tw, th = max(1, round(w * f)), max(1, round(h * f))
    interp = cv2.INTER_AREA if f < 1 else cv2.INTER_NEAREST
    return cv2.resize(image, (tw, th), interpolation=interp)


@dataclass
class _Layout:
    """Cell geometry of a sheet: each cell is a thumbnail box plus a label strip."""

    box_w: int
    box_h: int
    factor: float  # the clean image's scale, shared by every thumbnail
    clean_size: tuple[int, int]  # (H, W)
    strip: int = 20
    pad: int = 4

    @property
    def cw(self) -> int:
        return self.box_w + 2 * self.pad

    @property
    def ch(self) -> int:
        return self.box_h + self.strip + 2 * self.pad


def _measured_label(measured: Mapping[str, Any] | None, target: Mapping[str, Any] | None) -> str:
    """``SSIM 0.573  PSNR 19.9`` (and ``target not reached`` under a missed severity target)."""
    if not measured:
        return ""
    ssim, psnr = measured.get("ssim"), measured.get("psnr")
    text = f"SSIM {'-' if ssim is None else f'{ssim:.3f}'}  PSNR {'inf' if psnr is None else f'{psnr:.1f}'}"
    if target is not None and not target.get("reached"):
        text += "  target missed"
    return text


@dataclass(frozen=True)
class _Cell:
    """What one cell shows: a variant's thumbnail, full size (H, W), measured strength and target
    outcome, or why it has no variant."""

    thumb: np.ndarray | None
    size: tuple[int, int] | None = None
    failure: str | None = None
    measured: dict[str, Any] | None = None
    target: dict[str, Any] | None = None


def _cell(item: Any, lay: _Layout) -> _Cell:
    """A variant (or a Skip, with its reason) as its cell; the full-size image is not kept."""
    from .variants import Skip

    if isinstance(item, Skip):
        return _Cell(None, failure=item.reason)
    h, w = item.image.shape[:2]
    return _Cell(_thumb(item.image, lay.factor, lay.box_w, lay.box_h), (h, w), None, item.measured, item.target)


def _draw_cell(sheet: np.ndarray, lay: _Layout, row: int, col: int, label: str, cell: _Cell, second: str = "") -> None:
    y0, x0 = row * lay.ch + lay.pad, col * lay.cw + lay.pad
    box_w, box_h = lay.box_w, lay.box_h
    sheet[y0 : y0 + box_h, x0 : x0 + box_w] = _CELL_BG
    if cell.thumb is not None:
        t = cell.thumb
        th, tw = t.shape[:2]
        ty, tx = y0 + (box_h - th) // 2, x0 + (box_w - tw) // 2
        sheet[ty : ty + th, tx : tx + tw] = t
        if cell.size != lay.clean_size:
            label = f"{label} {cell.size[1]}x{cell.size[0]}"
    elif cell.failure:
        for i, part in enumerate(_wrap(cell.failure, box_w - 8, 0.38)[:8]):
            _put_fitted(sheet, part, x0 + 4, y0 + 16 + 15 * i, box_w - 8, (200, 0, 0), 0.38)
    sheet[y0 + box_h : y0 + box_h + lay.strip, x0 : x0 + box_w] = _STRIP_BG
    _put_fitted(sheet, label, x0 + 4, y0 + box_h + 14, box_w - 8, (255, 255, 255))
    if second:
        _put_fitted(sheet, second, x0 + 4, y0 + box_h + 30, box_w - 8, (255, 230, 120), 0.38)


def _collect(items: Iterable[Any], img_ids: set[str], lay: _Layout) -> tuple[dict[str, _Cell], dict[str, Any]]:
    """Consume the variants: each image condition becomes its cell at once and its full-size variant
    is dropped before the next one is made, so the memory held is a few image sizes whatever the
    number of conditions (holding the 45 variants is ~45 image sizes: tens of GB for a 400 Mpx
    photo).  The other items (clean, text conditions) are returned as they are: they hold the clean
    image itself, no copy."""
    cells: dict[str, _Cell] = {}
    others: dict[str, Any] = {}
    for item in items:
        if item.condition in img_ids:
            cells[item.condition] = _cell(item, lay)
        else:
            others[item.condition] = item
        del item  # else the loop variable keeps this variant alive while the generator makes the next
    return cells, others


def _entity_problem(question: str | None, entity: str | None) -> Any:
    """Why no text condition can be drawn for ``question`` (its entity is not in it, or it is empty):
    the :class:`~snapbench.corruptions.entity.EntityNotFoundError`, said once as a warning instead of
    once per text operator; ``None`` when the entity is found."""
    from ..core.errors import EntityNotFoundError
    from .entity import find_entity

    if question is None:
        return None
    try:
        find_entity(question, entity)
    except EntityNotFoundError as exc:
        return exc
    return None


def _text_lines(question: str | None, txt_conds: list, results: dict[str, Any], entity_problem: Any) -> list[str]:
    """``clean: question`` and ``<condition>: <corrupted question or skip reason>`` per text condition
    (one line for all of them, with the entity finder's reason, when the entity cannot be found:
    every text operator needs it)."""
    from .variants import Skip

    if question is None:
        return []
    lines = [f"clean: {question}"]
    if entity_problem is not None and all(isinstance(results[c.id], Skip) for c in txt_conds):
        return lines + [f"{len(txt_conds)} text conditions: skipped, {entity_problem.reason}"]
    for c in txt_conds:
        item = results[c.id]
        lines.append(f"{c.id}: {item.reason}" if isinstance(item, Skip) else f"{c.id}: {item.question}")
    return lines


def contact_sheet(
    image: np.ndarray,
    *,
    question: str | None = None,
    entity: str | None = None,
    seed: int = 0,
    key: str = "preview",
    grid: str | os.PathLike | Mapping[str, Any] | None = None,
    cell: tuple[int, int] = (240, 180),
    measure: bool = True,
    severity_target: Any = None,
) -> ContactSheet:
    """Build the contact sheet of ``image`` (HxWx3 uint8 RGB) for every image condition of the grid.

    ``key`` is the query id that keys the randomness (use the id from your manifest to see exactly
    what ``snapbench corrupt`` writes for that query).  ``cell`` is the thumbnail box (width, height)
    of each cell; a label strip is added under it.  A condition that fails is shown as a cell with
    the reason.  With ``question``, the 8 text conditions (and failures, as ``skipped: reason``) are
    drawn under the grid and returned in ``lines``.  ``measure`` adds each variant's measured SSIM
    and PSNR to its label (and to :attr:`ContactSheet.measured`); ``severity_target``
    (``"ssim=0.9,0.75,0.6"``) draws every image condition at its level's target, as ``corrupt`` does.
    """
    import cv2

    from ..core.conditions import Condition
    from .plan import plan_conditions, plan_grid
    from .variants import checked_target, generate_variants

    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.ndim != 3 or image.shape[2] != 3:
        raise InputError("contact_sheet expects an HxWx3 uint8 RGB image")
    plan = plan_conditions(None, grid=plan_grid(grid))
    img_conds = [c for c in plan.conditions if c.kind == "image"]
    txt_conds = [c for c in plan.conditions if c.kind == "text"] if question is not None else []
    operators = list(dict.fromkeys(c.image_operator for c in img_conds))
    sev_cols = sorted({c.severity for c in img_conds}) or [1, 2, 3]
    ncols = max(len(sev_cols), 1)
    target = checked_target(severity_target, img_conds, plan.grid)
    H, W = image.shape[:2]
    lay = _Layout(cell[0], cell[1], min(cell[0] / W, cell[1] / H), (H, W))
    cells, others = _collect(generate_variants(
        image, question, key=str(key), entity=entity, seed=seed,
        conditions=[Condition.clean()] + img_conds + txt_conds, grid=plan.grid, measure=measure, target=target),
        {c.id for c in img_conds}, lay)
    measured = {cid: c.measured for cid, c in cells.items() if c.measured is not None}
    targets = {cid: c.target for cid, c in cells.items() if c.target is not None}

    lay = replace(lay, strip=36 if measured else 20)
    text_scale, line_h = 0.5, 20
    problem = _entity_problem(question, entity)
    if problem is not None:
        hint = " (give as entity a word of the question)" if question and question.strip() else ""
        warnings.warn(f"{problem}; the {len(txt_conds)} text conditions are skipped, as snapbench corrupt skips them "
                      f"for such a query{hint}", stacklevel=2)
    lines = _text_lines(question, txt_conds, others, problem)
    wrapped = [part for line in lines for part in _wrap(line, ncols * lay.cw - 16, text_scale)]
    text_h = (len(wrapped) * line_h + 16) if wrapped else 0
    nrows = 1 + len(operators)
    sheet = np.full((nrows * lay.ch + text_h, ncols * lay.cw, 3), _BG, dtype=np.uint8)

    _draw_cell(sheet, lay, 0, 0, f"clean {W}x{H}", _Cell(_thumb(image, lay.factor, lay.box_w, lay.box_h), (H, W)))
    if ncols > 1:  # the rest of the first row: what produced this sheet
        info = [f"key: {key}", f"seed: {seed}", f"grid: {'default' if grid is None else 'custom'}",
                "thumbnails share the clean image's scale"]
        if target is not None:
            info.insert(3, f"severity by target: {target.spec}")
        for i, text in enumerate(info):
            _put_fitted(sheet, text, lay.cw + lay.pad + 4, lay.pad + 24 + 22 * i, (ncols - 1) * lay.cw - 16,
                        (0, 0, 0), 0.5)
    for r, op in enumerate(operators, start=1):
        for c_idx, sev in enumerate(sev_cols):
            cid = Condition.image(op, sev).id
            if cid in cells:
                _draw_cell(sheet, lay, r, c_idx, cid, cells[cid], _measured_label(measured.get(cid), targets.get(cid)))
    y = nrows * lay.ch + 8
    for line in wrapped:
        y += line_h
        cv2.putText(sheet, line, (8, y - 5), _FONT, text_scale, (0, 0, 0), 1, cv2.LINE_AA)
    return ContactSheet(sheet, lines, measured, targets)
