"""The gate before the team library: the holdout agrees in sign with the in-sample result, and the Deflated Sharpe
Ratio's probability reaches the threshold. A verdict is data (stored with the factor); its lines are composed where
they are shown."""

from __future__ import annotations

import math
from typing import Any

from tools.i18n import _


def verdict(in_sample: float | None, holdout: float | None, dsr: float | None, threshold: float) -> dict[str, Any]:
    """{passed, holdout: {in_sample, holdout, ok}, dsr: {probability, threshold, ok}}: the holdout test fails without a
    holdout figure, the DSR test without a probability."""
    signs_agree = (in_sample is not None and holdout is not None and math.isfinite(in_sample)
                   and math.isfinite(holdout) and in_sample != 0 and (in_sample > 0) == (holdout > 0))
    dsr_ok = dsr is not None and math.isfinite(dsr) and dsr >= threshold
    return {"passed": bool(signs_agree and dsr_ok),
            "holdout": {"in_sample": in_sample, "holdout": holdout, "ok": bool(signs_agree)},
            "dsr": {"probability": dsr, "threshold": threshold, "ok": bool(dsr_ok)}}


def failures(gate: dict[str, Any]) -> list[str]:
    """Each test the verdict failed, with its numbers, in the language in effect."""
    lines = []
    held = gate["holdout"]
    if not held["ok"]:
        if held["holdout"] is None:
            lines.append(_("holdout: there is no holdout figure to confirm the in-sample Rank IC {ic}").format(
                ic=_fmt(held["in_sample"])))
        else:
            lines.append(_("holdout: its Rank IC {holdout} does not have the sign of the in-sample {ic}").format(
                holdout=_fmt(held["holdout"]), ic=_fmt(held["in_sample"])))
    dsr = gate["dsr"]
    if not dsr["ok"]:
        lines.append(_("deflated Sharpe: probability {p} is below the threshold {threshold}").format(
            p=_fmt(dsr["probability"], ".3f"), threshold=f"{dsr['threshold']:.2f}"))
    return lines


def _fmt(value: float | None, spec: str = ".4f") -> str:
    return _("n/a") if value is None or not math.isfinite(value) else format(value, spec)
