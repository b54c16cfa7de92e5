"""Writing a run's steps to the execution log (idempotent on (execution_id, step), so a node that re-runs on
resume writes nothing twice) and showing each step live."""

from __future__ import annotations

from typing import Any

from graphs.rule.deps import RuleDeps
from graphs.rule.state import RuleRunState


def log_step(ctx: RuleDeps, state: RuleRunState, action: dict[str, Any], result: Any) -> None:
    rule = state["rule"]
    if ctx.rules is not None:
        ctx.rules.log_step(rule["id"], rule["symbol"], state["execution_id"], int(action["step"]), action["type"],
                           {k: v for k, v in action.items() if k != "result"}, result)
