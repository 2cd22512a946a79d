"""The detector table and its thresholds: one shipped file (``thresholds.toml``), user overrides.

:data:`DETECTORS` is the one table of detector names, the side each looks at and the side of its
threshold that is flagged.  The numbers live in ``snapbench/diagnose/thresholds.toml`` (shipped in
the package); :func:`load_thresholds` reads it and merges a user file over it (TOML or JSON, the
same sections).  Unknown sections or keys are errors that list the known ones, so a typo never
silently keeps a default.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

from ..core.errors import ConfigError
from ..core.userfiles import read_text
from ..core.validate import unknown_name

__all__ = ["DETECTORS", "IMAGE_DETECTORS", "TEXT_DETECTORS", "Detector", "Thresholds",
           "default_thresholds", "load_thresholds", "is_flagged"]


@dataclass(frozen=True)
class Detector:
    """A detector's side (``"image"`` or ``"text"``) and flagged direction (``"below"``: score <
    threshold is flagged; ``"above"``: score > threshold is flagged)."""

    name: str
    side: str
    flagged: str
    meaning: str


DETECTORS: dict[str, Detector] = {d.name: d for d in (
    Detector("blur", "image", "below", "directional sharpness of the luma"),
    Detector("low_light", "image", "below", "95th percentile of the luma"),
    Detector("overexposure", "image", "above", "share of clipped pixels"),
    Detector("compression", "image", "below", "estimated JPEG quality"),
    Detector("low_resolution", "image", "below", "effective pixel count"),
    Detector("oov", "text", "above", "share of out-of-vocabulary words"),
    Detector("few_content_tokens", "text", "below", "number of content tokens"),
    Detector("no_entity", "text", "below", "entity found (1) / entity-bearing candidate words"),
)}
IMAGE_DETECTORS: tuple[str, ...] = tuple(n for n, d in DETECTORS.items() if d.side == "image")
TEXT_DETECTORS: tuple[str, ...] = tuple(n for n, d in DETECTORS.items() if d.side == "text")
_CHECKS_SECTION = "checks"

_SHIPPED = "thresholds.toml"

Thresholds = dict[str, dict[str, float]]


def _parse(text: str, path: str) -> Any:
    stripped = text.lstrip()
    if stripped.startswith("{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", path=path) from None
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid TOML ({exc}); expected sections such as [blur] threshold = 6.0", path=path) from None


def _number(value: Any, where: str, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(float(value)):
        raise ConfigError(f"{where} must be a finite number, got {value!r}", path=path)
    return float(value)


def _merge(base: Thresholds, data: Any, path: str) -> Thresholds:
    if not isinstance(data, Mapping):
        raise ConfigError(f"expected a table of sections ({', '.join(base)}), got {type(data).__name__}", path=path)
    out = {k: dict(v) for k, v in base.items()}
    for section, values in data.items():
        if section not in out:
            raise ConfigError(unknown_name("detector or section", section, out), path=path)
        if not isinstance(values, Mapping):
            raise ConfigError(f"[{section}] must be a table of keys, got {values!r}", path=path)
        for key, value in values.items():
            if key not in out[section]:
                raise ConfigError(unknown_name("key", key, out[section], where=f" in [{section}]"), path=path)
            out[section][key] = _number(value, f"[{section}] {key}", path)
    return out


def default_thresholds() -> Thresholds:
    """The shipped thresholds (``snapbench/diagnose/thresholds.toml``) as ``{section: {key: value}}``."""
    text = resources.files(__package__).joinpath(_SHIPPED).read_text(encoding="utf-8")
    data = _parse(text, _SHIPPED)
    missing = [d for d in (*DETECTORS, _CHECKS_SECTION) if d not in data]
    if missing:  # pragma: no cover - a packaging mistake, not a user error
        raise RuntimeError(f"{_SHIPPED} lacks sections {missing}")
    return {s: {k: _number(v, f"[{s}] {k}", _SHIPPED) for k, v in vals.items()} for s, vals in data.items()}


def load_thresholds(path: str | os.PathLike | None = None) -> Thresholds:
    """The shipped thresholds, with the sections and keys of ``path`` (TOML or JSON) replacing them.

    Raises :class:`~snapbench.core.errors.InputError` naming the file when it is missing, a folder or not
    UTF-8 (:mod:`snapbench.core.userfiles`), :class:`~snapbench.core.errors.ConfigError` naming the file for an
    unparsable file, an unknown section or key (listing the known ones) or a value that is not a
    finite number.
    """
    base = default_thresholds()
    if path is None:
        return base
    p = Path(path)
    text = read_text(p, what="thresholds file")
    return _merge(base, _parse(text, str(p)), str(p))


def is_flagged(detector: str, score: float, thresholds: Thresholds) -> bool:
    """Whether ``score`` of ``detector`` is on the flagged side of its threshold (NaN: not flagged)."""
    d = DETECTORS[detector]
    t = thresholds[detector]["threshold"]
    if score is None or math.isnan(score):
        return False
    return score < t if d.flagged == "below" else score > t
