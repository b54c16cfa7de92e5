"""human_review: the review gate. Pauses with a `code_review` interrupt and records the decision: approve,
an edit or reject. An edit is dry-run and checked, then comes back here: shown with its diff against the code first
reviewed and the name it would be saved under; only an `approve` then saves it. The reviewer comes from the run's
config (`configurable.user`), never from inside the decision. An edit that changes the code changes what the
factor means, so it is tested and saved under a new name (`<name>_edit_<hash>`, or the valid name the edit
carries in `edited_action.args.name`) with a description that says first who changed what; the description of
the code before the edit follows, marked as such (it may state what the code no longer does).

Nothing here has a side effect before `interrupt()`: the node re-runs from its start on resume."""

from __future__ import annotations

import difflib
import hashlib
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import interrupt

from graphs.context import decider
from graphs.factor.breadth import too_few_codes
from graphs.factor.deps import FactorDeps
from graphs.factor.nodes.semantic_check import checker_word
from graphs.factor.run import universe
from graphs.factor.spec import check_name
from graphs.factor.state import MAX_RETRIES, FactorState, failure_of
from graphs.factor.template import TemplateError, body_of, render
from graphs.interrupts import code_review_request, decision_of, edited_code
from graphs.progress import report_progress
from tools.i18n import _


def _note(state: FactorState, failure: str | None) -> str | None:
    """What the reviewer should know first: a rejected edit, a decision that was not possible, the retries."""
    review = state.get("review") or {}
    notes = [review["note"]] if review.get("status") == "pending" and review.get("note") else []
    if state.get("editing") and failure:
        notes.append(_("Your edit was not accepted."))  # the failure itself is shown with the checks
    elif state.get("editing"):
        notes.append(_("Your edit passed its checks; approve saves it as {name}: {description}").format(
            name=state["spec"]["name"], description=state["spec"]["description"]))
    if failure and state.get("retry_count", 0) >= MAX_RETRIES:
        notes.append(_("Code generation failed {n} times; the last failure is shown.").format(n=MAX_RETRIES + 1))
    return "\n".join(notes) or None


def human_review_node(state: FactorState, config: RunnableConfig,
                      runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    spec, body = state["spec"], state.get("factor_body") or ""
    failure = failure_of(state)
    report_progress(_("review"))
    summary = (state.get("dry_run") or {}).get("figures") or ""
    semantic = state.get("semantic_check") or {}
    if semantic.get("ok"):
        summary += "\n" + _("Semantic check ({by}): {reason}").format(by=checker_word(str(semantic.get("by"))),
                                                                      reason=semantic.get("reason"))
    elif semantic and semantic.get("ok") is None:
        summary += "\n" + _("Semantic check: {reason}; check yourself that the code does what was asked.").format(
            reason=semantic.get("reason"))
    thin = too_few_codes(len(universe(runtime.context.provider, spec)))
    note = "\n".join(filter(None, [thin and _("Warning: {problem}.").format(problem=thin), _note(state, failure)]))
    if note:
        summary = f"{note}\n{summary}"
    allowed = ["edit", "reject"] if failure else ["approve", "edit", "reject"]
    first = (spec.get("edited_from") or {}).get("body")
    payload = code_review_request(spec["name"], body, state.get("factor_code") or "", summary.strip(), failure,
                                  allowed, runtime.context.sandbox.level,
                                  diff=code_diff(first, body) if state.get("editing") and first else None)
    decision = decision_of(interrupt(payload))
    kind, reviewer = decision.get("type"), decider(config)
    if kind not in allowed:
        return {"review": {
            "status": "pending", "note": _("`{kind}` is not possible here; choose one of {allowed}.").format(
                kind=kind, allowed=", ".join(allowed))}}
    if kind == "approve":  # `edited`: what is approved is a human edit (saved with the decision `edit`)
        return {"review": {"status": "approved", "reviewer": reviewer, "edited": bool(state.get("editing"))}}
    if kind == "reject":
        return {"review": {"status": "rejected", "reviewer": reviewer,
                           "reason": str(decision.get("message") or "").strip()}}
    try:
        edited = body_of(edited_code(decision))
        spec = edited_spec(spec, body, edited, reviewer, _asked_name(decision, spec["name"]))
    except (TemplateError, ValueError) as exc:
        return {"review": {"status": "pending", "note": _("Edit not used: {why}").format(why=exc)}}
    return {"spec": spec, "factor_body": edited,
            "factor_code": render(spec["name"], spec["description"], spec["fields"], edited),
            "editing": True, "review": {"status": "edited", "reviewer": reviewer}}


def _asked_name(decision: dict[str, Any], shown: str) -> str | None:
    """A name the reviewer typed into the edit (adapters that send back every argument repeat the shown one)."""
    name = ((decision.get("edited_action") or {}).get("args") or {}).get("name")
    if not isinstance(name, str) or not name.strip() or name.strip() == shown:
        return None
    return check_name(name.strip())


def _lines(body: str) -> list[str]:
    return [line.rstrip() for line in body.strip("\n").splitlines() if line.strip()]


def edited_spec(spec: dict[str, Any], under_review: str, edited: str, reviewer: str | None,
                name: str | None = None) -> dict[str, Any]:
    """The spec an edit is tested and saved under. Code unchanged from the body under review keeps the spec;
    other code gets `name` (or `<first name>_edit_<6 hex of its hash>`) and a description that says who changed
    which lines first, then the first description as the one of the code before the edit (its numbers may be
    stale); code back to the first reviewed body gets the first name and description back."""
    if name is None and _lines(edited) == _lines(under_review):
        return spec
    origin = spec.get("edited_from") or {"name": spec["name"], "description": spec["description"],
                                         "body": under_review}
    base = {k: v for k, v in spec.items() if k != "edited_from"}
    if _lines(edited) == _lines(origin["body"]):
        return {**base, "name": name or origin["name"], "description": origin["description"]}
    digest = hashlib.sha256("\n".join(_lines(edited)).encode()).hexdigest()[:6]
    description = _("Edited by {reviewer} from {name}: {change}. Before the edit: {description}").format(
        reviewer=reviewer or _("an unnamed reviewer"), name=origin["name"],
        change=change_summary(origin["body"], edited), description=origin["description"])
    return {**base, "name": name or f"{origin['name'][:52]}_edit_{digest}", "description": description,
            "edited_from": origin}


def change_summary(before: str, after: str, limit: int = 160) -> str:
    """The changed lines, shortest first-hand form: "was `…`, now `…`" (cut at `limit` characters)."""
    old, new = _lines(before), _lines(after)
    diff = list(difflib.ndiff(old, new))
    removed = [line[2:].strip() for line in diff if line.startswith("- ")]
    added = [line[2:].strip() for line in diff if line.startswith("+ ")]
    parts = ([_("was `{code}`").format(code=" / ".join(removed))] if removed else []) + \
        ([_("now `{code}`").format(code=" / ".join(added))] if added else [])
    text = _(", ").join(parts)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def code_diff(before: str, after: str, limit: int = 40) -> str:
    """The edit as unified-diff lines (one line of context, no file headers nor hunk ranges; `…` between hunks),
    at most `limit` lines."""
    lines: list[str] = []
    for line in difflib.unified_diff(before.strip("\n").splitlines(), after.strip("\n").splitlines(),
                                     lineterm="", n=1):
        if line.startswith(("---", "+++")):
            continue
        if line.startswith("@@"):
            lines.extend(["…"] if lines else [])
            continue
        lines.append(line.rstrip())
    return "\n".join(lines if len(lines) <= limit else [*lines[:limit - 1], "…"])
