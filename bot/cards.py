"""Cards and decisions as types: what a pause asks (a clarify question, a code review, an approval card) and what a
person decided on it (approve, edit with the edited arguments, reject with a reason, an answer).

The graph side keeps LangChain's serialisable HITL dicts (graphs/interrupts.py builds them, the checkpoint and the
decisions table store them): `card_of` reads an interrupt value once, where it leaves the graph (bot/runner.py),
and `decision_of` a stored or resumed decision; `payload()` and `hitl()` write the same dicts back. Anything that
is not one of these shapes raises `Malformed`, and nothing is decided on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, ClassVar

from graphs.interrupts import APPROVAL, CLARIFY, CODE_REVIEW

DECISION_TYPES = ("approve", "edit", "reject", "respond")
JSON = Mapping[str, Any]  # an opaque JSON object: an approval's details, its argument schema


class Malformed(ValueError):
    """An interrupt value or a decision that is none of the shapes the core knows: refused, never guessed at."""


# --- reading the JSON ----------------------------------------------------------------------------------------------


def _text(raw: JSON, key: str, default: str | None = None) -> str:
    value = raw.get(key, default)
    if not isinstance(value, str):
        raise Malformed(f"{raw.get('type') or 'interrupt'}: {key!r} must be text, not {type(value).__name__}")
    return value


def _maybe_text(raw: JSON, key: str) -> str | None:
    return None if raw.get(key) is None else _text(raw, key)


def _texts(raw: JSON, key: str) -> tuple[str, ...]:
    value = raw.get(key) or []
    if not isinstance(value, list | tuple) or not all(isinstance(item, str) for item in value):
        raise Malformed(f"{raw.get('type') or 'interrupt'}: {key!r} must be a list of text")
    return tuple(value)


def _maybe_texts(raw: JSON, key: str) -> tuple[str, ...] | None:
    return None if raw.get(key) is None else _texts(raw, key)


def _mapping(raw: JSON, key: str) -> dict[str, Any]:
    value = raw.get(key) or {}
    if not isinstance(value, Mapping) or not all(isinstance(name, str) for name in value):
        raise Malformed(f"{raw.get('type') or 'interrupt'}: {key!r} must be an object")
    return dict(value)


def _allowed(raw: JSON) -> tuple[str, ...]:
    allowed = _texts(raw, "allowed")
    unknown = [word for word in allowed if word not in DECISION_TYPES]
    if unknown:
        raise Malformed(f"{raw.get('type')}: unknown decision(s) allowed: {', '.join(unknown)}")
    return allowed


def _description(raw: JSON) -> str:
    """The first action request's description (the HITL shape's), or ''."""
    requests = raw.get("action_requests") or [{}]
    first = requests[0] if isinstance(requests, list) and requests else {}
    return str(first.get("description") or "") if isinstance(first, Mapping) else ""


def _put(payload: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """`payload` with each optional field that is set (None stays absent, as the graph left it)."""
    payload.update({key: list(value) if isinstance(value, tuple) else value
                    for key, value in optional.items() if value is not None})
    return payload


def _hitl(payload: dict[str, Any], name: str, args: JSON, description: str, allowed: tuple[str, ...]) -> dict[str, Any]:
    payload["action_requests"] = [{"name": name, "args": dict(args), "description": description}]
    payload["review_configs"] = [{"action_name": name, "allowed_decisions": list(allowed)}]
    return payload


# --- cards ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class ClarifyCard:
    """A question, answered with text (or one of `choices`)."""

    kind: ClassVar[str] = CLARIFY
    question: str
    choices: tuple[str, ...] = ()
    users: tuple[str, ...] | None = None  # the people its text names (graphs/views.py refs)
    accounts: tuple[str, ...] | None = None
    allowed: ClassVar[tuple[str, ...]] = ("respond",)

    @classmethod
    def read(cls, raw: JSON) -> ClarifyCard:
        return cls(question=_text(raw, "question"), choices=_texts(raw, "choices"), users=_maybe_texts(raw, "users"),
                   accounts=_maybe_texts(raw, "accounts"))

    def payload(self) -> dict[str, Any]:
        args = {"question": self.question, "choices": list(self.choices)}
        payload = _hitl({"type": CLARIFY, **args}, CLARIFY, args, self.question, self.allowed)
        return _put(payload, users=self.users, accounts=self.accounts)


@dataclass(frozen=True, kw_only=True)
class CodeReviewCard:
    """A factor's code to approve, edit or reject: `code` is the editable body, `program` the whole module."""

    kind: ClassVar[str] = CODE_REVIEW
    name: str
    code: str
    program: str = ""
    summary: str = ""
    failure: str | None = None
    isolation: str = "unknown"
    allowed: tuple[str, ...] = ("approve", "edit", "reject")
    on_reject: str = ""
    description: str = ""
    diff: str | None = None  # an edit's changes against the code first reviewed (unified diff lines)
    users: tuple[str, ...] | None = None
    accounts: tuple[str, ...] | None = None

    @classmethod
    def read(cls, raw: JSON) -> CodeReviewCard:
        return cls(name=_text(raw, "name"), code=_text(raw, "code"), program=_text(raw, "program", ""),
                   summary=_text(raw, "summary", ""), failure=_maybe_text(raw, "failure"),
                   diff=_maybe_text(raw, "diff"), isolation=_text(raw, "isolation", "unknown"), allowed=_allowed(raw),
                   on_reject=_text(raw, "on_reject", ""), description=_description(raw),
                   users=_maybe_texts(raw, "users"), accounts=_maybe_texts(raw, "accounts"))

    def payload(self) -> dict[str, Any]:
        payload = {"type": CODE_REVIEW, "name": self.name, "code": self.code, "program": self.program,
                   "summary": self.summary, "failure": self.failure, "isolation": self.isolation,
                   "allowed": list(self.allowed), "on_reject": self.on_reject, "diff": self.diff}
        payload = _hitl(payload, CODE_REVIEW, {"name": self.name, "code": self.code}, self.description, self.allowed)
        return _put(payload, users=self.users, accounts=self.accounts)


@dataclass(frozen=True, kw_only=True)
class ApprovalCard:
    """An action to approve (or edit, or reject) before it is taken: an order card, a factor's save. `args` are its
    details as shown; `args_schema` names the editable ones (graphs/interrupts.approval_request)."""

    kind: ClassVar[str] = APPROVAL
    action: str
    title: str = ""
    args: JSON
    description: str = ""
    on_reject: str = ""
    allowed: tuple[str, ...] = ("approve", "reject")
    args_schema: JSON
    deciders: str | None = None  # TRADERS: only an account's traders approve or edit it
    who_decides: str | None = None
    expires_at: str | None = None  # ISO time, as the graph wrote it
    failed: tuple[str, ...] | None = None  # the checks that refused it (then approving is not offered)
    approved_by: tuple[str, ...] | None = None  # a four-eyes order's first approval
    proposed_by: str | None = None
    users: tuple[str, ...] | None = None
    accounts: tuple[str, ...] | None = None

    @classmethod
    def read(cls, raw: JSON) -> ApprovalCard:
        schema = _mapping(raw, "args_schema")
        if not all(isinstance(rule, Mapping) for rule in schema.values()):
            raise Malformed("approval: 'args_schema' must map each argument to its rule")
        return cls(action=_text(raw, "action"), title=_text(raw, "title", ""), args=_mapping(raw, "args"),
                   description=_text(raw, "description", ""), on_reject=_text(raw, "on_reject", ""),
                   allowed=_allowed(raw), args_schema=schema, deciders=_maybe_text(raw, "deciders"),
                   who_decides=_maybe_text(raw, "who_decides"), expires_at=_expiry(raw),
                   failed=_maybe_texts(raw, "failed"), approved_by=_maybe_texts(raw, "approved_by"),
                   proposed_by=_maybe_text(raw, "proposed_by"), users=_maybe_texts(raw, "users"),
                   accounts=_maybe_texts(raw, "accounts"))

    @property
    def expires(self) -> datetime | None:
        return datetime.fromisoformat(self.expires_at) if self.expires_at else None

    @property
    def account(self) -> str:
        """The paper account it trades in ('' when it names none)."""
        return str(self.args.get("account") or "")

    def payload(self) -> dict[str, Any]:
        payload = {"type": APPROVAL, "action": self.action, "title": self.title, "args": dict(self.args),
                   "description": self.description, "on_reject": self.on_reject, "allowed": list(self.allowed),
                   "args_schema": {name: dict(rule) for name, rule in self.args_schema.items()}}
        payload = _hitl(payload, self.action, self.args, self.description, self.allowed)
        return _put(payload, deciders=self.deciders, who_decides=self.who_decides, expires_at=self.expires_at,
                    failed=self.failed, approved_by=self.approved_by, proposed_by=self.proposed_by,
                    users=self.users, accounts=self.accounts)


def _expiry(raw: JSON) -> str | None:
    expires = _maybe_text(raw, "expires_at")
    if expires is not None:
        try:
            datetime.fromisoformat(expires)
        except ValueError:
            raise Malformed(f"approval: 'expires_at' is no time: {expires[:40]!r}") from None
    return expires


Card = ClarifyCard | CodeReviewCard | ApprovalCard
CARDS: dict[str, type[ClarifyCard] | type[CodeReviewCard] | type[ApprovalCard]] = {
    c.kind: c for c in (ClarifyCard, CodeReviewCard, ApprovalCard)}


def card_of(value: Any) -> Card:
    """The card of an interrupt value (the graph's payload dict). Raises Malformed for anything else: an unknown
    `type`, a missing or mistyped field."""
    if not isinstance(value, Mapping):
        raise Malformed(f"an interrupt value must be an object, not {type(value).__name__}")
    kind = value.get("type")
    if kind not in CARDS:
        raise Malformed(f"unknown interrupt type {kind!r} (known: {', '.join(CARDS)})")
    return CARDS[kind].read(value)


@dataclass(frozen=True)
class Pending:
    """One open pause of a thread: its interrupt id and its card."""

    id: str
    card: Card


# --- decisions -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Approve:
    type: ClassVar[str] = "approve"

    def hitl(self) -> dict[str, Any]:
        return {"type": self.type}


@dataclass(frozen=True)
class Edit:
    """Approve with changes: the action's edited arguments (a code review's `{"code": body}`)."""

    type: ClassVar[str] = "edit"
    action: str
    args: JSON

    def hitl(self) -> dict[str, Any]:
        return {"type": self.type, "edited_action": {"name": self.action, "args": dict(self.args)}}


@dataclass(frozen=True)
class Reject:
    type: ClassVar[str] = "reject"
    message: str

    def hitl(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True)
class Answer:
    """A clarify question's answer (LangChain's `respond`)."""

    type: ClassVar[str] = "respond"
    message: str

    def hitl(self) -> dict[str, Any]:
        return {"type": self.type, "message": self.message}


Decision = Approve | Edit | Reject | Answer


def code_edit(body: str, name: str | None = None) -> Edit:
    """A code review's edit: the new body of its code, and the name the reviewer gives the edited factor."""
    return Edit(CODE_REVIEW, {"code": body, **({"name": name} if name else {})})


def decision_of(value: Any) -> Decision:
    """A decision from its HITL dict (a decisions row, a resume value). Raises Malformed for anything else."""
    if not isinstance(value, Mapping):
        raise Malformed(f"a decision must be an object, not {type(value).__name__}")
    kind = value.get("type")
    if kind == "approve":
        return Approve()
    if kind == "edit":
        edited = value.get("edited_action")
        if not isinstance(edited, Mapping) or not isinstance(edited.get("name"), str) \
                or not isinstance(edited.get("args"), Mapping):
            raise Malformed("an edit must carry its edited action: {'name': ..., 'args': {...}}")
        return Edit(edited["name"], dict(edited["args"]))
    if kind in ("reject", "respond"):
        message = value.get("message", "")
        if not isinstance(message, str):
            raise Malformed(f"a {kind} decision's message must be text, not {type(message).__name__}")
        return Reject(message) if kind == "reject" else Answer(message)
    raise Malformed(f"unknown decision type {kind!r} (known: {', '.join(DECISION_TYPES)})")
