"""The execution agent (seed 002): load → plan ⇄ act (the ReAct loop, every step logged) → decide → order
approval (when a buy or sell clears the rule's threshold) → report. Rules in the rule language skip the model:
load → compute → decide."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.context import node
from graphs.order.graph import build_order_approval
from graphs.rule.deps import RuleDeps
from graphs.rule.nodes.act import act_node
from graphs.rule.nodes.compute import compute_node
from graphs.rule.nodes.decide import decide_node
from graphs.rule.nodes.load import load_node
from graphs.rule.nodes.plan import plan_node
from graphs.rule.nodes.report import report_node
from graphs.rule.routes import route_after_decide, route_after_load, route_after_plan
from graphs.rule.state import RuleRunState


def build_rule_graph(
        checkpointer: BaseCheckpointSaver | Checkpointer = None,
) -> CompiledStateGraph[RuleRunState, RuleDeps, RuleRunState, RuleRunState]:
    graph = StateGraph(RuleRunState, context_schema=RuleDeps)
    graph.add_node("load", load_node)
    graph.add_node("plan", plan_node)
    graph.add_node("act", node(act_node))
    graph.add_node("compute", node(compute_node))
    graph.add_node("decide", node(decide_node))
    graph.add_node("order_approval", build_order_approval())
    graph.add_node("report", node(report_node))
    graph.add_edge(START, "load")
    graph.add_conditional_edges("load", route_after_load, ["plan", "compute", END])
    graph.add_conditional_edges("plan", route_after_plan, ["act", "plan", "decide"])
    graph.add_edge("act", "plan")
    graph.add_edge("compute", "decide")
    graph.add_conditional_edges("decide", route_after_decide, ["order_approval", "report"])
    graph.add_edge("order_approval", "report")
    graph.add_edge("report", END)
    return graph.compile(checkpointer=checkpointer, name="rule")
