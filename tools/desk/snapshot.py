"""A stock's bars and indicators as of one trading day, for the decision desk's market analyst and its no-LLM reply.

Point in time: only bars dated on or before `as_of` are read, and the look-back counts the stock's own trading
days, so cutting every source at `as_of` changes nothing. Indicators come from `tools.research.indicators` (TA-Lib's
conventions) over those bars; a value still inside its warm-up is reported as missing, never as a number. Values
are rounded once here (prices to the fen, ratios to 4 decimals) and those rounded values are what every reader,
model or table, sees."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

import pandas as pd

from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, normalize_date
from tools.i18n import N_, _
from tools.research import indicators

BAR_FIELDS = ["open", "high", "low", "close", "pct_chg", "vol", "amount"]
SHOWN = {"open": ("open", 2), "high": ("high", 2), "low": ("low", 2), "close": ("close", 2),
         "pct_chg": ("pct_chg", 2), "vol": ("vol_lots", 0), "amount": ("amount_thousand_cny", 1)}
WARMUP_BARS = 120  # enough history before the shown window for MA(60) and MACD(12,26,9) to be past warm-up
CALENDAR_SPAN_DAYS = 800  # calendar days searched back for the look-back's trading days


@dataclass(frozen=True)
class MarketSnapshot:
    ts_code: str
    as_of: str  # YYYYMMDD: the last trading day the snapshot may use
    bars: list[dict[str, Any]]  # the shown window, oldest first
    indicators: dict[str, float | None]  # latest value of each indicator line (None: in warm-up or no data)
    conventions: dict[str, str] = field(default_factory=dict)
    gaps: list[str] = field(default_factory=list)  # what could not be computed and why
    price_basis: str = "unknown"  # the provider's: unadjusted, forward-adjusted (as of the data's last day), unknown

    def indicator_rows(self) -> list[tuple[str, str]]:
        """(label, value) rows of the indicator table; missing values say why."""
        return [(name, "n/a (warm-up)" if value is None else _shown(value)) for name, value in self.indicators.items()]

    def as_tool_output(self) -> dict[str, Any]:
        """What the market analyst's tool returns: every figure it may quote."""
        return {"ts_code": self.ts_code, "as_of": self.as_of, "last_bar": self.bars[-1] if self.bars else None,
                "indicators": self.indicators, "conventions": self.conventions, "price_basis": self.price_basis,
                "data_gaps": self.gaps}


def _shown(value: float) -> str:
    return f"{value:,.4f}".rstrip("0").rstrip(".") if abs(value) < 100 else f"{value:,.2f}"


def _round(value: float, digits: int) -> float | None:
    return None if value is None or math.isnan(value) else round(float(value), digits)


def trading_days_back(provider: MarketDataProvider, as_of: str, count: int) -> list[str]:
    """The last `count` trading days up to and including `as_of` (fewer when the calendar starts later)."""
    end = date(int(as_of[:4]), int(as_of[4:6]), int(as_of[6:]))
    span = max(CALENDAR_SPAN_DAYS, count * 2)
    return provider.calendar(end - timedelta(days=span), end)[-count:]


def price_bars(provider: MarketDataProvider, ts_code: str, as_of: str, count: int) -> pd.DataFrame:
    """The stock's last `count` bars on or before `as_of` (its own trading days), oldest first; empty without bars."""
    as_of = normalize_date(as_of, "as-of date")
    days = trading_days_back(provider, as_of, count + WARMUP_BARS)
    if not days:
        return pd.DataFrame(columns=["trade_date", *BAR_FIELDS])
    fields = [f for f in BAR_FIELDS if f in provider.available_fields("daily")]
    try:
        frame = provider.daily(ts_code, days[0], as_of, fields, warnings=[])
    except DataError:
        return pd.DataFrame(columns=["trade_date", *BAR_FIELDS])
    frame = frame[frame["trade_date"] <= as_of].dropna(subset=["close"])
    return frame.drop(columns="ts_code").reset_index(drop=True).tail(count + WARMUP_BARS)


def indicator_lines(bars: pd.DataFrame) -> pd.DataFrame:
    """The close and every indicator line over `bars` (index: the bars' dates), NaN inside warm-ups."""
    close = bars["close"].astype("float64").reset_index(drop=True)
    high = bars["high"].astype("float64").reset_index(drop=True)
    low = bars["low"].astype("float64").reset_index(drop=True)
    macd = indicators.macd(close)
    bands = indicators.boll(close)
    kdj = indicators.kdj(high, low, close)
    frame = pd.DataFrame({
        "close": close, "MA(5)": indicators.ma(close, 5).value, "MA(10)": indicators.ma(close, 10).value,
        "MA(20)": indicators.ma(close, 20).value, "MA(60)": indicators.ma(close, 60).value,
        "EMA(12)": indicators.ema(close, 12).value, "EMA(26)": indicators.ema(close, 26).value,
        "RSI(14)": indicators.rsi(close, 14).value, "MACD DIF": macd.dif, "MACD DEA": macd.dea,
        "MACD hist": macd.hist, "BOLL upper": bands.upper, "BOLL mid": bands.mid, "BOLL lower": bands.lower,
        "ATR(14)": indicators.atr(high, low, close, 14).value, "KDJ K": kdj.k, "KDJ D": kdj.d, "KDJ J": kdj.j})
    frame.index = pd.DatetimeIndex(pd.to_datetime(bars["trade_date"].to_numpy(), format="%Y%m%d"), name="trade_date")
    return frame


# stored and handed to the agents in English; views show them translated
CONVENTIONS = {"MA/EMA/RSI/MACD/BOLL/ATR": N_("TA-Lib (EMA seeded with the SMA, RSI Wilder, BOLL population σ)"),
               "MACD hist": N_("DIF − DEA (Chinese terminals draw 2 × that)"), "KDJ": N_("KDJ(9,3,3), K0 = D0 = 50")}
DIGITS = {"MACD DIF": 4, "MACD DEA": 4, "MACD hist": 4}  # the rest: 2 decimals


def _indicator_values(bars: pd.DataFrame) -> tuple[dict[str, float | None], dict[str, str]]:
    last = indicator_lines(bars).drop(columns="close").iloc[-1]
    values = {name: _round(value, DIGITS.get(name, 2)) for name, value in last.items()}
    return values, dict(CONVENTIONS)


def market_snapshot(provider: MarketDataProvider, ts_code: str, as_of: str, window: int = 20) -> MarketSnapshot:
    """Bars of the last `window` trading days and the latest indicators, all as of `as_of`."""
    as_of = normalize_date(as_of, "as-of date")
    bars = price_bars(provider, ts_code, as_of, window)
    if bars.empty:
        return MarketSnapshot(ts_code, as_of, [], {}, gaps=[
            _("no daily bars of {code} on or before {day} from the {provider} provider").format(
                code=ts_code, day=as_of, provider=provider.label())])
    values, conventions = _indicator_values(bars)
    gaps = [_("{name} is still in its warm-up ({n} bars of history)").format(name=name, n=len(bars))
            for name, v in values.items() if v is None]
    shown = bars.tail(window)
    rows = [{"trade_date": str(r["trade_date"]),
             **{label: _round(r[name], digits) for name, (label, digits) in SHOWN.items() if name in r}}
            for r in shown.to_dict("records")]
    return MarketSnapshot(ts_code, as_of, rows, values, conventions, gaps, provider.price_basis)
