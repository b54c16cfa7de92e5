"""The trading decision desk (seeds 001 and 004): prepare → the chosen analysts in parallel (each a subgraph with
private state and its own tool loop) → fusion → research debate → risk debate → trader → order approval (a trader
approves, edits or rejects) → record → report. The memory summaries the reports made due run from fusion beside
the debates, off the critical path; the report waits for them. Without an LLM: prepare → no_llm (what code alone
can compute)."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.analyze.analyst import build_analyst
from graphs.analyze.debate import build_research_debate, build_risk_debate
from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.nodes.fundamentals_analyst import SPEC as FUNDAMENTALS
from graphs.analyze.nodes.fusion import fusion_node
from graphs.analyze.nodes.market_analyst import SPEC as MARKET
from graphs.analyze.nodes.memory_summary import memory_summary_node
from graphs.analyze.nodes.news_analyst import SPEC as NEWS
from graphs.analyze.nodes.no_llm import no_llm_node
from graphs.analyze.nodes.prepare import prepare_node
from graphs.analyze.nodes.record import record_node
from graphs.analyze.nodes.replay import make_replay_node
from graphs.analyze.nodes.replay_fill import replay_fill_node
from graphs.analyze.nodes.report import report_node
from graphs.analyze.nodes.sentiment_analyst import SPEC as SENTIMENT
from graphs.analyze.nodes.trader import trader_node
from graphs.analyze.routes import (
    route_after_fusion,
    route_after_prepare,
    route_after_research,
    route_after_risk,
    route_after_trader,
)
from graphs.analyze.state import AnalyzeState
from graphs.context import node
from graphs.order.graph import build_order_approval

SPECS = (MARKET, NEWS, SENTIMENT, FUNDAMENTALS)


def build_analyze_graph(
        checkpointer: BaseCheckpointSaver | Checkpointer = None, *, replay: bool = False,
) -> CompiledStateGraph[AnalyzeState, AnalyzeDeps, AnalyzeState, AnalyzeState]:
    """The desk; `replay=True` is the desk one replay date runs (orders fill in the replay account, no approval,
    and no nested replay)."""
    graph = StateGraph(AnalyzeState, context_schema=AnalyzeDeps)
    graph.add_node("prepare", node(prepare_node))
    graph.add_node("no_llm", no_llm_node)
    if not replay:
        graph.add_node("replay", make_replay_node(build_analyze_graph(replay=True)))
        graph.add_edge("replay", END)
    analysts = [f"{spec.name}_analyst" for spec in SPECS]
    for spec in SPECS:
        graph.add_node(f"{spec.name}_analyst", build_analyst(spec))
    graph.add_node("fusion", fusion_node)
    graph.add_node("memory", memory_summary_node)
    graph.add_node("research", build_research_debate())
    graph.add_node("risk", build_risk_debate())
    graph.add_node("trader", node(trader_node))
    if not replay:
        graph.add_node("order_approval", build_order_approval())
    graph.add_node("record", node(record_node))
    # after every memory summary: the result counts their tokens
    graph.add_node("report", node(report_node), defer=True)
    graph.add_edge(START, "prepare")
    graph.add_conditional_edges("prepare", route_after_prepare,
                                [*analysts, "no_llm", END, *([] if replay else ["replay"])])
    graph.add_edge("no_llm", END)
    for name in analysts:
        graph.add_edge(name, "fusion")
    graph.add_conditional_edges("fusion", route_after_fusion, ["memory", "research", "report"])
    graph.add_edge("memory", END)
    graph.add_conditional_edges("research", route_after_research, ["risk", "report"])
    graph.add_conditional_edges("risk", route_after_risk, ["trader", "report"])
    if replay:
        graph.add_node("replay_fill", node(replay_fill_node))
        graph.add_conditional_edges("trader", route_after_trader, ["replay_fill", "record"])
        graph.add_edge("replay_fill", "record")
    else:
        graph.add_conditional_edges("trader", route_after_trader, ["order_approval", "record"])
        graph.add_edge("order_approval", "record")
    graph.add_edge("record", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer, name="analyze_replay_date" if replay else "analyze")
