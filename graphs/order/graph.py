"""The order approval subgraph (propose → approve → authorize → submit → release), reused by every workflow that
ends in an order, and the manual order workflow around it (parse → order approval → report)."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.context import node
from graphs.order.deps import OrderDeps
from graphs.order.nodes.approve import approve_node
from graphs.order.nodes.authorize import authorize_node
from graphs.order.nodes.parse import parse_node
from graphs.order.nodes.propose import propose_node
from graphs.order.nodes.release import release_node
from graphs.order.nodes.report import report_node
from graphs.order.nodes.submit import submit_node
from graphs.order.routes import route_after_authorize, route_after_parse, route_after_propose
from graphs.order.state import OrderApprovalInput, OrderApprovalOutput, OrderApprovalState, OrderState


def build_order_approval(
) -> CompiledStateGraph[OrderApprovalState, OrderDeps, OrderApprovalInput, OrderApprovalOutput]:
    """Input `order_intent`, output `order_outcome`; its own state stays private."""
    graph = StateGraph(OrderApprovalState, input_schema=OrderApprovalInput, output_schema=OrderApprovalOutput,
                       context_schema=OrderDeps)
    graph.add_node("propose", node(propose_node))
    graph.add_node("approve", node(approve_node))
    graph.add_node("authorize", node(authorize_node))
    graph.add_node("submit", node(submit_node))
    graph.add_node("release", release_node)
    graph.add_edge(START, "propose")
    graph.add_conditional_edges("propose", route_after_propose, ["approve", "release"])
    graph.add_edge("approve", "authorize")
    graph.add_conditional_edges("authorize", route_after_authorize, ["approve", "submit", "release"])
    graph.add_edge("submit", "release")
    graph.add_edge("release", END)
    return graph.compile(name="order_approval")


def build_order_graph(
        checkpointer: BaseCheckpointSaver | Checkpointer = None,
) -> CompiledStateGraph[OrderState, OrderDeps, OrderState, OrderState]:
    graph = StateGraph(OrderState, context_schema=OrderDeps)
    graph.add_node("parse", parse_node)
    graph.add_node("order_approval", build_order_approval())
    graph.add_node("report", report_node)
    graph.add_edge(START, "parse")
    graph.add_conditional_edges("parse", route_after_parse, ["order_approval", END])
    graph.add_edge("order_approval", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer, name="order")
