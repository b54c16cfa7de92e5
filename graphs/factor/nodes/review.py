"""retry_router and human_review: failures go back to code generation (at most MAX_RETRIES times, with the
cleaned error), then to the review gate with the failure shown. The review pauses with a `code_review`
interrupt; approve continues, an edit is re-dry-run and re-checked before it is accepted, reject ends the run.

Nothing here has a side effect before `interrupt()`: the review node re-runs from its start on resume."""

from __future__ import annotations

from langgraph.types import Command, interrupt

from graphs.factor.state import MAX_RETRIES, FactorState, failure_of
from graphs.factor.template import TemplateError, body_of, render
from graphs.interrupts import code_review_request, decision_of, edited_code


def retry_router_node(state: FactorState) -> Command:
    if (state.get("dry_run") or {}).get("fatal"):
        return Command(goto="finish", update={"final_reply": f"I cannot run this factor: {state['dry_run']['error']}"})
    failure = failure_of(state)
    if state.get("editing"):
        if failure is None:  # a human edit that passes the checks is accepted as the decision
            return Command(goto="backfill", update={"editing": False})
        return Command(goto="human_review", update={"editing": False, "review": {
            **(state.get("review") or {}), "status": "pending", "note": f"Your edit was not accepted: {failure}"}})
    if failure is None:
        return Command(goto="human_review")
    retries = state.get("retry_count", 0)
    if state.get("mode") == "llm" and retries < MAX_RETRIES:
        return Command(goto="codegen", update={"retry_count": retries + 1})
    return Command(goto="human_review")


def human_review_node(state: FactorState) -> Command:
    spec, body = state["spec"], state.get("factor_body") or ""
    failure = failure_of(state)
    review = state.get("review") or {}
    note = review.get("note")
    if failure and state.get("retry_count", 0) >= MAX_RETRIES:
        gave_up = f"Code generation failed {MAX_RETRIES + 1} times; the last failure is shown."
        note = f"{note}\n{gave_up}" if note else gave_up
    summary = (state.get("dry_run") or {}).get("summary") or ""
    semantic = state.get("semantic_check") or {}
    if semantic.get("ok"):
        summary += f"\nSemantic check ({semantic.get('by')}): {semantic.get('reason')}"
    if note:
        summary = f"{note}\n{summary}"
    allowed = ["edit", "reject"] if failure else ["approve", "edit", "reject"]
    payload = code_review_request(spec["name"], body, state.get("factor_code") or "", summary.strip(), failure,
                                  allowed)
    decision = decision_of(interrupt(payload))
    kind, reviewer = decision.get("type"), decision.get("user")
    if kind not in allowed:
        return Command(goto="human_review", update={"review": {
            "status": "pending", "note": f"`{kind}` is not possible here; choose one of {', '.join(allowed)}."}})
    if kind == "approve":
        return Command(goto="backfill", update={"review": {"status": "approved", "reviewer": reviewer}})
    if kind == "reject":
        return Command(goto="record_reject", update={"review": {
            "status": "rejected", "reviewer": reviewer, "reason": str(decision.get("message") or "").strip()}})
    try:
        edited = body_of(edited_code(decision))
    except (TemplateError, ValueError) as exc:
        return Command(goto="human_review", update={"review": {"status": "pending", "note": f"Edit not used: {exc}"}})
    return Command(goto="dry_run", update={
        "factor_body": edited, "factor_code": render(spec["name"], spec["description"], spec["fields"], edited),
        "editing": True, "review": {"status": "edited", "reviewer": reviewer}})
