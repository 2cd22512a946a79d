"""Parameter validators shared by every image operator's ``sample`` and ``apply``.

One set of checks, so a grid typo or an out-of-range value gets the same kind of message whichever
operator reads it.  Each validator names the operator and the parameter; all raise
:class:`snapbench.core.errors.ConfigError` (a ``ValueError``): a level's parameters come from the
severity grid, which is configuration.  ``apply`` functions call them too, so a hand-written
params dict is checked as well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ...core.errors import ConfigError
from ...core.validate import listing, unknown_name

__all__ = ["fraction", "fraction_value", "integer", "integer_value", "known_keys", "level_value", "number", "rgb", "scaled_side"]


def number(op: str, params: Mapping[str, Any], name: str, *, lo: float | None = None,
           hi: float | None = None, lo_open: bool = False, default: float | None = None) -> float:
    """``params[name]`` as a finite float in [lo, hi] (``(lo, hi]`` with ``lo_open``).

    A missing key is an error unless ``default`` is given; booleans are not numbers.
    """
    if name not in params:
        if default is None:
            raise ConfigError(f"{op}: missing parameter {name!r} (got {listing(sorted(params), quote=True) or 'none'})")
        return float(default)
    value = params[name]
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"{op}: parameter {name!r} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value):
        raise ConfigError(f"{op}: parameter {name!r} must be finite, got {value!r}")
    if lo is not None and (value < lo or (lo_open and value == lo)):
        raise ConfigError(f"{op}: parameter {name!r} must be {'>' if lo_open else '>='} {lo}, got {value}")
    if hi is not None and value > hi:
        raise ConfigError(f"{op}: parameter {name!r} must be <= {hi}, got {value}")
    return value


def known_keys(op: str, level: Mapping[str, Any], *names: str) -> None:
    """Reject grid keys the operator does not read (a typo would otherwise be ignored silently)."""
    unknown = sorted(set(level) - set(names))
    if unknown:  # the first one, with its close names (the rest show up once it is fixed)
        raise ConfigError(f"{op}: {unknown_name('parameter', unknown[0], names)}")


def integer(op: str, params: Mapping[str, Any], name: str, *, lo: int, hi: int | None = None) -> int:
    """``params[name]`` as an int in [lo, hi]; integral floats (``15.0``) are accepted."""
    raw = params.get(name)
    if isinstance(raw, (int, np.integer)) and not isinstance(raw, bool):
        value = int(raw)  # not via float: large seeds must stay exact
        if value < lo or (hi is not None and value > hi):
            raise ConfigError(f"{op}: parameter {name!r} must be in [{lo}, {hi if hi is not None else 'inf'}], got {value}")
        return value
    value = number(op, params, name, lo=lo, hi=hi)
    if value != int(value):
        raise ConfigError(f"{op}: parameter {name!r} must be an integer, got {params[name]!r}")
    return int(value)


def fraction(operator: str, level: Mapping[str, Any], name: str) -> float:
    """``level[name]`` as a number in (0, 1] (a share of each side)."""
    try:
        value = float(level[name])
    except KeyError:
        raise ConfigError(f"image operator {operator!r}: severity parameters lack {name!r} (got {dict(level)})") from None
    except (TypeError, ValueError):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be a number, got {level[name]!r}") from None
    if not (0.0 < value <= 1.0):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be in (0, 1], got {value}")
    return value


def scaled_side(side: int, fraction: float) -> int:
    """``max(1, round_half_up(fraction * side))``: the length of a side scaled by ``fraction``.

    Round half up rather than Python's banker's rounding, so the rule is the one people compute by
    hand; at least one pixel so no operator ever returns an empty image.
    """
    return max(1, int(math.floor(float(fraction) * int(side) + 0.5)))


def level_value(operator: str, level: Mapping[str, Any], name: str) -> Any:
    """``level[name]``, or an error naming the operator and the keys the level has."""
    try:
        return level[name]
    except KeyError:
        raise ConfigError(f"image operator {operator!r}: severity parameters lack {name!r} (got {dict(level)})") from None


def rgb(operator: str, value: Any, name: str) -> list[int]:
    """``value`` as three integers 0-255 (an RGB colour)."""
    try:
        out = [int(c) for c in value]
    except (TypeError, ValueError):
        out = []
    if len(out) != 3 or not all(0 <= c <= 255 for c in out):
        raise ConfigError(f"image operator {operator!r}: {name!r} must be three integers 0-255 (RGB), got {value!r}")
    return out


def integer_value(op: str, value: Any, name: str, lo: int, hi: int | None = None) -> int:
    """``value`` as an integer in [lo, hi] (an integral float such as 3.0 from TOML/JSON is accepted)."""
    ok = isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if not ok and isinstance(value, float) and value.is_integer():
        ok = True  # TOML/JSON writers may turn 3 into 3.0
    if not ok or int(value) < lo or (hi is not None and int(value) > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be an integer {rng}, got {value!r}")
    return int(value)


def fraction_value(op: str, value: Any, name: str, *, zero_ok: bool = False) -> float:
    """``value`` as a fraction of an image side: (0, 1], or [0, 1] with ``zero_ok``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be a fraction of the image side, got {value!r}")
    v = float(value)
    if not ((0 <= v if zero_ok else 0 < v) and v <= 1):
        interval = "[0, 1]" if zero_ok else "(0, 1]"
        raise ConfigError(f"image operator {op!r}: parameter {name!r} must be in {interval}, got {value!r}")
    return v
