"""The signal-generation subgraph: reflection → data fetch → signal generation → validation → report, with
clarify as the human-in-the-loop pause."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.clarify import after_clarify, clarify_node
from graphs.context import node
from graphs.signal.deps import SignalDeps
from graphs.signal.nodes.data_fetch import data_fetch_node
from graphs.signal.nodes.reflection import reflection_node
from graphs.signal.nodes.report import report_node
from graphs.signal.nodes.signal_generate import signal_generate_node
from graphs.signal.nodes.validate import validate_node
from graphs.signal.routes import (
    route_after_data_fetch,
    route_after_signal_generate,
    route_after_validation,
    route_from_reflection,
)
from graphs.signal.state import SignalState


def build_signal_graph(
        checkpointer: BaseCheckpointSaver | Checkpointer = None,
) -> CompiledStateGraph[SignalState, SignalDeps, SignalState, SignalState]:
    graph = StateGraph(SignalState, context_schema=SignalDeps)
    graph.add_node("reflection", node(reflection_node))
    graph.add_node("data_fetch", node(data_fetch_node))
    graph.add_node("signal_generate", node(signal_generate_node))
    graph.add_node("validate", node(validate_node))
    graph.add_node("clarify", clarify_node)
    graph.add_node("report", node(report_node))
    graph.add_edge(START, "reflection")
    graph.add_conditional_edges("reflection", route_from_reflection,
                                ["clarify", "data_fetch", "signal_generate", "validate", "report", "reflection", END])
    graph.add_conditional_edges("data_fetch", route_after_data_fetch, ["reflection", "signal_generate"])
    graph.add_conditional_edges("signal_generate", route_after_signal_generate, ["reflection", "validate"])
    graph.add_conditional_edges("validate", route_after_validation, ["reflection", "report"])
    graph.add_conditional_edges("clarify", after_clarify("reflection"), ["reflection", END])
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer, name="signal")
