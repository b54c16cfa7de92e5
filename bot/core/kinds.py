"""Interrupt kinds as types: each of clarify, code_review and approval owns its title, whether a thread reply
decides it, its plain-text form (the console, and the details file beside a card Slack refused) and how a typed
line becomes its HITL decision. Payload builders and decision parsing on the graph side are in graphs/interrupts.py;
Block Kit is the Slack surface's (bot/slack/render.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from graphs.interrupts import APPROVAL, CLARIFY, CODE_REVIEW, validate_args
from tools.i18n import N_, _, pgettext

EDIT_NAMES = {"limit": "limit_price", "price": "limit_price", "qty": "quantity"}  # as the order grammar names them
EDIT_BODY = "edit-body"  # console: the body follows on the next lines, ended by a line `.`


@dataclass(frozen=True)
class ConsoleStep:
    """What a console line did to a pending interrupt: a decision to resume with, or a message (and nothing
    resumes), or the start of a multi-line body (`EDIT_BODY`)."""

    decision: dict[str, Any] | None = None
    message: str | None = None
    name: str | None = None  # the name an `edit` being typed asks for (`edit name=NAME`)


class Clarify:
    name = CLARIFY
    prompt = "answer> "
    thread_reply_decides = True

    @staticmethod
    def title(payload: dict[str, Any]) -> str:
        return str(payload.get("question") or _("Question"))

    @staticmethod
    def console_text(payload: dict[str, Any]) -> str:
        text = f"? {payload.get('question', '')}"
        if payload.get("choices"):
            text += "\n  " + _("choices: {choices}").format(choices=" | ".join(payload["choices"]))
        return text

    @staticmethod
    def console_step(line: str, payload: dict[str, Any]) -> ConsoleStep:
        return ConsoleStep({"type": "respond", "message": line.strip()})


def said(word: str) -> str:
    """A decision word (approve, edit, reject) as the reader would type it; the console takes either language's."""
    words = {"approve": pgettext("command", "approve"), "edit": pgettext("command", "edit"),
             "reject": pgettext("command", "reject")}
    return words.get(word, word)


def _allowed(payload: dict[str, Any]) -> str:
    return " | ".join(said(word) for word in payload.get("allowed", []))


def _reject(rest: str, what: str) -> ConsoleStep:
    if not rest:
        return ConsoleStep(message=_("reject needs a reason: reject REASON ({what})").format(what=what))
    return ConsoleStep({"type": "reject", "message": rest})


class CodeReview:
    name = CODE_REVIEW
    prompt = "review> "
    thread_reply_decides = False
    reply_hint = N_("This code is waiting for review: use Approve, Edit or Reject on the review message above "
                    "(a thread reply does not decide it).")

    @staticmethod
    def title(payload: dict[str, Any]) -> str:
        return _("Code review: {name}").format(name=payload.get("name", "code"))

    @staticmethod
    def console_text(payload: dict[str, Any]) -> str:
        verdict = (_("checks FAILED: {failure}").format(failure=payload["failure"]) if payload.get("failure") else
                   _("checks passed"))
        return "\n".join([
            _("--- code review: factor {name} ({verdict}; sandbox isolation: {isolation}) ---").format(
                name=payload.get("name"), verdict=verdict, isolation=payload.get("isolation", "unknown")),
            str(payload.get("summary", "")),
            *([_("--- changes against the code first reviewed ---"), str(payload["diff"])] if payload.get("diff")
              else []),
            _("--- body of compute_factor ---"), str(payload.get("code", "")).rstrip(),
            _("--- review> {allowed} (edit [FILE] [name=NAME]; reject REASON) ---").format(
                allowed=_allowed(payload))])

    @staticmethod
    def console_step(line: str, payload: dict[str, Any]) -> ConsoleStep:
        word, _sep, rest = line.strip().partition(" ")
        word, rest = word.lower(), rest.strip()
        if word == "approve":
            return ConsoleStep({"type": "approve"})
        if word == "reject":
            return _reject(rest, _("the rejection is recorded"))
        if word == "edit":
            path, name = _edit_words(rest)
            if not path:
                return ConsoleStep(message=EDIT_BODY, name=name)
            try:
                body = Path(path).expanduser().read_text()
            except OSError as exc:
                problem = _("error: cannot read {path}: {error}").format(path=path, error=exc.strerror)
                return ConsoleStep(message=problem)
            return ConsoleStep(code_edit(body, name))
        return ConsoleStep(message=_("the code is waiting for review: approve, edit [FILE] [name=NAME], or reject "
                                     "REASON"))


def _edit_words(rest: str) -> tuple[str, str | None]:
    """An `edit` line's file and the name it asks for: `edit [FILE] [name=NAME]`."""
    words = rest.split()
    names = [word.partition("=")[2] for word in words if word.startswith("name=")]
    path = " ".join(word for word in words if not word.startswith("name="))
    return path, (names[-1] or None) if names else None


def code_edit(body: str, name: str | None = None) -> dict[str, Any]:
    """A code review's `edit` decision; `name` is the name the reviewer gives the edited factor."""
    args = {"code": body, **({"name": name} if name else {})}
    return {"type": "edit", "edited_action": {"name": CODE_REVIEW, "args": args}}


class Approval:
    name = APPROVAL
    prompt = "approve> "
    thread_reply_decides = False
    reply_hint = N_("This is waiting for approval: use the buttons on the approval message above (a thread "
                    "reply does not decide it).")

    @staticmethod
    def title(payload: dict[str, Any]) -> str:
        title = payload.get("title") or payload.get("action")
        return (_("Refused by the checks: {title}") if payload.get("failed") else _("Approval: {title}")).format(
            title=title)

    @staticmethod
    def console_text(payload: dict[str, Any]) -> str:
        forms = [said("approve"), _("reject REASON")]
        if "edit" in payload.get("allowed", []):
            forms.insert(1, said("edit") + " " + " ".join(f"{_label(k)}=…" for k in payload.get("args_schema") or {}))
        details = "\n".join(f"  {_label(k)}: {v}" for k, v in (payload.get("args") or {}).items())
        head = _("--- refused by the checks: {title} ---") if payload.get("failed") else _("--- approval: {title} ---")
        return (head.format(title=payload.get("title")) + "\n"
                + f"{payload.get('description', '')}\n{details}\n"
                + _("--- {forms} (reject: {consequence}) ---").format(
                    forms=" | ".join(forms), consequence=payload.get("on_reject") or _("the action is not taken")))

    @staticmethod
    def console_step(line: str, payload: dict[str, Any]) -> ConsoleStep:
        word, _sep, rest = line.strip().partition(" ")
        word, rest = word.lower(), rest.strip()
        if word == "approve":
            return ConsoleStep({"type": "approve"})
        if word == "reject":
            return _reject(rest, str(payload.get("on_reject") or _("the action is not taken")))
        if word == "edit" and "edit" in payload.get("allowed", []):
            raw = {EDIT_NAMES.get(name, name): value
                   for name, _eq, value in (part.partition("=") for part in rest.split() if "=" in part)}
            args, errors = validate_args(payload.get("args_schema") or {}, payload.get("args") or {}, raw)
            if errors:
                return ConsoleStep(message=_("error: {error}").format(error="; ".join(errors)))
            return ConsoleStep({"type": "edit", "edited_action": {"name": payload.get("action"), "args": args}})
        return ConsoleStep(message=_("this waits for approval: {allowed} (reject needs a REASON)").format(
            allowed=_allowed(payload)))


def _label(key: str) -> str:
    """An approval field's key as the console shows it: as it is in English, its translated label otherwise."""
    label = key.replace("_", " ").capitalize()
    return _(label) if _(label) != label else key


KINDS: dict[str, Any] = {k.name: k for k in (Clarify, CodeReview, Approval)}


def kind_of(payload: dict[str, Any]) -> Any:
    """The kind class of an interrupt payload (clarify when unmarked)."""
    return KINDS.get(payload.get("type") or CLARIFY, Clarify)
