"""Typed interrupt payloads, shaped after LangChain's HITLRequest, and reading the human's decision back."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from graphs.order.four_eyes import second_refusal
from tools.i18n import _

CLARIFY = "clarify"
CODE_REVIEW = "code_review"
APPROVAL = "approval"
TRADERS = "traders"  # an approval's `deciders`: only traders may approve or edit it (orders)


def clarify_request(question: str, choices: list[str] | None = None) -> dict[str, Any]:
    """One question with optional choices; answered with a `respond` decision carrying text."""
    args = {"question": question, "choices": list(choices or [])}
    return {
        "type": CLARIFY,
        **args,
        "action_requests": [{"name": CLARIFY, "args": args, "description": question}],
        "review_configs": [{"action_name": CLARIFY, "allowed_decisions": ["respond"]}],
    }


def code_review_request(name: str, code: str, program: str, summary: str, failure: str | None,
                        allowed: list[str], isolation: Any, diff: str | None = None) -> dict[str, Any]:
    """Code for a human to approve, edit or reject; `code` is the editable part (the template's body);
    `isolation` is the sandbox level the code ran under (shown to the reviewer); `diff` is an edit's change
    against the code first reviewed (unified-diff lines), when the code under review is an edit."""
    isolation = str(getattr(isolation, "value", isolation))
    verdict = _("checks FAILED: {failure}").format(failure=failure) if failure else _("checks passed")
    description = _("Factor {name}: {verdict} (sandbox isolation: {isolation})\n{summary}").format(
        name=name, verdict=verdict, isolation=isolation, summary=summary)
    if diff:
        description += "\n" + _("Changes:") + "\n" + diff
    return {
        "type": CODE_REVIEW,
        "name": name,
        "code": code,
        "program": program,
        "summary": summary,
        "failure": failure,
        "diff": diff,
        "isolation": isolation,
        "allowed": list(allowed),
        "on_reject": _("Nothing is backfilled or saved; the rejection is recorded."),
        "action_requests": [{"name": CODE_REVIEW, "args": {"name": name, "code": code}, "description": description}],
        "review_configs": [{"action_name": CODE_REVIEW, "allowed_decisions": list(allowed)}],
    }


def approval_request(action: str, title: str, args: dict[str, Any], description: str, on_reject: str,
                     allowed: tuple[str, ...] = ("approve", "reject"),
                     args_schema: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """An action for a human to approve or reject before it is taken; `args` are its details (JSON-safe),
    `on_reject` says what a rejection means. With `edit` allowed, `args_schema` names the editable arguments:
    {name: {"type": "integer" | "number" | "string", "title": ..., "minimum": ..., "maximum": ...,
    "multiple_of": ..., "decimals": ..., "enum": [...]}}; an edit is validated against it (`validate_args`) by the
    adapter and again by the node."""
    if "edit" in allowed and not args_schema:
        raise ValueError("an approval that allows edit needs the schema of its editable arguments")
    return {
        "type": APPROVAL,
        "action": action,
        "title": title,
        "args": dict(args),
        "description": description,
        "on_reject": on_reject,
        "allowed": list(allowed),
        "args_schema": dict(args_schema or {}),
        "action_requests": [{"name": action, "args": dict(args), "description": description}],
        "review_configs": [{"action_name": action, "allowed_decisions": list(allowed)}],
    }


def approval_refusal(payload: dict[str, Any], user: str | None, decision_type: str, traders: frozenset[str],
                     now: datetime) -> str | None:
    """Why `user` may not take `decision_type` on this approval now, or None: approvals marked for traders
    are approved or edited by traders only, none after their `expires_at`, and the second approval of a four-eyes
    order (`approved_by` lists the first) never by the first approver nor the proposer (`proposed_by`). Adapters
    refuse early with this; the graph checks again after the decision."""
    if decision_type not in ("approve", "edit") or payload.get("type") != APPROVAL:
        return None
    if payload.get("deciders") == TRADERS and user not in traders:
        return (_("Only traders can approve or edit orders (`roles` lists them); you can reject it.") if traders else
                _("Nobody is a trader (an admin grants it: `roles grant trader USER`), so nobody can approve or edit "
                  "this order."))
    approved = [str(who) for who in payload.get("approved_by") or ()]
    if decision_type == "approve" and approved and user is not None:
        refused = second_refusal(approved, payload.get("proposed_by"), user)
        if refused:
            return refused
    expires = payload.get("expires_at")
    if expires and now > datetime.fromisoformat(expires):
        return _("This proposal expired at {at:%Y-%m-%d %H:%M %Z}: it cannot be approved any more. Reject it, or "
                 "propose it again for a fresh check.").format(at=datetime.fromisoformat(expires))
    return None


def edited_code(decision: dict[str, Any]) -> str:
    """The code of an `edit` decision (`edited_action.args.code`)."""
    action = decision.get("edited_action") or {}
    code = (action.get("args") or {}).get("code")
    if not isinstance(code, str) or not code.strip():
        raise ValueError(_("the edit carries no code"))
    return code


def decision_of(value: Any) -> dict[str, Any]:
    """Normalise a resume value to one HITL decision: a bare string is a `respond`; a HITLResponse
    ({"decisions": [...]}) gives its first decision."""
    if isinstance(value, str):
        return {"type": "respond", "message": value}
    if isinstance(value, dict) and isinstance(value.get("decisions"), list) and value["decisions"]:
        return dict(value["decisions"][0])
    if isinstance(value, dict) and value.get("type") in ("approve", "edit", "reject", "respond"):
        return dict(value)
    raise ValueError(f"cannot read a decision from {type(value).__name__}")


def answer_text(value: Any) -> str:
    """The free text of a clarify answer."""
    decision = decision_of(value)
    return str(decision.get("message") or "").strip()


def validate_args(schema: dict[str, dict[str, Any]], original: dict[str, Any],
                  edits: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """An approval's arguments after `edits`, checked against its `args_schema`: (typed args, problems). Only
    the schema's arguments may change."""
    problems = [_("{name} cannot be edited").format(name=name) for name in edits if name not in schema]
    raw = {**original, **{k: v for k, v in edits.items() if k in schema}}
    args = dict(raw)
    for name, rule in schema.items():
        label = rule.get("title") or name
        value = raw.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            problems.append(_("{label} is required").format(label=label))
            continue
        kind = rule.get("type", "string")
        try:
            typed: Any = int(str(value)) if kind == "integer" else float(str(value)) if kind == "number" \
                else str(value).strip()
        except ValueError:
            problems.append((_("{label} must be a whole number, not {value!r}") if kind == "integer" else
                             _("{label} must be a number, not {value!r}")).format(label=label, value=value))
            continue
        if "enum" in rule and typed not in rule["enum"]:
            problems.append(_("{label} must be one of {values}").format(label=label,
                                                                        values=", ".join(map(str, rule["enum"]))))
        if "minimum" in rule and typed < rule["minimum"]:
            problems.append(_("{label} must be at least {minimum}").format(label=label, minimum=rule["minimum"]))
        if "maximum" in rule and typed > rule["maximum"]:
            problems.append(_("{label} must be at most {maximum}").format(label=label, maximum=rule["maximum"]))
        if rule.get("multiple_of") and typed % rule["multiple_of"]:
            problems.append(_("{label} must be a multiple of {step}").format(label=label, step=rule["multiple_of"]))
        if "decimals" in rule and round(typed, rule["decimals"]) != typed:
            problems.append(_("{label} must have at most {n} decimals").format(label=label, n=rule["decimals"]))
        args[name] = typed
    return args, problems
