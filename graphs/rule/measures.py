"""`quantdesk eval rule`: how many of the model's answers were well-formed actions in the seed's format, and
whether it reached a decision of its own within the step limit (a forced hold is not one)."""

from __future__ import annotations

from graphs.measures import Measures, RunRecord, rate
from graphs.rule.routes import MAX_ROUNDS


def measure_rule_run(run: RunRecord) -> Measures:
    state = run.state
    if (state.get("rule") or {}).get("source") != "llm":
        return {"well_formed_actions": None, "decided_within_limit": None, "steps": None}
    malformed = int(state.get("malformed") or 0)
    decision = state.get("decision") or {}
    steps = len(state.get("history") or [])
    return {
        "well_formed_actions": None if run.model_calls == 0 else max(run.model_calls - malformed, 0) / run.model_calls,
        "decided_within_limit": rate(bool(decision) and not decision.get("failure") and steps <= MAX_ROUNDS),
        "steps": float(steps),
    }
