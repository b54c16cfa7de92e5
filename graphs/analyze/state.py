"""State of the trading decision desk (seeds 001 and 004), in two layers.

Analysts and debates are subgraphs with private state (input and output schemas): their messages never reach the
parent. The parent holds seed 001's FusionState (the four analyst memory summaries, account and price facts, the
decisions) plus the request and the bookkeeping of the run. JSON only: money and prices are decimal text."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from tools.desk.memory import AnalystMemorySummary


def merge(left: dict[str, Any] | None, right: dict[str, Any] | None) -> dict[str, Any]:
    """Parallel branches each add their own keys."""
    return {**(left or {}), **(right or {})}


@dataclass(frozen=True)
class AnalystSpec:
    """One analyst of the desk: what `build_analyst` makes a subgraph of."""

    name: str  # market, news, sentiment, fundamentals
    prompt: str  # the system prompt; {code}, {name}, {moment} (when it writes, in words), {date} (the day whose
    # close the data reaches), {memory}, {reflections} and {tool_limit} are filled in
    tool_limit: int  # the circuit breaker: tool calls before the report must be written


class AnalystInput(TypedDict):
    """What the desk hands one analyst: the request and the tokens it may spend."""

    request: dict[str, Any]
    budget: int


class AnalystOutput(TypedDict):
    """What comes back: one entry of `analyst_runs` (report, report id, tool calls, tokens, gaps, audit)."""

    analyst_runs: Annotated[dict[str, dict[str, Any]], merge]


class AnalystState(AnalystInput, AnalystOutput, total=False):
    """The seed's analyst private state."""

    company_of_interest: str
    trade_date: str
    trade_timestamp: str | None
    messages: Annotated[list[AnyMessage], add_messages]
    tool_calls: int
    tokens: int
    evidence: list[Any]  # every tool output, for the number audit
    gaps: list[str]
    report: str
    audit: dict[str, Any]
    stopped: str | None  # the desk stops: the model failed, or the token budget ran out
    failed: str | None  # the analyst wrote no report (its last answer was unusable): the debate goes on without it


class MemoryInput(TypedDict):
    """What one memory-summary task receives: the request, the analyst, and the tokens fusion set aside for it."""

    request: dict[str, Any]
    analyst: str
    allowance: int


class DebateInput(TypedDict, total=False):
    """What a debate subgraph receives from FusionState."""

    run_id: str  # the decision run (artifact keys)
    request: dict[str, Any]  # the run's request (a replay's turns are not streamed)
    company_of_interest: str
    trade_date: str
    market_analyst_summary: AnalystMemorySummary
    news_analyst_summary: AnalystMemorySummary
    sentiment_analyst_summary: AnalystMemorySummary
    fundamentals_analyst_summary: AnalystMemorySummary
    depth: int
    budget: int
    evidence: list[Any]  # the numbers the judges may quote: tool outputs, account and prices
    investment_plan: str | None
    research_summary: dict[str, Any] | None
    account_cash: str
    account_total_value: str
    current_price: str
    portfolio_positions: dict[str, dict[str, Any]]


class ResearchOutput(TypedDict):
    budget: int  # what is left for the risk debate
    investment_plan: str | None
    research_summary: dict[str, Any] | None
    stage_runs: Annotated[dict[str, dict[str, Any]], merge]


class RiskOutput(TypedDict):
    budget: int
    final_trade_decision: str | None
    risk_summary: dict[str, Any] | None
    stage_runs: Annotated[dict[str, dict[str, Any]], merge]


class DebateState(DebateInput, total=False):
    """InvestDebateState / RiskDebateState: the debate's own messages, speaker and turn count."""

    messages: Annotated[list[AnyMessage], add_messages]
    latest_speaker: str | None
    count: int
    tokens: int
    stopped: str | None
    judge_text: str  # what the judge wrote, for the number audit
    audit: dict[str, Any]
    final_trade_decision: str | None
    risk_summary: dict[str, Any] | None
    stage_runs: Annotated[dict[str, dict[str, Any]], merge]


class AnalyzeState(TypedDict, total=False):
    # shared with the main graph
    messages: Annotated[list[AnyMessage], add_messages]
    consumed: int
    requester: str | None
    result: dict[str, Any] | None
    final_reply: str | None
    # the request
    request: dict[str, Any]  # ts_code, trade_date, as_of, depth, analysts, account, namespace
    run_id: str
    analyst_runs: Annotated[dict[str, dict[str, Any]], merge]
    stage_runs: Annotated[dict[str, dict[str, Any]], merge]  # research, risk: turns, tokens, audit, stop
    memory_due: dict[str, int]  # analyst → tokens set aside for the memory summary its report made due
    memory_runs: Annotated[dict[str, dict[str, Any]], merge]  # analyst → the summary written (or None), tokens
    resolutions: list[dict[str, Any]]  # earlier decisions on the code resolved by this run
    # seed 001's FusionState
    company_of_interest: str
    trade_date: str
    trade_timestamp: str | None
    market_analyst_summary: AnalystMemorySummary
    news_analyst_summary: AnalystMemorySummary
    sentiment_analyst_summary: AnalystMemorySummary
    fundamentals_analyst_summary: AnalystMemorySummary
    research_summary: dict[str, Any] | None
    risk_summary: dict[str, Any] | None
    investment_plan: str | None
    trader_investment_plan: str | None
    final_trade_decision: str | None
    account_cash: str
    account_total_value: str
    current_price: str
    previous_close: str | None
    portfolio_positions: dict[str, dict[str, Any]]
    max_drawdown: str | None
    execution_record: dict[str, Any] | None
    evidence: list[Any]
    depth: int
    budget: int  # tokens left for the next stage
    stopped: str | None  # why the desk stopped early (token budget, a model failure), and where
    order_intent: dict[str, Any]
    order_outcome: dict[str, Any]


def session_of(request: Mapping[str, Any]) -> tuple[str, str]:
    """A request's session (pre_open or post_close) and the day of that session. A request checkpointed before
    sessions existed (a run resumed after an upgrade) is a post-close decision on its trade date."""
    return str(request.get("session") or "post_close"), str(request.get("session_date") or request["trade_date"])
