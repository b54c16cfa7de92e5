"""Routing of the factor subgraph: every conditional edge and every limit (retries, the review loop) lives
here; nodes only record what happened."""

from __future__ import annotations

from graphs.factor.state import MAX_RETRIES, FactorState, duplicates_of_others, failure_of


def route_after_spec(state: FactorState) -> str:
    if state.get("clarification_needed"):
        return "clarify"
    if state.get("final_reply") or not state.get("spec"):
        return "finish"
    return "codegen"


def route_after_checks(state: FactorState) -> str:
    """After the dry run and the semantic check: retry code generation (at most MAX_RETRIES times) or go to the
    review gate (with the failure shown when there is one); a human edit always goes back to review, passing or
    not, and only an `approve` there saves it."""
    if (state.get("dry_run") or {}).get("fatal"):
        return "finish"
    failure = failure_of(state)
    if state.get("editing"):
        return "human_review"
    if failure is not None and state.get("mode") == "llm" and state.get("retry_count", 0) < MAX_RETRIES:
        return "codegen"
    return "human_review"


def route_after_review(state: FactorState) -> str:
    status: str = (state.get("review") or {}).get("status") or ""
    return {"approved": "backfill", "rejected": "record_reject", "edited": "dry_run"}.get(status, "human_review")


def route_after_backfill(state: FactorState) -> str:
    return "finish" if state.get("final_reply") else "evaluate"


def route_after_evaluate(state: FactorState) -> str:
    if state.get("final_reply"):
        return "finish"
    evaluation = state.get("evaluation") or {}
    doubtful = (evaluation.get("shortfall") or evaluation.get("too_few_codes")
                or duplicates_of_others(state["spec"]["name"], evaluation.get("duplicates", [])))
    return "confirm_save" if doubtful else "write_db"


def route_after_confirm(state: FactorState) -> str:
    if state.get("save_approval"):
        return "write_db"
    return "finish" if state.get("final_reply") else "confirm_save"
