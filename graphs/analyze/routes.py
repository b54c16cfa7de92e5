"""Routing of the desk: depth → debate rounds (seed 004's dynamic debate loop), the turn order of each debate,
and where the desk goes when a stage stopped early."""

from __future__ import annotations

from typing import Any

from langgraph.graph import END
from langgraph.types import Send

from graphs.analyze.state import AnalyzeState, DebateState

RESEARCH_ROUNDS = {1: 1, 2: 1, 3: 1, 4: 2, 5: 3}  # one round: one bull turn and one bear turn
RISK_ROUNDS = {1: 1, 2: 1, 3: 2, 4: 2, 5: 3}  # one round: risky, safe and neutral each speak once
RESEARCH_SPEAKERS = ("bull", "bear")
RISK_SPEAKERS = ("risky", "safe", "neutral")
ANALYST_SHARE = 0.6  # of a decision's token budget, split evenly among its analysts; the debates get the rest


def research_turns(depth: int) -> int:
    return RESEARCH_ROUNDS[depth] * len(RESEARCH_SPEAKERS)


def risk_turns(depth: int) -> int:
    return RISK_ROUNDS[depth] * len(RISK_SPEAKERS)


def next_speaker(state: DebateState, speakers: tuple[str, ...], turns: int, judge: str) -> str:
    """The next turn of a debate: the judge once every round is spoken, `close` when the debate stopped."""
    if state.get("stopped"):
        return "close"
    count = state.get("count", 0)
    return judge if count >= turns else speakers[count % len(speakers)]


def route_research(state: DebateState) -> str:
    return next_speaker(state, RESEARCH_SPEAKERS, research_turns(state["depth"]), "research_judge")


def route_risk(state: DebateState) -> str:
    return next_speaker(state, RISK_SPEAKERS, risk_turns(state["depth"]), "risk_judge")


def route_after_judge(state: DebateState) -> str:
    return "close" if state.get("stopped") else "audit"


def route_after_prepare(state: AnalyzeState) -> list[Send] | str:
    """Every chosen analyst at once (parallel branches with private state), or straight to the reply."""
    if state.get("final_reply"):
        return END
    request = state["request"]
    if request.get("no_llm"):
        return "no_llm"
    if request.get("replay_dates"):
        return "replay"
    share = int(request["budget"] * ANALYST_SHARE) // len(request["analysts"])
    return [Send(f"{name}_analyst", {"request": request, "budget": share}) for name in request["analysts"]]


def stopped_stage(state: AnalyzeState) -> str | None:
    """The first stage that stopped early, if any."""
    runs: list[dict[str, Any]] = [*(state.get("analyst_runs") or {}).values(),
                                  *(state.get("stage_runs") or {}).values()]
    return next((run["stopped"] for run in runs if run.get("stopped")), None)


def route_after_fusion(state: AnalyzeState) -> list[Send | str]:
    """The research debate (or the report, when the desk stopped), and beside it, not waited for, one task per
    memory summary due."""
    request = state["request"]
    summaries: list[Send | str] = [Send("memory", {"request": request, "analyst": name, "allowance": tokens})
                                   for name, tokens in (state.get("memory_due") or {}).items()]
    return [*summaries, "report" if state.get("stopped") else "research"]


def route_after_research(state: AnalyzeState) -> str:
    return "report" if stopped_stage(state) else "risk"


def route_after_risk(state: AnalyzeState) -> str:
    return "report" if stopped_stage(state) else "trader"


def route_after_trader(state: AnalyzeState) -> str:
    if not state.get("order_intent"):
        return "record"
    return "replay_fill" if state["request"].get("replay") else "order_approval"
