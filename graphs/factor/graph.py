"""The factor-coding subgraph (seed 003): collect_spec → codegen → dry_run → semantic_check → retry_router
(≤ 5 retries) → human_review (code_review interrupt) → backfill → evaluate → confirm_save (approval interrupt,
only for a near duplicate of another factor) → write_db → finish; clarify
pauses for missing essentials, a rejection is recorded and ends the run."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.clarify import clarify_node
from graphs.context import WorkflowContext
from graphs.factor.nodes.backfill import backfill_node, evaluate_node
from graphs.factor.nodes.checks import dry_run_node, semantic_check_node
from graphs.factor.nodes.codegen import codegen_node
from graphs.factor.nodes.collect_spec import collect_spec_node
from graphs.factor.nodes.confirm_save import confirm_save_node
from graphs.factor.nodes.finish import finish_node
from graphs.factor.nodes.review import human_review_node, retry_router_node
from graphs.factor.nodes.store import record_reject_node, write_db_node
from graphs.factor.state import FactorState


def route_after_spec(state: FactorState) -> str:
    if state.get("clarification_needed"):
        return "clarify"
    if state.get("final_reply") or not state.get("spec"):
        return "finish"
    return "codegen"


def build_factor_graph(checkpointer: BaseCheckpointSaver | Checkpointer = None) -> CompiledStateGraph:
    graph = StateGraph(FactorState, context_schema=WorkflowContext)
    graph.add_node("collect_spec", collect_spec_node)
    graph.add_node("clarify", clarify_node)
    graph.add_node("codegen", codegen_node)
    graph.add_node("dry_run", dry_run_node)
    graph.add_node("semantic_check", semantic_check_node)
    graph.add_node("retry_router", retry_router_node, destinations=("codegen", "human_review", "backfill", "finish"))
    graph.add_node("human_review", human_review_node,
                   destinations=("backfill", "record_reject", "dry_run", "human_review"))
    graph.add_node("backfill", backfill_node, destinations=("evaluate", "finish"))
    graph.add_node("evaluate", evaluate_node, destinations=("confirm_save", "write_db", "finish"))
    graph.add_node("confirm_save", confirm_save_node, destinations=("write_db", "finish", "confirm_save"))
    graph.add_node("write_db", write_db_node)
    graph.add_node("record_reject", record_reject_node)
    graph.add_node("finish", finish_node)
    graph.add_edge(START, "collect_spec")
    graph.add_conditional_edges("collect_spec", route_after_spec, ["clarify", "codegen", "finish"])
    graph.add_edge("clarify", "collect_spec")
    graph.add_edge("codegen", "dry_run")
    graph.add_edge("dry_run", "semantic_check")
    graph.add_edge("semantic_check", "retry_router")
    graph.add_edge("write_db", "finish")
    graph.add_edge("record_reject", "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer, name="factor")
