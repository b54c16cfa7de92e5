"""Prepare: read the request (the grammar, or free text through the light model), fix the session and the decision
date, resolve earlier decisions on the code whose horizon has passed, and choose the path: the analysts in
parallel, or the no-LLM reply.

Sessions follow Asia/Shanghai's market day. A post-close decision (the default) is as of the close of its date: the
latest trading day in the data by default, never a day the data does not have yet. A pre-open decision for day D
(`session=pre_open`, or any request without a past DATE made before 09:30 on a trading day while the data is live)
is made before D opens: its data is as of the previous trading day's close and nothing of D, while its analysts'
memory is D's pre-open session. The request keeps both: `trade_date` is the day whose close the data reaches (what
every tool, the trader and the decision log use), `session_date` the day of the session (what the memory and the
reflections use)."""

from __future__ import annotations

import uuid
from datetime import datetime, time, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Overwrite
from pydantic import BaseModel, Field

from graphs.analyze.budget import tokens_of
from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.grammar import (
    MAX_REPLAY_DATES,
    USAGE,
    DecisionGrammarError,
    DecisionRequest,
    parse_request,
)
from graphs.analyze.memory import HORIZON_DAYS
from graphs.analyze.models import MODELS
from graphs.analyze.state import AnalyzeState
from graphs.clarify import CANCELLED, is_cancel
from graphs.common import new_human_text
from graphs.context import default_account, model_for, thread_id
from graphs.llm import MODEL_FAILURES, describe_model_failure, invoke_structured_with_raw
from tools.broker.clock import clock_for, day, trading_days, ymd
from tools.data.schema import DataError
from tools.desk.log import reflection_text, resolve_due
from tools.desk.memory import session_at
from tools.desk.snapshot import price_bars, trading_days_back
from tools.i18n import N_, _, pgettext

SHANGHAI = ZoneInfo("Asia/Shanghai")
REPLAY_PREFIX = "replay:"  # the memory namespace (and account name) of a replay
CLOSE = time(15, 0)

EXTRACT_PROMPT = """[role: request reader]
Turn a quant's request for a trading decision on one A-share stock into the desk's command. Answer with DeskCommand:
the command using a full ts_code such as 600519.SH, or no command and a reply saying what is missing when no stock is
named."""


class DeskCommand(BaseModel):
    """The desk's command for the request, or what is missing when no stock is named."""

    command: str | None = Field(default=None, description="analyze CODE [YYYYMMDD] [depth=1..5] "
                                                          "[analysts=market,news,sentiment,fundamentals]; null when "
                                                          "no stock is named")
    reply: str | None = Field(default=None, description="what is missing, when there is no command")


def prepare_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, messages = runtime.context, state.get("messages", [])
    text = new_human_text(messages, state.get("consumed", 0))
    # a thread keeps its state between requests: everything of the previous decision is cleared, the merged
    # per-analyst and per-stage records too (their reducer would otherwise keep the old entries)
    fresh: dict[str, Any] = {"consumed": len(messages), "result": None, "final_reply": None,
                             "analyst_runs": Overwrite({}), "stage_runs": Overwrite({}), "memory_runs": Overwrite({}),
                             "memory_due": {}, "order_intent": {},
                             "order_outcome": {}, "execution_record": None, "stopped": None, "research_summary": None,
                             "risk_summary": None, "investment_plan": None, "final_trade_decision": None,
                             "trader_investment_plan": None, "max_drawdown": None, "resolutions": []}
    if is_cancel(text):
        return {**fresh, "final_reply": CANCELLED}
    try:
        request, reader_tokens = _request(ctx, text)
        replay_dates = _replay_dates(ctx, request) if request.end_date else []
        session, session_date, trade_date, note = _session_dates(ctx, request, replay_dates)
    except (DecisionGrammarError, DataError) as exc:
        reason = str(exc).rstrip()
        stop = "" if reason.endswith((".", "?", "!", "。", "？", "！")) else pgettext("sentence end", ".")
        return {**fresh, "final_reply": f"{reason}{stop}\n" + _("Usage: `{usage}`").format(usage=USAGE)}
    as_of = datetime.combine(day(trade_date), CLOSE, SHANGHAI)  # the data's cut-off: the close of trade_date
    names = ctx.provider.securities(request.ts_code)
    resolved = resolve_due(ctx.engine, ctx.provider, namespace=ctx.desk_namespace, as_of_date=session_date,
                           horizon=HORIZON_DAYS)
    # one id per request of the thread, the same when a crash makes this node run again: the decision log, the
    # analysts' reports, the artifacts and a replay's account and namespace are keyed by it, so a re-run replaces
    # rather than duplicates
    run_id = uuid.uuid5(uuid.NAMESPACE_URL, f"quantdesk:{thread_id(config)}:{len(messages)}").hex
    plan = {**request.as_dict(), "trade_date": trade_date, "as_of": as_of.isoformat(), "session": session,
            "session_date": session_date, "run_id": run_id, "namespace": ctx.desk_namespace,
            "account": request.account or default_account(config),
            "name": names[request.ts_code].name, "price_basis": ctx.provider.price_basis,
            "budget": ctx.decision_token_budget, "no_llm": ctx.llm is None,
            "notes": [note] if note else [], "reader_tokens": reader_tokens, "replay_dates": replay_dates,
            "replay": is_replay(ctx)}
    resolutions = [{"decision_id": r.decision_id, "ts_code": r.ts_code, "text": reflection_text(r)} for r in resolved]
    return {**fresh, "request": plan, "run_id": run_id, "company_of_interest": request.ts_code,
            "trade_date": trade_date, "trade_timestamp": as_of.isoformat(), "resolutions": resolutions}


def _request(ctx: AnalyzeDeps, text: str) -> tuple[DecisionRequest, int]:
    """The request, and the tokens the light model spent reading it from free text (0 for the grammar)."""
    try:
        return parse_request(text), 0
    except DecisionGrammarError:
        model = model_for(ctx, MODELS["request reader"])
        if model is None or text.split(" ", 1)[0].lower().lstrip("/") == "analyze":
            raise
    prompt = [SystemMessage(EXTRACT_PROMPT), HumanMessage(text)]
    try:
        answer, reply = invoke_structured_with_raw(model, prompt, DeskCommand, N_("command"))
    except MODEL_FAILURES as exc:
        raise DecisionGrammarError(_("{failure}; write the request as the grammar").format(
            failure=describe_model_failure(exc))) from None
    if not answer.command:
        raise DecisionGrammarError(answer.reply or _("name a stock code, e.g. `analyze 600519.SH`"))
    return parse_request(answer.command), tokens_of(prompt, reply)


def is_replay(ctx: AnalyzeDeps) -> bool:
    """Whether this run is one date of a replay (its memory and account are the replay's own)."""
    return ctx.desk_namespace.startswith(REPLAY_PREFIX)


def _replay_dates(ctx: AnalyzeDeps, request: DecisionRequest) -> list[str]:
    """Every `every`-th day the stock traded within the range (up to the data's last day): suspended days are left
    out, so no date fills at a stale close."""
    if ctx.llm is None:
        raise DecisionGrammarError(_("a replay runs the whole desk on every date and needs an LLM (OPENAI_API_KEY, "
                                     "OPENAI_BASE_URL)"))
    end = min(str(request.end_date), str(ctx.provider.last_date()))
    start = str(request.trade_date)
    if start > end:
        raise DataError(_("the data ends on {end}; the replay starts on {start}").format(end=end, start=start))
    bars = ctx.provider.daily(request.ts_code, start, end, ["close"], warnings=[])  # DataError when it has none
    dates = sorted(str(d) for d in bars.dropna(subset=["close"])["trade_date"])[::request.every]
    if len(dates) > MAX_REPLAY_DATES:
        raise DecisionGrammarError(_("the replay has {n} dates; at most {most} (raise every= or shorten the range)"
                                     ).format(n=len(dates), most=MAX_REPLAY_DATES))
    return dates


def _decision_date(ctx: AnalyzeDeps, request: DecisionRequest) -> tuple[str, str | None]:
    """The trading day to decide on, and a note when it is not the day asked for."""
    last = ctx.provider.last_date()
    if last is None:
        raise DataError(_("the {provider} provider has no bars at all").format(provider=ctx.provider.label()))
    asked = request.trade_date or last
    if asked > last:
        raise DataError(_("the data ends on {last}; {asked} has no bars yet").format(last=last, asked=asked))
    days = trading_days_back(ctx.provider, asked, 1)
    if not days:
        raise DataError(_("no trading day on or before {day} in the data").format(day=asked))
    if price_bars(ctx.provider, request.ts_code, days[-1], 1).empty:
        raise DataError(_("the {provider} provider has no bars of {code} on or before {day}").format(
            provider=ctx.provider.label(), code=request.ts_code, day=days[-1]))
    if days[-1] != asked:
        return days[-1], _("{asked} is not a trading day; deciding as of {day}, the one before").format(
            asked=asked, day=days[-1])
    return days[-1], None


def _session_dates(ctx: AnalyzeDeps, request: DecisionRequest,
                   replay_dates: list[str]) -> tuple[str, str, str, str | None]:
    """(the session, its day, the day whose close the data reaches, a note when that is not the day asked for)."""
    if replay_dates:  # each date is decided by a desk of its own, in the session asked for
        return request.session or "post_close", replay_dates[0], replay_dates[0], None
    if (request.session or _live_session(ctx, request)) == "pre_open":
        return ("pre_open", *_pre_open_dates(ctx, request))
    trade_date, note = _decision_date(ctx, request)
    return "post_close", trade_date, trade_date, note


def _live_session(ctx: AnalyzeDeps, request: DecisionRequest) -> str:
    """pre_open when a request for today (no DATE, or today's) comes before 09:30 Asia/Shanghai on a trading day
    whose data is live (the paper account's clock) and ends at the close of the trading day before; else
    post_close."""
    now = ctx.now().astimezone(SHANGHAI)
    today = ymd(now.date())
    if ctx.paper is None or request.trade_date not in (None, today) or session_at(now) != "pre_open":
        return "post_close"
    last = ctx.provider.last_date()
    if last is None or last >= today or clock_for(ctx.provider, ctx.paper.live_data_days, now).simulated:
        return "post_close"
    # today's open is next only when the data holds the close of the trading day before it (data a day or more
    # behind would make a pre-open decision of a day already past)
    return "pre_open" if _next_trading_day(ctx, last) == today else "post_close"


def _next_trading_day(ctx: AnalyzeDeps, last: str) -> str:
    """The first trading day after `last` (the data's last day): the next session the data can decide before."""
    return trading_days(ctx.provider, ymd(day(last) + timedelta(days=1)), 1)[0][0]


def _pre_open_dates(ctx: AnalyzeDeps, request: DecisionRequest) -> tuple[str, str, str]:
    """(the session's day D, the trading day before it whose close the data reaches, a note). D is the DATE asked
    for, else the next trading day after the data's last day (today, before a live open)."""
    last = ctx.provider.last_date()
    if last is None:
        raise DataError(_("the {provider} provider has no bars at all").format(provider=ctx.provider.label()))
    following = _next_trading_day(ctx, last)
    session = request.trade_date or following
    if trading_days(ctx.provider, session, 1)[0][0] != session:
        raise DataError(_("{day} is not a trading day, so it has no pre-open session").format(day=session))
    if session > following:
        raise DataError(_("the data ends on {last}; the pre-open of {day} needs the close of the trading day before it"
                          ).format(last=last, day=session))
    before = trading_days_back(ctx.provider, ymd(day(session) - timedelta(days=1)), 1)
    if not before:
        raise DataError(_("no trading day before {day} in the data, so nothing is known before its open").format(
            day=session))
    if price_bars(ctx.provider, request.ts_code, before[-1], 1).empty:
        raise DataError(_("the {provider} provider has no bars of {code} on or before {day}").format(
            provider=ctx.provider.label(), code=request.ts_code, day=before[-1]))
    return session, before[-1], _("pre-open decision for {day}: data up to the close of {close}").format(
        day=session, close=before[-1])
