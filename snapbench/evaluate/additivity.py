"""Additivity of joint image+text corruptions (SnapBench Table 3 / Table 14, SPEC §8).

For a joint condition J = (image operator i at severity s, text operator t), with R a metric:

    Δ_I = R(clean) − R(img/i/s)      Δ_T = R(clean) − R(txt/t)      Obs = R(clean) − R(J)
    Exp = Δ_I + Δ_T                  δ = Obs − Exp  (> 0: super-additive, < 0: sub-additive)

Drops are clean − corrupted (positive = worse), unlike the "paired" deltas.  The bootstrap CI on δ
resamples queries jointly across the four states: the four metric values of one resample come from
the same resample indices.  Summaries average Exp/Obs/δ over severities (per pair, as in the paper's
Table 3), over pairs (per severity, Table 14) and over everything; their CIs average the same
resamples.
"""

from __future__ import annotations

from typing import Iterable, Mapping

import numpy as np

from ..core.conditions import parse_condition
from .paired import DEFAULT_CI, percentile_ci

__all__ = ["additivity_terms", "joint_parts", "additivity_analysis"]


def additivity_terms(r_clean, r_image, r_text, r_joint) -> dict:
    """Δ_I, Δ_T, Exp, Obs, δ from the four metric values (floats or same-shaped arrays)."""
    d_i = r_clean - r_image
    d_t = r_clean - r_text
    obs = r_clean - r_joint
    exp = d_i + d_t
    return {"delta_image": d_i, "delta_text": d_t, "exp": exp, "obs": obs, "delta": obs - exp}


def joint_parts(condition_ids: Iterable[str]) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """For every joint condition among ``condition_ids``: its (image part id, text part id) when
    both parts and ``clean`` are present; otherwise a reason in the second dict."""
    ids = list(condition_ids)
    present = set(ids)
    ok: dict[str, tuple[str, str]] = {}
    skipped: dict[str, str] = {}
    for cid in ids:
        c = parse_condition(cid)
        if c.kind != "joint":
            continue
        img, txt = c.image_part.id, c.text_part.id  # type: ignore[union-attr]
        missing = [x for x in ("clean", img, txt) if x not in present]
        if missing:
            skipped[cid] = "missing " + ", ".join(missing)
        else:
            ok[cid] = (img, txt)
    return ok, skipped


def _entry(terms: dict, lo: float, hi: float) -> dict:
    e = {k: float(v) for k, v in terms.items()}
    e["ci"] = [float(lo), float(hi)]
    return e


def additivity_analysis(
    values: Mapping[str, float],
    joints: Mapping[str, tuple[str, str]],
    boot: Mapping[str, np.ndarray] | None = None,
    *,
    ci: float = DEFAULT_CI,
    clean: str = "clean",
) -> tuple[dict[str, dict], dict[str, dict]]:
    """Additivity of one metric.

    ``values``: condition id -> metric value; ``boot``: condition id -> (B,) resampled values (all
    from the same resamples) or ``None`` for no CI; ``joints`` from :func:`joint_parts`.
    Returns ``(per_joint, summary)`` where ``per_joint[J] = {"exp", "obs", "delta", "ci",
    "delta_image", "delta_text"}`` and ``summary = {"by_pair": {"i+t": {...}}, "by_severity":
    {"s1": {...}}, "mean": {...}}`` (means of the per-joint numbers; "n" = joints averaged).
    """
    names = list(joints)
    per: dict[str, dict] = {}
    per_boot: dict[str, np.ndarray] = {}
    if boot is not None and names:
        # (B, J) resampled δ of every joint condition: the four states share each resample row.
        bd = np.stack(
            [additivity_terms(boot[clean], boot[i], boot[t], boot[j])["delta"] for j, (i, t) in joints.items()], axis=1
        )
        per_boot = {j: bd[:, k] for k, j in enumerate(names)}
        lo_all, hi_all = percentile_ci(bd, ci)
    for k, (j, (img, txt)) in enumerate(joints.items()):
        t = additivity_terms(values[clean], values[img], values[txt], values[j])
        lo, hi = (lo_all[k], hi_all[k]) if boot is not None else (float("nan"), float("nan"))
        per[j] = _entry(t, lo, hi)

    by_pair: dict[str, list[str]] = {}
    by_sev: dict[str, list[str]] = {}
    for j in per:
        c = parse_condition(j)
        by_pair.setdefault(f"{c.image_operator}+{c.text_operator}", []).append(j)
        by_sev.setdefault(f"s{c.severity}", []).append(j)
    groups: list[tuple[str, str, list[str]]] = [("by_pair", k, v) for k, v in by_pair.items()]
    groups += [("by_severity", k, v) for k, v in sorted(by_sev.items())]
    if per:
        groups.append(("mean", "", list(per)))
    if boot is not None and groups:
        # the CI of a mean of δ = percentiles of the mean of the same resampled δ
        means = np.stack([np.mean([per_boot[j] for j in g], axis=0) for _, _, g in groups], axis=1)
        g_lo, g_hi = percentile_ci(means, ci)
    summary: dict[str, dict] = {"by_pair": {}, "by_severity": {}}
    for k, (section, key, group) in enumerate(groups):
        terms = {t: float(np.mean([per[j][t] for j in group])) for t in ("delta_image", "delta_text", "exp", "obs", "delta")}
        lo, hi = (g_lo[k], g_hi[k]) if boot is not None else (float("nan"), float("nan"))
        e = _entry(terms, lo, hi)
        e["n"] = len(group)
        if section == "mean":
            summary["mean"] = e
        else:
            summary[section][key] = e
    return per, summary
