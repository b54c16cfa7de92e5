"""Block Kit for interrupts and results (within Slack's limits: see ARCHITECTURE.md), with a plain-text fallback for
each message."""

from __future__ import annotations

import json
from typing import Any

from bot.cards import ApprovalCard, Card, ClarifyCard, CodeReviewCard
from bot.core.intake import HelpSection, Reply
from bot.slack.names import Names, dressed
from graphs.views import View
from tools.i18n import N_, _

SECTION_TEXT_MAX = 3000
BUTTON_TEXT_MAX = 75
BUTTON_VALUE_MAX = 2000
MAX_BLOCKS = 50
CHOICE_BUTTONS_MAX = 20


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": _clip(text, SECTION_TEXT_MAX)}}


def button_value(thread_id: str, interrupt_id: str, decision: str) -> str:
    """A button's small JSON value: which thread, which pause, what was chosen."""
    value = json.dumps({"t": thread_id, "i": interrupt_id, "d": decision}, separators=(",", ":"))
    if len(value) > BUTTON_VALUE_MAX:
        raise ValueError("button value over Slack's 2,000-character limit")
    return value


def clarify_message(thread_id: str, interrupt_id: str, card: ClarifyCard) -> dict[str, Any]:
    """A clarify question; choices become buttons, any thread reply answers too."""
    question = card.question or _("Could you say more?")
    blocks: list[dict[str, Any]] = [_section(f":question: {question}")]
    choices = list(card.choices)[:CHOICE_BUTTONS_MAX]
    for start in range(0, len(choices), 5):  # an actions block holds at most 25 elements; 5 a row reads better
        blocks.append({
            "type": "actions",
            "block_id": f"clarify_{start}",
            "elements": [{"type": "button", "action_id": f"clarify_choice_{start + i}",
                          "text": {"type": "plain_text", "text": _clip(choice, BUTTON_TEXT_MAX)},
                          "value": button_value(thread_id, interrupt_id, choice)}
                         for i, choice in enumerate(choices[start:start + 5])],
        })
    blocks.append({"type": "context", "elements": [
        {"type": "mrkdwn", "text": _("Reply in this thread or press a button.") if choices else
         _("Reply in this thread.")}]})
    return {"text": question, "blocks": blocks[:MAX_BLOCKS]}


def answered_message(question: str, user_id: str, answer: str, names: Names | None = None) -> dict[str, Any]:
    """What a clarify message becomes once answered: no buttons, who said what."""
    text = f"{question}\n*{user_id}:* {answer}"
    return dressed({"text": _("{question} — answered by {user}").format(question=question, user=user_id),
                    "blocks": [_section(text)]}, [user_id], [], names)


def reply_message(text: str) -> dict[str, Any]:
    return {"text": _clip(text, 40_000), "blocks": [_section(text)]}


def help_text(sections: tuple[HelpSection, ...]) -> str:
    """The help as Slack text: a bold title per section, a bullet per command."""
    lines = ["*QuantDesk* — " + _("type these in a thread, after `/quant`, or mention me")]
    for section in sections:
        lines.append(f"*{section.title}*")
        lines += [f"• `{entry.usage}` — {entry.summary}" if entry.usage else f"     {entry.summary}"
                  for entry in section.entries]
    return "\n".join(lines)


def reply_of(reply: Reply, names: Names | None = None) -> dict[str, Any]:
    """What the core answered at once, as a message: a command's view, the help (text alone: it is long), or a
    line (a warning when something went wrong)."""
    if reply.view is not None:
        return view_message(reply.view, names)
    if reply.help:
        return {"text": _clip(help_text(reply.help), 40_000)}
    return reply_message(f":warning: {reply.text}" if reply.failed else reply.text)


CODE_INLINE_MAX = 2800  # a section's 3,000 characters minus the fence and the heading
MODAL_INPUT_MAX = 3000
DECISION_LABELS = {"approve": N_("Approve"), "edit": N_("Edit"), "reject": N_("Reject")}


def code_review_message(thread_id: str, interrupt_id: str, card: CodeReviewCard, requester: str | None,
                        ) -> dict[str, Any]:
    """Code for review: verdict, dry-run and check summary, the code (inline when it fits), the decisions."""
    name, code, failure = card.name, card.code, card.failure
    verdict = (_(":x: *Checks failed:* {failure}").format(failure=failure) if failure else
               _(":white_check_mark: *Checks passed*")) + _(" · sandbox isolation: {isolation}").format(
        isolation=card.isolation)
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(_("Code review: {name}").format(name=name),
                                                                        150)}},
        _section(verdict),
        {"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(card.summary or "-", SECTION_TEXT_MAX)}]},
    ]
    if card.diff:
        blocks.append(_section(_clip(_("*Changes against the code first reviewed*") + f"\n```{card.diff}```",
                                     SECTION_TEXT_MAX)))
    if len(code) <= CODE_INLINE_MAX:
        blocks.append(_section(_("*Body of `compute_factor`*") + f"\n```{code.rstrip()}```"))
    else:
        blocks.append(_section(_("*Body of `compute_factor`* is {n} characters, too long to show here: it is attached "
                                 "below as a file.").format(n=f"{len(code):,}")))
    blocks.append(_decision_buttons(thread_id, interrupt_id, list(card.allowed)))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _(
        "{who} can decide. Edit opens the code in a form; edited code is dry-run, checked and shown here again "
        "for review.").format(who=_who(requester))}]})
    text = (_("Code review for factor {name}: checks failed ({failure})").format(name=name, failure=failure)
            if failure else _("Code review for factor {name}: checks passed").format(name=name))
    return {"text": _clip(text, 3000), "blocks": blocks}


def approval_message(thread_id: str, interrupt_id: str, card: ApprovalCard, requester: str | None,
                     names: Names | None = None) -> dict[str, Any]:
    """An action waiting for approval: what it is, its details, Approve / Reject and what a rejection means."""
    title = card.title or card.action or _("action")
    failed = list(card.failed or ())
    details = [{"type": "mrkdwn", "text": _clip(f"*{_(key.replace('_', ' ').capitalize())}*\n{_detail(value)}", 2000)}
               for key, value in card.args.items()][:10]
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": _clip(
            (_("Refused by the checks: {title}") if failed else _("Approval: {title}")).format(title=title), 150)}},
        _section(card.description or title),
    ]
    if details:
        blocks.append({"type": "section", "fields": details})
    allowed = [d for d in card.allowed if d in DECISION_LABELS]
    blocks.append(_decision_buttons(thread_id, interrupt_id, allowed))
    on_reject = _(" Reject: {consequence}").format(consequence=card.on_reject) if card.on_reject else ""
    who = card.who_decides or _("{who} can decide.").format(who=_who(requester))
    blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(
        f"{who}{on_reject}", SECTION_TEXT_MAX)}]})
    text = (_("Refused by the checks: {title}. Failed: {failed}. {can}").format(
        title=title, failed=_("; ").join(failed), can=_("You can edit or reject it.") if "edit" in allowed else
        _("You can reject it.")) if failed else _("Approval needed: {title}").format(title=title))
    return dressed({"text": _clip(text, 3000), "blocks": blocks},
                   list(card.users or ()), list(card.accounts or ()), names)


COMPACT_NOTE = N_("Slack refused the full message (too long or malformed), so its details are attached below as a "
                  "file; `quantdesk chat` shows them too.")


def compact_message(message: dict[str, Any]) -> dict[str, Any] | None:
    """The header and buttons of a message whose full blocks Slack refused, so a review or approval can still be
    decided with a click; None when the message has no buttons (its plain text is enough)."""
    blocks = message.get("blocks") or []
    actions = [b for b in blocks if b.get("type") == "actions"]
    if not actions:
        return None
    header = [b for b in blocks if b.get("type") == "header"][:1]
    return {"text": _clip(str(message.get("text") or ""), SECTION_TEXT_MAX),
            "blocks": [*header, _section(_(COMPACT_NOTE)), *actions]}


def question_message(thread_id: str, interrupt_id: str, card: Card, requester: str | None,
                     names: Names | None = None) -> dict[str, Any]:
    """A pause as its card: a clarify question, a code review or an approval."""
    if isinstance(card, CodeReviewCard):
        return code_review_message(thread_id, interrupt_id, card, requester)
    if isinstance(card, ApprovalCard):
        return approval_message(thread_id, interrupt_id, card, requester, names)
    return clarify_message(thread_id, interrupt_id, card)


def _detail(value: Any) -> str:
    if isinstance(value, list):
        return "\n".join(_detail(v) for v in value) or "-"
    if isinstance(value, dict):
        return ", ".join(f"{k}: {_detail(v)}" for k, v in value.items()) or "-"
    return str(value) if value not in (None, "") else "-"


def _who(requester: str | None) -> str:
    return (_("<@{user}> or a configured approver").format(user=requester) if requester else
            _("The requester or a configured approver"))


def _decision_buttons(thread_id: str, interrupt_id: str, allowed: list[str]) -> dict[str, Any]:
    """Approve / Edit / Reject buttons (`review_<decision>` actions) for the allowed decisions."""
    elements = []
    for decision in allowed:
        button: dict[str, Any] = {"type": "button", "action_id": f"review_{decision}",
                                  "text": {"type": "plain_text", "text": _(DECISION_LABELS[decision])},
                                  "value": button_value(thread_id, interrupt_id, decision)}
        if decision == "approve":
            button["style"] = "primary"
        elif decision == "reject":
            button["style"] = "danger"
        elements.append(button)
    return {"type": "actions", "block_id": "review", "elements": elements}


def status_message(thread_id: str, text: str, running: bool = True) -> dict[str, Any]:
    """A run's status line; while it runs, a Stop button stops it at its next step."""
    blocks: list[dict[str, Any]] = [_section(text)]
    if running:
        blocks.append({"type": "actions", "block_id": "run", "elements": [
            {"type": "button", "action_id": "run_stop", "text": {"type": "plain_text", "text": _("Stop")},
             "value": json.dumps({"t": thread_id}, separators=(",", ":"))}]})
    return {"text": text, "blocks": blocks}


def retry_message(interrupt_id: str, error: str) -> dict[str, Any]:
    """A decision that could not be applied: what went wrong, and a Retry button."""
    text = _(":x: Your decision is recorded but was not applied: {error}").format(error=error)
    return {"text": _clip(text, 3000), "blocks": [
        _section(text),
        {"type": "actions", "block_id": "retry", "elements": [
            {"type": "button", "action_id": "decision_retry", "text": {"type": "plain_text", "text": _("Retry")},
             "value": json.dumps({"i": interrupt_id}, separators=(",", ":"))}]}]}


def decided_message(title: str, user_id: str, decision: str, detail: str = "", names: Names | None = None,
                    ) -> dict[str, Any]:
    """What a review message becomes after the decision: who decided what, no buttons."""
    verbs = {"approve": _(":white_check_mark: approved"), "edit": _(":pencil2: edited"),
             "reject": _(":no_entry: rejected")}
    text = _("*{title}* — {verb} by {user}").format(title=title, verb=verbs.get(decision, decision),
                                                     user=user_id) + (f"\n>{detail}" if detail else "")
    return dressed({"text": _("{title}: {decision} by {user}").format(title=title, decision=decision, user=user_id),
                    "blocks": [_section(text)]}, [user_id], [], names)


def _modal(callback_id: str, title: str, submit: str, metadata: tuple[str, str, str],
           blocks: list[dict[str, Any]]) -> dict[str, Any]:
    """A decision form; `metadata` (thread id, interrupt id, message ts) comes back with the submission."""
    thread_id, interrupt_id, message_ts = metadata
    return {
        "type": "modal", "callback_id": callback_id,
        "title": {"type": "plain_text", "text": title},
        "submit": {"type": "plain_text", "text": submit},
        "close": {"type": "plain_text", "text": _("Cancel")},
        "private_metadata": json.dumps({"t": thread_id, "i": interrupt_id, "m": message_ts}, separators=(",", ":")),
        "blocks": blocks,
    }


def edit_modal(thread_id: str, interrupt_id: str, message_ts: str, name: str, code: str) -> dict[str, Any]:
    """A modal prefilled with the body; a body over the input's 3,000 characters is said plainly, not cut."""
    fits = len(code) <= MODAL_INPUT_MAX
    element: dict[str, Any] = {"type": "plain_text_input", "action_id": "code", "multiline": True,
                               "max_length": MODAL_INPUT_MAX}
    if fits:
        element["initial_value"] = code
    intro = (_("Edit the body of `compute_factor`. It is dry-run, checked and reviewed again before it is saved.")
             if fits else _("The current body is {n} characters, more than a form can hold (3,000). It is attached "
                            "in the thread; write a shorter body here to replace it.").format(n=f"{len(code):,}"))
    return _modal("review_edit_modal", _("Edit factor code"), _("Dry-run & submit"),
                  (thread_id, interrupt_id, message_ts),
                  [_section(_clip(f"*{name}*: {intro}", SECTION_TEXT_MAX)),
                   {"type": "input", "block_id": "code", "label": {"type": "plain_text", "text": _("Code")},
                    "element": element},
                   {"type": "input", "block_id": "name", "optional": True,
                    "label": {"type": "plain_text", "text": _("Name of the edited factor")},
                    "hint": {"type": "plain_text", "text": _clip(_(
                        "Empty: {name}_edit_ and a code hash. Lower-case letters, digits and _.").format(name=name),
                        150)},
                    "element": {"type": "plain_text_input", "action_id": "name", "max_length": 64}}])


def reject_modal(thread_id: str, interrupt_id: str, message_ts: str, name: str, consequence: str) -> dict[str, Any]:
    """A form for a rejection's reason; `consequence` says what rejecting does."""
    return _modal("review_reject_modal", _("Reject"), _("Reject"), (thread_id, interrupt_id, message_ts),
                  [_section(_clip(_("Reject *{name}*? {consequence}").format(name=_clip(name, 200),
                                                                            consequence=consequence),
                                  SECTION_TEXT_MAX)),
                   {"type": "input", "block_id": "reason", "label": {"type": "plain_text", "text": _("Reason")},
                    "element": {"type": "plain_text_input", "action_id": "reason", "multiline": True,
                                "max_length": 1000}}])


def approval_edit_modal(thread_id: str, interrupt_id: str, message_ts: str, card: ApprovalCard) -> dict[str, Any]:
    """A form with one input per editable argument of an approval (its `args_schema`), prefilled with the
    current values; the submission is validated against the same schema."""
    args = card.args
    blocks: list[dict[str, Any]] = [_section(_clip(_("Edit *{title}*. The edited values are checked again before "
                                                     "anything is done.").format(
        title=card.title or card.action), SECTION_TEXT_MAX))]
    for name, rule in list(card.args_schema.items())[:MAX_BLOCKS - 1]:
        element: dict[str, Any] = {"type": "plain_text_input", "action_id": name, "max_length": 200}
        if args.get(name) is not None:
            element["initial_value"] = str(args[name])
        hint = ", ".join(f"{k} {rule[k]}" for k in ("minimum", "maximum") if k in rule)
        block: dict[str, Any] = {"type": "input", "block_id": name, "element": element,
                                 "label": {"type": "plain_text", "text": _clip(str(rule.get("title") or name), 2000)}}
        if hint or rule.get("enum"):
            block["hint"] = {"type": "plain_text", "text": _clip(
                hint or _("one of {values}").format(values=", ".join(map(str, rule["enum"]))), 2000)}
        blocks.append(block)
    return _modal("approval_edit_modal", _("Edit before approving"), _("Submit"),
                  (thread_id, interrupt_id, message_ts), blocks)


class Malformed(ValueError):
    """A button value or form metadata that is not what the bot wrote (truncated or edited)."""


def _fields(value: str, *names: str) -> tuple[str, ...]:
    try:
        data = json.loads(value)
        found = tuple(data[name] for name in names)
    except (ValueError, TypeError, KeyError) as exc:
        raise Malformed(value[:80]) from exc
    if not all(isinstance(item, str) and item for item in found):
        raise Malformed(value[:80])
    return found


def parse_button_value(value: str) -> tuple[str, str, str]:
    """(thread id, interrupt id, decision) of a decision button; Malformed when it is not the bot's JSON."""
    thread_id, interrupt_id, decision = _fields(value, "t", "i", "d")
    return thread_id, interrupt_id, decision


def parse_metadata(value: str) -> tuple[str, str, str]:
    """(thread id, interrupt id, message ts) of a submitted decision form; Malformed when it is not the bot's."""
    thread_id, interrupt_id, message_ts = _fields(value, "t", "i", "m")
    return thread_id, interrupt_id, message_ts


def parse_field(value: str, name: str) -> str:
    """One field of a small JSON button value (the Stop button's thread, the Retry button's decision)."""
    return _fields(value, name)[0]


def view_message(view: View, names: Names | None = None) -> dict[str, Any]:
    """A result view as blocks: header, summary and lines, facts as fields, the table and code as preformatted
    text, notes as small print, warnings; the people and accounts it names as mentions and channel links."""
    lines = [view.summary, *view.lines]
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": _clip(view.title, 150)}},
                                    _section("\n".join(lines))]
    for start in range(0, len(view.facts), 10):  # a section holds at most 10 fields
        blocks.append({"type": "section", "fields": [
            {"type": "mrkdwn", "text": _clip(f"*{label}*\n{value}", 2000)}
            for label, value in view.facts[start:start + 10]]})
    if view.table is not None:
        blocks.append(_section("```" + view.table.aligned() + "```"))
    if view.code:
        blocks.append(_section("```" + view.code + "```"))
    for note in view.notes:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(note, SECTION_TEXT_MAX)}]})
    for warning in view.warnings[:10]:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": _clip(f":warning: {warning}",
                                                                                        SECTION_TEXT_MAX)}]})
    return dressed({"text": _clip(view.summary, 3000), "blocks": blocks[:MAX_BLOCKS]}, view.users, view.accounts,
                   names)
