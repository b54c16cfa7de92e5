"""The research and risk debates as compiled subgraphs with isolated state (seed 001's InvestDebateState and
RiskDebateState): speakers take turns on their own message list, a judge decides, the audit checks the judge's
figures, and only the decisions (plus a small record of the debate) leave the subgraph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.nodes.audit import judge_audit_node
from graphs.analyze.nodes.bear import PROMPT as BEAR
from graphs.analyze.nodes.bull import PROMPT as BULL
from graphs.analyze.nodes.neutral import PROMPT as NEUTRAL
from graphs.analyze.nodes.research_judge import research_judge_node
from graphs.analyze.nodes.risk_judge import risk_judge_node
from graphs.analyze.nodes.risky import PROMPT as RISKY
from graphs.analyze.nodes.safe import PROMPT as SAFE
from graphs.analyze.routes import route_after_judge, route_research, route_risk
from graphs.analyze.speaking import make_speaker, transcript
from graphs.analyze.state import DebateInput, DebateState, ResearchOutput, RiskOutput
from graphs.context import thread_id


def make_close(stage: str) -> Callable[..., dict[str, Any]]:
    """The debate's end: its transcript is stored as an artifact of the run (it never enters the parent state),
    and only a small record of the debate leaves with the decisions."""

    def close_node(state: DebateState, runtime: Runtime[AnalyzeDeps], config: RunnableConfig) -> dict[str, Any]:
        ref = runtime.context.artifacts.put(
            thread_id(config), state["run_id"], f"{stage}_transcript", f"{stage}_debate.md",
            f"{stage} debate on {state['company_of_interest']}", "text/markdown", transcript(state).encode())
        run = {"turns": state.get("count", 0), "tokens": state.get("tokens", 0), "stopped": state.get("stopped"),
               "audit": state.get("audit") or {}, "transcript": ref["id"]}
        return {"budget": state["budget"] - state.get("tokens", 0), "stage_runs": {stage: run}}

    return close_node


def _debate(
        stage: str, speakers: dict[str, str], judge: str, judge_node: Callable[..., dict[str, Any]],
        route: Callable[[DebateState], str], output: type,
) -> CompiledStateGraph[DebateState, AnalyzeDeps, DebateInput, Any]:
    graph = StateGraph(DebateState, input_schema=DebateInput, output_schema=output, context_schema=AnalyzeDeps)
    for role, prompt in speakers.items():
        graph.add_node(role, make_speaker(role, prompt, stage))
    graph.add_node(judge, judge_node)
    graph.add_node("audit", judge_audit_node)
    graph.add_node("close", make_close(stage))
    targets = [*speakers, judge, "close"]
    graph.add_conditional_edges(START, route, targets)
    for role in speakers:
        graph.add_conditional_edges(role, route, targets)
    graph.add_conditional_edges(judge, route_after_judge, ["audit", "close"])
    graph.add_edge("audit", "close")
    graph.add_edge("close", END)
    return graph.compile(name=f"{stage}_debate")


def build_research_debate() -> CompiledStateGraph[DebateState, AnalyzeDeps, DebateInput, Any]:
    return _debate("research", {"bull": BULL, "bear": BEAR}, "research_judge", research_judge_node, route_research,
                   ResearchOutput)


def build_risk_debate() -> CompiledStateGraph[DebateState, AnalyzeDeps, DebateInput, Any]:
    return _debate("risk", {"risky": RISKY, "safe": SAFE, "neutral": NEUTRAL}, "risk_judge", risk_judge_node,
                   route_risk, RiskOutput)
