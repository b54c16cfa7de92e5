"""One analyst as a compiled subgraph with private state (seed 001): start → agent ⇄ tools → audit → save.

The agent's own tool loop has a tool-call counter as a circuit breaker (seed 004): at its limit the model is asked
once more, without tools, to write the report from what it has. The branch also stops calling the model when its
share of the decision's token budget is spent, and then says so in place of a report."""

from __future__ import annotations

from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.nodes.analyst_agent import make_agent_node
from graphs.analyze.nodes.analyst_save import make_save_node
from graphs.analyze.nodes.analyst_start import make_start_node
from graphs.analyze.nodes.analyst_tools import make_tools_node
from graphs.analyze.nodes.audit import make_analyst_audit_node
from graphs.analyze.state import AnalystInput, AnalystOutput, AnalystSpec, AnalystState


def route_after_agent(state: AnalystState) -> str:
    messages = state.get("messages")
    last = messages[-1] if messages else None
    if state.get("stopped") or not getattr(last, "tool_calls", None):
        return "audit"
    return "tools"


def build_analyst(spec: AnalystSpec) -> CompiledStateGraph[AnalystState, AnalyzeDeps, AnalystInput, AnalystOutput]:
    graph = StateGraph(AnalystState, input_schema=AnalystInput, output_schema=AnalystOutput,
                       context_schema=AnalyzeDeps)
    graph.add_node("start", make_start_node(spec))
    graph.add_node("agent", make_agent_node(spec))
    graph.add_node("tools", make_tools_node(spec))
    graph.add_node("audit", make_analyst_audit_node(spec))
    graph.add_node("save", make_save_node(spec))
    graph.add_edge(START, "start")
    graph.add_edge("start", "agent")
    graph.add_conditional_edges("agent", route_after_agent, ["tools", "audit"])
    graph.add_edge("tools", "agent")
    graph.add_edge("audit", "save")
    graph.add_edge("save", END)
    return graph.compile(name=f"{spec.name}_analyst")
