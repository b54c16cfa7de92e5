"""The desk's fundamentals, news and posts sources from the run's context (unconfigured: the market-data
provider's daily_basic fields, and gap-only news), and the valuation table the no-LLM reply shows."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphs.analyze.deps import AnalyzeDeps
from tools.data.fundamentals import FundamentalsSource, SourceResult, fundamentals_source
from tools.data.news import NO_NEWS, NO_POSTS, NewsResult, NewsSource, NoNews
from tools.i18n import _


def fundamentals_of(ctx: AnalyzeDeps) -> FundamentalsSource:
    return ctx.fundamentals or fundamentals_source(market=ctx.provider)


def news_of(ctx: AnalyzeDeps) -> NewsSource:
    return ctx.news or NoNews(NO_NEWS)


def posts_of(ctx: AnalyzeDeps) -> NewsSource:
    return ctx.posts or NoNews(NO_POSTS)


NO_DATA = "no_data"


def no_data(why: str) -> dict[str, str]:
    """The explicit answer of a tool whose source is not configured or has nothing."""
    return {NO_DATA: f"no data: {why}; do not estimate"}


def gap_of(output: dict[str, Any]) -> str | None:
    """The data gap a tool's answer tells of, as the reader is told it (the model reads the answer itself)."""
    said = output.get(NO_DATA)
    if not said:
        return None
    return _("no data: {why}").format(why=said.removeprefix("no data: ").removesuffix("; do not estimate"))


def fundamentals_output(result: SourceResult) -> dict[str, Any]:
    """A fundamentals answer as a tool output: its rows with their units, or the explicit no-data gap."""
    if result.gap or not result.rows:
        return no_data(result.gap or _("no rows"))
    return {"dataset": result.dataset, "units": result.units, "rows": result.rows}


def news_output(result: NewsResult, limit_chars: int = 400) -> dict[str, Any]:
    if result.gap or not result.items:
        return no_data(result.gap or _("no items"))
    items = [{"datetime": i.datetime, "title": i.title, "content": i.content[:limit_chars], "source": i.source}
             for i in result.items]
    return {"items": items, "notes": list(result.notes)}


def as_of_time(request: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(request["as_of"])


def valuation(ctx: AnalyzeDeps, request: dict[str, Any]) -> dict[str, Any]:
    """The latest daily_basic row on or before the decision date as (field, value) rows, with units, or a gap."""
    result = fundamentals_of(ctx).daily_basic(request["ts_code"], request["trade_date"])
    if result.gap or not result.rows:
        return {"rows": [], "units": {}, "gap": result.gap or _("no daily_basic rows")}
    row = result.rows[0]
    rows = [(name, (f"{value:,.2f}" if abs(value) >= 100 else f"{round(value, 4):,}") if isinstance(value, float)
             else str(value))
            for name, value in row.items() if name != "ts_code" and value is not None]
    shown = {name for name, _ in rows}
    units = {name: unit for name, unit in result.units.items() if name in shown}
    return {"rows": rows, "units": units, "gap": None}
