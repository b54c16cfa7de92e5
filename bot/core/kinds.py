"""Interrupt kinds as types: each of clarify, code_review and approval owns its title, whether a thread reply
decides it, its plain-text form (the console, and the details file beside a card Slack refused) and how a typed
line becomes its decision. The cards and decisions themselves are bot/cards.py; payload builders on the graph
side are in graphs/interrupts.py; Block Kit is the Slack surface's (bot/slack/render.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.cards import (
    Answer,
    ApprovalCard,
    Approve,
    Card,
    ClarifyCard,
    CodeReviewCard,
    Decision,
    Edit,
    Reject,
    code_edit,
)
from graphs.interrupts import APPROVAL, CLARIFY, CODE_REVIEW, validate_args
from tools.i18n import N_, _, pgettext

EDIT_NAMES = {"limit": "limit_price", "price": "limit_price", "qty": "quantity"}  # as the order grammar names them
EDIT_BODY = "edit-body"  # console: the body follows on the next lines, ended by a line `.`


@dataclass(frozen=True)
class ConsoleStep:
    """What a console line did to a pending interrupt: a decision to resume with, or a message (and nothing
    resumes), or the start of a multi-line body (`EDIT_BODY`)."""

    decision: Decision | None = None
    message: str | None = None
    name: str | None = None  # the name an `edit` being typed asks for (`edit name=NAME`)


class Clarify:
    name = CLARIFY
    prompt = "answer> "
    thread_reply_decides = True

    @staticmethod
    def title(card: ClarifyCard) -> str:
        return card.question or _("Question")

    @staticmethod
    def console_text(card: ClarifyCard) -> str:
        text = f"? {card.question}"
        if card.choices:
            text += "\n  " + _("choices: {choices}").format(choices=" | ".join(card.choices))
        return text

    @staticmethod
    def console_step(line: str, card: ClarifyCard) -> ConsoleStep:
        return ConsoleStep(Answer(line.strip()))


def said(word: str) -> str:
    """A decision word (approve, edit, reject) as the reader would type it; the console takes either language's."""
    words = {"approve": pgettext("command", "approve"), "edit": pgettext("command", "edit"),
             "reject": pgettext("command", "reject")}
    return words.get(word, word)


def _allowed(card: CodeReviewCard | ApprovalCard) -> str:
    return " | ".join(said(word) for word in card.allowed)


def _reject(rest: str, what: str) -> ConsoleStep:
    if not rest:
        return ConsoleStep(message=_("reject needs a reason: reject REASON ({what})").format(what=what))
    return ConsoleStep(Reject(rest))


class CodeReview:
    name = CODE_REVIEW
    prompt = "review> "
    thread_reply_decides = False
    reply_hint = N_("This code is waiting for review: use Approve, Edit or Reject on the review message above "
                    "(a thread reply does not decide it).")

    @staticmethod
    def title(card: CodeReviewCard) -> str:
        return _("Code review: {name}").format(name=card.name)

    @staticmethod
    def console_text(card: CodeReviewCard) -> str:
        verdict = _("checks FAILED: {failure}").format(failure=card.failure) if card.failure else _("checks passed")
        return "\n".join([
            _("--- code review: factor {name} ({verdict}; sandbox isolation: {isolation}) ---").format(
                name=card.name, verdict=verdict, isolation=card.isolation),
            card.summary,
            *([_("--- changes against the code first reviewed ---"), card.diff] if card.diff else []),
            _("--- body of compute_factor ---"), card.code.rstrip(),
            _("--- review> {allowed} (edit [FILE] [name=NAME]; reject REASON) ---").format(allowed=_allowed(card))])

    @staticmethod
    def console_step(line: str, card: CodeReviewCard) -> ConsoleStep:
        word, _sep, rest = line.strip().partition(" ")
        word, rest = word.lower(), rest.strip()
        if word == "approve":
            return ConsoleStep(Approve())
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


class Approval:
    name = APPROVAL
    prompt = "approve> "
    thread_reply_decides = False
    reply_hint = N_("This is waiting for approval: use the buttons on the approval message above (a thread "
                    "reply does not decide it).")

    @staticmethod
    def title(card: ApprovalCard) -> str:
        title = card.title or card.action
        return (_("Refused by the checks: {title}") if card.failed else _("Approval: {title}")).format(title=title)

    @staticmethod
    def console_text(card: ApprovalCard) -> str:
        forms = [said("approve"), _("reject REASON")]
        if "edit" in card.allowed:
            forms.insert(1, said("edit") + " " + " ".join(f"{_label(k)}=…" for k in card.args_schema))
        details = "\n".join(f"  {_label(k)}: {v}" for k, v in card.args.items())
        head = _("--- refused by the checks: {title} ---") if card.failed else _("--- approval: {title} ---")
        return (head.format(title=card.title) + "\n" + f"{card.description}\n{details}\n"
                + _("--- {forms} (reject: {consequence}) ---").format(
                    forms=" | ".join(forms), consequence=card.on_reject or _("the action is not taken")))

    @staticmethod
    def console_step(line: str, card: ApprovalCard) -> ConsoleStep:
        word, _sep, rest = line.strip().partition(" ")
        word, rest = word.lower(), rest.strip()
        if word == "approve":
            return ConsoleStep(Approve())
        if word == "reject":
            return _reject(rest, card.on_reject or _("the action is not taken"))
        if word == "edit" and "edit" in card.allowed:
            raw = {EDIT_NAMES.get(name, name): value
                   for name, _eq, value in (part.partition("=") for part in rest.split() if "=" in part)}
            args, errors = validate_args(dict(card.args_schema), dict(card.args), raw)
            if errors:
                return ConsoleStep(message=_("error: {error}").format(error="; ".join(errors)))
            return ConsoleStep(Edit(card.action, args))
        return ConsoleStep(message=_("this waits for approval: {allowed} (reject needs a REASON)").format(
            allowed=_allowed(card)))


def _label(key: str) -> str:
    """An approval field's key as the console shows it: as it is in English, its translated label otherwise."""
    label = key.replace("_", " ").capitalize()
    return _(label) if _(label) != label else key


KINDS: dict[str, Any] = {k.name: k for k in (Clarify, CodeReview, Approval)}


def kind_of(card: Card) -> Any:
    """The kind class of a card (its methods take that card)."""
    return KINDS[card.kind]
