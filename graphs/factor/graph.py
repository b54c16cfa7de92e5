"""The factor-coding subgraph (seed 003): collect_spec → codegen → dry_run → semantic_check → (retry codegen,
at most 5 times) → human_review (code_review interrupt) → backfill → evaluate → confirm_save (approval
interrupt, only for a near duplicate of another factor) → write_db → finish; clarify pauses for missing
essentials, a rejection is recorded and ends the run; an edit is dry-run and checked, then reviewed again.
Routes live in routes.py; this file only wires."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.types import Checkpointer

from graphs.clarify import after_clarify, clarify_node
from graphs.context import node
from graphs.factor.deps import FactorDeps
from graphs.factor.nodes.backfill import backfill_node
from graphs.factor.nodes.codegen import codegen_node
from graphs.factor.nodes.collect_spec import collect_spec_node
from graphs.factor.nodes.confirm_save import confirm_save_node
from graphs.factor.nodes.dry_run import dry_run_node
from graphs.factor.nodes.evaluate import evaluate_node
from graphs.factor.nodes.finish import finish_node
from graphs.factor.nodes.human_review import human_review_node
from graphs.factor.nodes.record_reject import record_reject_node
from graphs.factor.nodes.semantic_check import semantic_check_node
from graphs.factor.nodes.write_db import write_db_node
from graphs.factor.routes import (
    route_after_backfill,
    route_after_checks,
    route_after_confirm,
    route_after_evaluate,
    route_after_review,
    route_after_spec,
)
from graphs.factor.state import FactorState


def build_factor_graph(
        checkpointer: BaseCheckpointSaver | Checkpointer = None,
) -> CompiledStateGraph[FactorState, FactorDeps, FactorState, FactorState]:
    graph = StateGraph(FactorState, context_schema=FactorDeps)
    graph.add_node("collect_spec", node(collect_spec_node))
    graph.add_node("clarify", clarify_node)
    graph.add_node("codegen", node(codegen_node))
    graph.add_node("dry_run", node(dry_run_node))
    graph.add_node("semantic_check", node(semantic_check_node))
    graph.add_node("human_review", node(human_review_node))
    graph.add_node("backfill", node(backfill_node))
    graph.add_node("evaluate", node(evaluate_node))
    graph.add_node("confirm_save", node(confirm_save_node))
    graph.add_node("write_db", node(write_db_node))
    graph.add_node("record_reject", node(record_reject_node))
    graph.add_node("finish", finish_node)
    graph.add_edge(START, "collect_spec")
    graph.add_conditional_edges("collect_spec", route_after_spec, ["clarify", "codegen", "finish"])
    graph.add_conditional_edges("clarify", after_clarify("collect_spec"), ["collect_spec", END])
    graph.add_edge("codegen", "dry_run")
    graph.add_edge("dry_run", "semantic_check")
    graph.add_conditional_edges("semantic_check", route_after_checks, ["codegen", "human_review", "finish"])
    graph.add_conditional_edges("human_review", route_after_review,
                                ["backfill", "record_reject", "dry_run", "human_review"])
    graph.add_conditional_edges("backfill", route_after_backfill, ["evaluate", "finish"])
    graph.add_conditional_edges("evaluate", route_after_evaluate, ["confirm_save", "write_db", "finish"])
    graph.add_conditional_edges("confirm_save", route_after_confirm, ["write_db", "finish", "confirm_save"])
    graph.add_edge("write_db", "finish")
    graph.add_edge("record_reject", "finish")
    graph.add_edge("finish", END)
    return graph.compile(checkpointer=checkpointer, name="factor")
