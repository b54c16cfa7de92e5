"""Report: the run's result, the rule's runtime status following the order's fill, and the rule's proposal claim
given back: the order approval is over, whatever its outcome (an approved order is open or filled by now, and
its position or open order guards the next run)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext
from graphs.execution.nodes.decide import rule_account, rule_tag
from graphs.execution.state import ExecutionState
from tools.broker.paper import tagged_position


def report_node(state: ExecutionState, runtime: Runtime[WorkflowContext], config: RunnableConfig) -> dict[str, Any]:
    ctx, rule = runtime.context, state["rule"]
    decision = dict(state.get("decision") or {})
    outcome = state.get("order_outcome") or {}
    status = dict(rule.get("runtime_status") or {})
    status["last_action"] = decision.get("action")
    status["last_execution"] = state["execution_id"]
    held, waiting = tagged_position(ctx.engine, rule_account(rule, config), rule["symbol"], rule_tag(rule))
    status["position"], status["open_orders"] = held, waiting  # what the rule's orders filled, so far
    paused = False
    if ctx.rules is not None:
        ctx.rules.release_proposal(int(rule["id"]), state["execution_id"])
        ctx.rules.set_runtime_status(int(rule["id"]), status)
        if decision.get("failure"):
            paused = ctx.rules.record_failure(int(rule["id"]), str(decision.get("reason")))
        else:
            ctx.rules.record_success(int(rule["id"]))
    return {"result": {"kind": "rule_run", "rule": {k: rule[k] for k in ("id", "symbol", "requirements", "source")},
                       "execution_id": state["execution_id"], "decision": decision,
                       "steps": state.get("history") or [], "order": outcome, "position": status.get("position", 0),
                       "paused": paused, "owner": rule["owner"]}}
