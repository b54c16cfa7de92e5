"""Routing of the execution agent and its limits: at most MAX_ROUNDS model steps and RUN_TIMEOUT seconds, an
early stop on a decision, one second chance for a malformed answer."""

from __future__ import annotations

from langgraph.graph import END

from graphs.rule.state import RuleRunState

MAX_ROUNDS = 10
RUN_TIMEOUT_SECONDS = 300.0
MALFORMED_RETRIES = 1


def route_after_load(state: RuleRunState) -> str:
    if state.get("final_reply"):
        return END
    return "compute" if state["rule"]["source"] == "language" else "plan"


def route_after_plan(state: RuleRunState) -> str:
    if state.get("decision") is not None:
        return "decide"
    return "act" if state.get("action") else "plan"


def route_after_decide(state: RuleRunState) -> str:
    return "order_approval" if state.get("order_intent") else "report"
