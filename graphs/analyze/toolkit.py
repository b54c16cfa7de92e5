"""The analysts' data tools, each bound to the decision's as-of time (point in time) and filtered per analyst:
an analyst is only ever offered, and can only ever run, its own tools. A source that is not configured or has
nothing returns an explicit "no data: <why>; do not estimate" result, which the report lists under data gaps."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from langchain_core.tools import StructuredTool

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.sources import (
    as_of_time,
    fundamentals_of,
    fundamentals_output,
    gap_of,
    news_of,
    news_output,
    no_data,
    posts_of,
)
from tools.desk.sentiment import score_sentiment
from tools.desk.snapshot import market_snapshot
from tools.i18n import _


@dataclass(frozen=True)
class ToolRun:
    """One tool call's output: what the model reads, the structure the audit reads, and a data gap if any."""

    text: str
    output: Any
    gap: str | None


def _run(output: dict[str, Any]) -> ToolRun:
    return ToolRun(json.dumps(output, ensure_ascii=False, default=str), output, gap_of(output))


def _market_tools(ctx: AnalyzeDeps, request: dict[str, Any]) -> dict[str, Callable[..., dict[str, Any]]]:
    code, as_of = request["ts_code"], request["trade_date"]

    def get_price_bars(days: int = 20) -> dict[str, Any]:
        """Daily bars (open, high, low, close, pct_chg %, vol in lots, amount in thousand CNY) of the stock for the
        last `days` trading days up to the decision date (at most 120)."""
        snap = market_snapshot(ctx.provider, code, as_of, window=max(1, min(int(days), 120)))
        if not snap.bars:
            return no_data(snap.gaps[0])
        return {"ts_code": code, "as_of": as_of, "bars": snap.bars}

    def get_indicators() -> dict[str, Any]:
        """The latest MA(5/10/20/60), EMA(12/26), RSI(14), MACD(12,26,9), BOLL(20,2), ATR(14) and KDJ(9,3,3) of
        the stock as of the decision date, computed in code (TA-Lib conventions)."""
        snap = market_snapshot(ctx.provider, code, as_of)
        if not snap.bars:
            return no_data(snap.gaps[0])
        return snap.as_tool_output()

    return {"get_price_bars": get_price_bars, "get_indicators": get_indicators}


def _fundamentals_tools(ctx: AnalyzeDeps, request: dict[str, Any]) -> dict[str, Callable[..., dict[str, Any]]]:
    code, as_of, source = request["ts_code"], request["trade_date"], fundamentals_of(ctx)

    def get_daily_basic() -> dict[str, Any]:
        """Valuation on the decision date (tushare daily_basic): pe, pe_ttm, pb, ps, dividend yield (%), turnover
        (%), total and float market value (万元), shares (万股)."""
        return fundamentals_output(source.daily_basic(code, as_of))

    def get_income(periods: int = 4) -> dict[str, Any]:
        """The last `periods` income statements announced on or before the decision date (values in CNY)."""
        return fundamentals_output(source.income(code, as_of, max(1, min(int(periods), 8))))

    def get_fina_indicator(periods: int = 4) -> dict[str, Any]:
        """The last `periods` financial indicator reports announced on or before the decision date (roe, margins,
        growth in %; eps in CNY per share)."""
        return fundamentals_output(source.fina_indicator(code, as_of, max(1, min(int(periods), 8))))

    return {"get_daily_basic": get_daily_basic, "get_income": get_income, "get_fina_indicator": get_fina_indicator}


def _news_tools(ctx: AnalyzeDeps, request: dict[str, Any]) -> dict[str, Callable[..., dict[str, Any]]]:
    code, as_of = request["ts_code"], as_of_time(request)

    def get_news(lookback_days: int = 7) -> dict[str, Any]:
        """News, major news and announcements about the stock published in the last `lookback_days` days up to
        the decision time, newest first, duplicates removed."""
        return news_output(news_of(ctx).news(code, as_of, max(1, min(int(lookback_days), 90))))

    return {"get_news": get_news}


def _sentiment_tools(ctx: AnalyzeDeps, request: dict[str, Any]) -> dict[str, Callable[..., dict[str, Any]]]:
    code, as_of = request["ts_code"], as_of_time(request)

    def get_sentiment(lookback_days: int = 7) -> dict[str, Any]:
        """A lexicon sentiment score, computed in code, of the news and posts about the stock in the last
        `lookback_days` days up to the decision time: counts of positive, negative and neutral items, a net score
        from -1 to 1, and the items that drove it."""
        days = max(1, min(int(lookback_days), 90))
        found = [news_of(ctx).news(code, as_of, days), posts_of(ctx).news(code, as_of, days)]
        items = [item for result in found for item in result.items]
        if not items:
            return no_data("; ".join(r.gap or _("no items") for r in found))
        summary = score_sentiment(items)
        return {"items": len(items), "positive": summary.positive, "negative": summary.negative,
                "neutral": summary.neutral, "score": round(summary.score, 4), "method": summary.method,
                "drivers": [{"datetime": d.item.datetime, "title": d.item.title, "net": d.net}
                            for d in summary.drivers]}

    def get_posts(lookback_days: int = 3) -> dict[str, Any]:
        """Social posts about the stock in the last `lookback_days` days up to the decision time."""
        return news_output(posts_of(ctx).news(code, as_of, max(1, min(int(lookback_days), 30))))

    return {"get_sentiment": get_sentiment, "get_posts": get_posts}


TOOLSETS: dict[str, Callable[[AnalyzeDeps, dict[str, Any]], dict[str, Callable[..., dict[str, Any]]]]] = {
    "market": _market_tools, "fundamentals": _fundamentals_tools, "news": _news_tools,
    "sentiment": _sentiment_tools,
}


class Toolkit:
    """One analyst's tools for one request."""

    def __init__(self, analyst: str, ctx: AnalyzeDeps, request: dict[str, Any]) -> None:
        self.functions = TOOLSETS[analyst](ctx, request)

    def schemas(self) -> list[StructuredTool]:
        """The tools as LangChain tools, for `bind_tools`."""
        return [StructuredTool.from_function(fn, name=name) for name, fn in self.functions.items()]

    def run(self, name: str, args: dict[str, Any]) -> ToolRun:
        """Call one tool; an unknown tool or bad arguments is an answer the model can read, not a crash."""
        fn = self.functions.get(name)
        if fn is None:
            return ToolRun(json.dumps({"error": f"no tool {name!r} here; use one of: {', '.join(self.functions)}"}),
                           None, None)
        try:
            return _run(fn(**args))
        except (TypeError, ValueError) as exc:  # DataError is a ValueError: a bad argument or a failing source
            return ToolRun(json.dumps({"error": f"{name} could not run with {args}: {exc}"}), None, None)
