"""The judges' structured answers: a rating on the five-step scale, a target position as a fraction of the
account's total value, a confidence, and lists of points; anything else is a `ModelAnswerError` naming the field."""

from __future__ import annotations

from typing import Any

from graphs.llm import ModelAnswerError
from tools.desk.log import RATINGS
from tools.i18n import _


def _fraction(body: dict[str, Any], key: str) -> float:
    value: Any = body.get(key)  # whatever the model wrote there
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ModelAnswerError(_("its {key} {value} is not a number from 0 to 1").format(key=key, value=repr(value))
                               ) from None
    if not 0 <= number <= 1:
        raise ModelAnswerError(_("its {key} {number} is not between 0 and 1").format(key=key, number=number))
    return number


def _points(body: dict[str, Any], key: str) -> list[str]:
    value = body.get(key) or []
    if not isinstance(value, list):
        raise ModelAnswerError(_("its {key} is not a list").format(key=key))
    return [str(v) for v in value][:8]


def _rating(body: dict[str, Any]) -> str:
    text = str(body.get("rating") or "").strip().capitalize()
    if text not in RATINGS:
        raise ModelAnswerError(_("its rating {rating} is not one of {ratings}").format(
            rating=repr(body.get("rating")), ratings=", ".join(RATINGS)))
    return text


def research_verdict(body: dict[str, Any]) -> dict[str, Any]:
    return {"rating": _rating(body), "target_position": _fraction(body, "target_position"),
            "bull_points": _points(body, "bull_points"), "bear_points": _points(body, "bear_points"),
            "confidence": _fraction(body, "confidence"), "investment_plan": str(body.get("investment_plan") or "")}


def risk_verdict(body: dict[str, Any]) -> dict[str, Any]:
    return {"rating": _rating(body), "target_position": _fraction(body, "target_position"),
            "risks": _points(body, "risks"), "confidence": _fraction(body, "confidence"),
            "final_trade_decision": str(body.get("final_trade_decision") or "")}


def verdict_numbers(verdict: dict[str, Any]) -> list[float]:
    """The judge's own structured figures, which its text may quote (as fractions or percents)."""
    return [verdict["target_position"], verdict["target_position"] * 100, verdict["confidence"],
            verdict["confidence"] * 100]
