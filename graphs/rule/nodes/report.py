"""Report: the run's result, the rule's runtime status following the order's fill, and the rule's order card
claim given back (the approval gives it back too; a run that decided no order holds it from decide until here):
an approved order is open or filled by now, and its position or open order guards the next run.

Auto-pause guards the schedule, which runs unattended: a failed scheduled run counts toward it (a crashed one is
counted by the adapter), a failed manual `rule run` does not (whoever ran it sees the failure, as with a crash),
and any run that decided resets the count."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.order.deps import accounts
from graphs.rule.deps import RuleDeps
from graphs.rule.nodes.decide import rule_account
from graphs.rule.state import RuleRunState
from tools.broker.proposal_claims import release_proposals
from tools.rules.store import order_tag


def report_node(state: RuleRunState, runtime: Runtime[RuleDeps], config: RunnableConfig) -> dict[str, Any]:
    ctx, rule = runtime.context, state["rule"]
    decision = dict(state.get("decision") or {})
    outcome = state.get("order_outcome") or {}
    status = dict(rule.get("runtime_status") or {})
    status["last_action"] = decision.get("action")
    status["last_execution"] = state["execution_id"]
    held, waiting = accounts(ctx).tagged_position(rule_account(rule), rule["symbol"], order_tag(rule["id"]))
    status["position"], status["open_orders"] = held, waiting  # what the rule's orders filled, so far
    release_proposals(ctx.engine, state["execution_id"])
    paused = False
    if ctx.rules is not None:
        ctx.rules.set_runtime_status(int(rule["id"]), status)
        if not decision.get("failure"):
            ctx.rules.record_success(int(rule["id"]))
        elif state.get("background_request"):  # a scheduled run (nobody watches it): count toward the auto-pause
            paused = ctx.rules.record_failure(int(rule["id"]), str(decision.get("reason")))
    return {"result": {"kind": "rule_run", "rule": {k: rule[k] for k in ("id", "symbol", "requirements", "source")},
                       "execution_id": state["execution_id"], "decision": decision,
                       "steps": state.get("history") or [], "order": outcome, "position": status.get("position", 0),
                       "paused": paused, "owner": rule["owner"], "stale": decision.get("stale"),
                       "as_of": state.get("as_of")}}
