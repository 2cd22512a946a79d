"""Normalised robustness: retention, corruption error (CE), relative CE, effective robustness.

With R a metric value in [0, 1] and E its error: E = 1 − R where higher is better, E = R where higher
is worse (``flip@k``, itself an error rate; :func:`snapbench.evaluate.metrics.metric_sign`):

* **retention** R(c) / R(clean)  (in the ``models`` records).
* **CE** of an operator o over its severities s (Hendrycks & Dietterich 2019, ICLR, "Benchmarking
  neural network robustness to common corruptions and perturbations"):
  CE_o(model) = Σ_s E_{s,o}(model) / Σ_s E_{s,o}(reference).  An image operator sums its severities,
  a text operator is one condition, a joint pair ``img+txt`` sums its severities.
* **relative CE**: Σ_s (E_{s,o} − E_clean)(model) / Σ_s (E_{s,o} − E_clean)(reference) -- the drop
  from clean, normalised the same way (the reference's own drops as the unit).
* mean CE / relative CE over operators: ``mean:img``, ``mean:txt``, ``mean:joint`` and ``mean:all``
  (every operator).  A ratio whose reference denominator is 0 is undefined (NaN), and a mean over an
  undefined operator is undefined: the set of operators averaged is the same for every model.
  The reference model has CE = relative CE = 1 wherever they are defined.
* **effective robustness** (Taori et al. 2020, NeurIPS, "Measuring robustness to natural distribution
  shifts in image classification"): fit logit(R_corrupted) = slope · logit(R_clean) + intercept by
  least squares across the compared models (at least 3), then ER = R_corrupted − expit(slope ·
  logit(R_clean) + intercept): how much better a model holds up than the trend of the models at its
  clean level predicts.  Values are clipped to [eps, 1 − eps] before the logit (default eps 1e-4),
  so a value of exactly 0 or 1 stays finite.  The fit is over the models compared, so ER is relative
  to that set.  Where higher is worse, ER = fitted − R_corrupted (the fit itself does not depend on the
  direction: logit(1 − p) = −logit(p)), so ER > 0 always means "holds up better than the trend".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.conditions import parse_condition
from .records import EffectiveRecord, FitRecord, NormalisedRecord

__all__ = ["DEFAULT_CLIP", "corruption_errors", "logit_fit", "effective_robustness",
           "normalised_records", "effective_records", "operator_levels"]

DEFAULT_CLIP = 1e-4


def _operator_conditions(conditions: Sequence[str]) -> dict[str, tuple[str, list[int]]]:
    """``{operator: (kind, positions in conditions)}``: image operators (kind "img"), text ("txt"),
    joint pairs ``img+txt`` ("joint"), in order of first appearance; ``clean`` is skipped."""
    out: dict[str, tuple[str, list[int]]] = {}
    for i, cid in enumerate(conditions):
        c = parse_condition(cid)
        if c.kind == "image":
            key, kind = str(c.image_operator), "img"
        elif c.kind == "text":
            key, kind = str(c.text_operator), "txt"
        elif c.kind == "joint":
            key, kind = f"{c.image_operator}+{c.text_operator}", "joint"
        else:
            continue
        out.setdefault(key, (kind, []))[1].append(i)
    return out


def operator_levels(conditions: Sequence[str]) -> dict[str, int]:
    """How many of ``conditions`` each operator of the CE has (1: a text operator, or one run at one level)."""
    return {op: len(pos) for op, (_, pos) in _operator_conditions(conditions).items()}


def _ratio(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore", divide="ignore"):
        r = num / den
    return np.where((den != 0) & np.isfinite(r), r, np.nan)


def _error(r: np.ndarray, sign: int) -> np.ndarray:
    """E of metric values ``r``: 1 − R where higher is better (``sign`` +1), R where higher is worse (−1)."""
    r = np.asarray(r, dtype=np.float64)
    return 1.0 - r if sign > 0 else r


def corruption_errors(
    clean: np.ndarray, values: np.ndarray, conditions: Sequence[str], reference: int, sign: int = 1
) -> tuple[list[str], np.ndarray, np.ndarray]:
    """(operators, CE (M, O), relative CE (M, O)) from ``clean`` (M,) and ``values`` (M, C) of the
    corrupted ``conditions`` (``sign``: the metric's direction, :func:`~snapbench.evaluate.metrics.metric_sign`);
    the operator list ends with the ``mean:*`` rows."""
    e = _error(values, sign)
    e0 = _error(clean, sign)
    ops = _operator_conditions(conditions)
    names = list(ops)
    ce = np.empty((e.shape[0], len(names)))
    rel = np.empty_like(ce)
    for j, (kind, idx) in enumerate(ops.values()):
        s = e[:, idx].sum(axis=1)
        d = (e[:, idx] - e0[:, None]).sum(axis=1)
        ce[:, j] = _ratio(s, np.full_like(s, s[reference]))
        rel[:, j] = _ratio(d, np.full_like(d, d[reference]))
    means = [("mean:" + k, [j for j, (kind, _) in enumerate(ops.values()) if kind == k]) for k in ("img", "txt", "joint")]
    means.append(("mean:all", list(range(len(names)))))
    extra = [(n, idx) for n, idx in means if idx]
    if extra:
        ce = np.concatenate([ce, np.stack([ce[:, idx].mean(axis=1) for _, idx in extra], axis=1)], axis=1)
        rel = np.concatenate([rel, np.stack([rel[:, idx].mean(axis=1) for _, idx in extra], axis=1)], axis=1)
        names += [n for n, _ in extra]
    return names, ce, rel


def _logit(p: np.ndarray, eps: float) -> np.ndarray:
    p = np.clip(np.asarray(p, dtype=np.float64), eps, 1.0 - eps)
    return np.log(p) - np.log1p(-p)


def logit_fit(clean: np.ndarray, corrupted: np.ndarray, eps: float = DEFAULT_CLIP) -> tuple[float, float, int]:
    """(slope, intercept, n) of the least-squares line logit(corrupted) ~ logit(clean) over the
    models where both are defined; NaN slope/intercept when fewer than 3 or all clean values equal."""
    x, y = _logit(clean, eps), _logit(corrupted, eps)
    ok = ~(np.isnan(x) | np.isnan(y))
    x, y = x[ok], y[ok]
    n = int(x.size)
    if n < 3:
        return float("nan"), float("nan"), n
    sxx = float(((x - x.mean()) ** 2).sum())
    if sxx == 0:
        return float("nan"), float("nan"), n
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / sxx)
    return slope, float(y.mean() - slope * x.mean()), n


def effective_robustness(
    clean: np.ndarray, corrupted: np.ndarray, eps: float = DEFAULT_CLIP, sign: int = 1
) -> tuple[np.ndarray, np.ndarray, tuple[float, float, int]]:
    """(fitted (M,), ER (M,), (slope, intercept, n)): ER = sign · (corrupted − expit(fit(logit(clean))))."""
    slope, intercept, n = logit_fit(clean, corrupted, eps)
    z = slope * _logit(clean, eps) + intercept
    fitted = 1.0 / (1.0 + np.exp(-z))
    return fitted, sign * (np.asarray(corrupted, dtype=np.float64) - fitted), (slope, intercept, n)


def normalised_records(
    mode: str, metric: str, models: Sequence[str], clean: np.ndarray, values: np.ndarray,
    conditions: Sequence[str], reference: int, sign: int = 1,
) -> list[NormalisedRecord]:
    """CE and relative CE of every model x operator (and the ``mean:*`` rows)."""
    names, ce, rel = corruption_errors(clean, values, conditions, reference, sign)
    return [NormalisedRecord(mode, models[m], op, metric, float(ce[m, j]), float(rel[m, j]))
            for m in range(len(models)) for j, op in enumerate(names)]


def effective_records(
    mode: str, metric: str, models: Sequence[str], clean: np.ndarray, group_values: np.ndarray,
    groups: Sequence[str], eps: float = DEFAULT_CLIP, sign: int = 1,
) -> tuple[list[EffectiveRecord], list[FitRecord]]:
    """Effective robustness per group (corrupted = the group's mean value) with the fit; none with
    fewer than 3 models."""
    recs: list[EffectiveRecord] = []
    fits: list[FitRecord] = []
    if len(models) < 3:
        return recs, fits
    for g, gid in enumerate(groups):
        fitted, er, (slope, intercept, n) = effective_robustness(clean, group_values[:, g], eps, sign)
        fits.append(FitRecord(mode, metric, gid, slope, intercept, n))
        recs += [EffectiveRecord(mode, metric, gid, models[m], float(clean[m]), float(group_values[m, g]),
                                 float(fitted[m]), float(er[m])) for m in range(len(models))]
    return recs, fits
