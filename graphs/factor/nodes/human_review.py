"""human_review: the review gate. Pauses with a `code_review` interrupt and records the decision: approve,
an edit (dry-run and checked again before it is accepted) or reject. The reviewer comes from the run's
config (`configurable.user`), never from inside the decision.

Nothing here has a side effect before `interrupt()`: the node re-runs from its start on resume."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graphs.context import WorkflowContext, decider
from graphs.factor.state import MAX_RETRIES, FactorState, failure_of
from graphs.factor.template import TemplateError, body_of, render
from graphs.interrupts import code_review_request, decision_of, edited_code
from graphs.progress import report_progress


def _note(state: FactorState, failure: str | None) -> str | None:
    """What the reviewer should know first: a rejected edit, a decision that was not possible, the retries."""
    review = state.get("review") or {}
    notes = [review["note"]] if review.get("status") == "pending" and review.get("note") else []
    if state.get("editing") and failure:
        notes.append(f"Your edit was not accepted: {failure}")
    if failure and state.get("retry_count", 0) >= MAX_RETRIES:
        notes.append(f"Code generation failed {MAX_RETRIES + 1} times; the last failure is shown.")
    return "\n".join(notes) or None


def human_review_node(state: FactorState, config: RunnableConfig,
                      runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    spec, body = state["spec"], state.get("factor_body") or ""
    failure = failure_of(state)
    report_progress("review")
    summary = (state.get("dry_run") or {}).get("summary") or ""
    semantic = state.get("semantic_check") or {}
    if semantic.get("ok"):
        summary += f"\nSemantic check ({semantic.get('by')}): {semantic.get('reason')}"
    note = _note(state, failure)
    if note:
        summary = f"{note}\n{summary}"
    allowed = ["edit", "reject"] if failure else ["approve", "edit", "reject"]
    payload = code_review_request(spec["name"], body, state.get("factor_code") or "", summary.strip(), failure,
                                  allowed, runtime.context.sandbox.level)
    decision = decision_of(interrupt(payload))
    kind, reviewer = decision.get("type"), decider(config)
    if kind not in allowed:
        return {"editing": False, "review": {
            "status": "pending", "note": f"`{kind}` is not possible here; choose one of {', '.join(allowed)}."}}
    if kind == "approve":
        return {"review": {"status": "approved", "reviewer": reviewer}}
    if kind == "reject":
        return {"review": {"status": "rejected", "reviewer": reviewer,
                           "reason": str(decision.get("message") or "").strip()}}
    try:
        edited = body_of(edited_code(decision))
    except (TemplateError, ValueError) as exc:
        return {"editing": False, "review": {"status": "pending", "note": f"Edit not used: {exc}"}}
    return {"factor_body": edited, "factor_code": render(spec["name"], spec["description"], spec["fields"], edited),
            "editing": True, "review": {"status": "edited", "reviewer": reviewer}}
