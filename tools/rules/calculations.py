"""Named calculations on a kline frame, done in code for the execution agent: the model names a calculation
(`MA` with period 30), this computes it on the bars the run fetched and returns the latest value with the bar
it belongs to. The model never does arithmetic on prices."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from tools.research import indicators

MAX_PERIOD = 1000  # as the rule language allows


class CalculationError(ValueError):
    """A calculation that cannot be done as named; the message says what is allowed."""


def _period(params: dict[str, Any], name: str, default: int) -> int:
    value = params.get(name, params.get("n", default)) if name == "period" else params.get(name, default)
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise CalculationError(f"{name} must be a whole number, not {value!r}") from None
    if not 2 <= number <= MAX_PERIOD or str(value).strip() not in (str(number), f"{number}.0"):
        raise CalculationError(f"{name} must be a whole number from 2 to {MAX_PERIOD}, not {value!r}")
    return number


def _lines(frame: pd.DataFrame, kind: str, params: dict[str, Any]) -> tuple[dict[str, pd.Series], int, str]:
    close = frame["close"]
    if kind in ("MA", "EMA", "RSI"):
        n = _period(params, "period", 14 if kind == "RSI" else 20)
        result = {"MA": indicators.ma, "EMA": indicators.ema, "RSI": indicators.rsi}[kind](close, n)
        return {f"{kind.lower()}{n}": result.value}, result.warmup, result.name
    if kind == "MACD":
        fast, slow, signal = (_period(params, k, d) for k, d in (("fast", 12), ("slow", 26), ("signal", 9)))
        if fast >= slow:
            raise CalculationError("MACD needs fast < slow")
        m = indicators.macd(close, fast, slow, signal, cn_terminal=bool(params.get("cn_terminal")))
        return {"dif": m.dif, "dea": m.dea, "hist": m.hist}, m.warmup, m.name
    if kind == "BOLL":
        n = _period(params, "period", 20)
        try:
            k = float(params.get("k", 2.0))
        except (TypeError, ValueError):
            raise CalculationError(f"k must be a number of standard deviations, not {params.get('k')!r}") from None
        if not 0.1 <= k <= 10:
            raise CalculationError(f"k must be between 0.1 and 10, not {k}")
        b = indicators.boll(close, n, k)
        return {"upper": b.upper, "mid": b.mid, "lower": b.lower}, b.warmup, b.name
    if kind == "ATR":
        n = _period(params, "period", 14)
        a = indicators.atr(frame["high"], frame["low"], close, n)
        return {f"atr{n}": a.value}, a.warmup, a.name
    if kind == "KDJ":
        n = _period(params, "period", 9)
        r = indicators.kdj(frame["high"], frame["low"], close, n)
        return {"k": r.k, "d": r.d, "j": r.j}, r.warmup, r.name
    raise CalculationError(f"unknown calculation {kind!r}; known: {', '.join(CALCULATIONS)}")


CALCULATIONS: dict[str, str] = {
    "MA": "simple moving average of closes: {period}",
    "EMA": "exponential moving average (TA-Lib seeding): {period}",
    "RSI": "Wilder RSI: {period} (default 14)",
    "MACD": "DIF, DEA, histogram: {fast, slow, signal} (12, 26, 9), {cn_terminal: true} for (DIF-DEA)x2",
    "BOLL": "Bollinger bands, population sigma: {period, k} (20, 2)",
    "ATR": "average true range: {period} (14)",
    "KDJ": "KDJ(9,3,3), K0 = D0 = 50: {period} (9)",
}


def calculate(frame: pd.DataFrame, kind: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The calculation's latest values (rounded to 6 places), the latest close, the bar they belong to and the
    warm-up; `ready` is false when the bars do not cover the warm-up yet (then the values are None)."""
    name = str(kind or "").strip().upper()
    if frame.empty:
        raise CalculationError("no bars were fetched yet: call get_kline_data first")
    try:
        lines, warmup, label = _lines(frame, name, dict(params or {}))
    except CalculationError:
        raise
    except (TypeError, ValueError) as exc:  # the indicator refused a parameter: say which, in its words
        raise CalculationError(f"{name}: {exc}") from None
    last = frame.index[-1]
    values = {key: _number(series.iloc[-1]) for key, series in lines.items()}
    return {"indicator": label, "bar": str(last), "close": _number(frame["close"].iloc[-1]), **values,
            "warmup_bars": warmup, "bars": len(frame), "ready": all(v is not None for v in values.values())}


def _number(value: Any) -> float | None:
    number = float(value)
    return None if math.isnan(number) else round(number, 6)


def describe() -> str:
    """The catalogue for a prompt: one line per calculation."""
    return "\n".join(f"- {name}: {text}" for name, text in CALCULATIONS.items())


