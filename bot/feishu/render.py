"""Feishu message cards (card JSON 1.0: a header, elements, action rows and forms) for the core's contents, within
Feishu's limits (CARD_ELEMENTS_MAX elements, CARD_BYTES_MAX bytes). Texts the core writes in Slack's mrkdwn
(`*bold*`, `:emoji:` codes) are said in Feishu's markdown; the people a text names by id are @-mentions."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable
from typing import Any

from bot.cards import ApprovalCard, Card, ClarifyCard, CodeReviewCard
from bot.core.intake import HelpSection, Reply
from graphs.views import View, named
from tools.i18n import N_, _

CARD_ELEMENTS_MAX = 50  # elements a card holds, counted through forms and action rows
CARD_BYTES_MAX = 30_000  # a card's JSON, as Feishu takes it
TITLE_MAX = 100
TEXT_MAX = 4000  # one markdown element
CODE_INLINE_MAX = 3000  # a code body shown in the card; a longer one goes up as a file beside it
INPUT_MAX = 10_000  # a form's multi-line input
CHOICE_BUTTONS_MAX = 20
DECISION_LABELS = {"approve": N_("Approve"), "edit": N_("Edit"), "reject": N_("Reject")}
BUTTON_STYLES = {"approve": "primary", "reject": "danger"}
EMOJI = {"hourglass_flowing_sand": "⏳", "white_check_mark": "✅", "x": "❌", "speech_balloon": "💬",
         "warning": "⚠️", "question": "❓", "no_entry": "⛔", "pencil2": "✏️", "eyes": "👀", "bell": "🔔",
         "moneybag": "💰", "chart_with_upwards_trend": "📈", "lock": "🔒", "stop_sign": "🛑"}
EMOJI_CODE = re.compile(r":([a-z0-9_+-]+):")
BOLD = re.compile(r"(?<![*\w])\*([^*\n]+)\*(?![*\w])")

# what a click asks for, in its button's value ("k"): a decision, a form, or a thread-level action
DECIDE, EDIT_FORM, REJECT_FORM, BACK, SUBMIT_EDIT, SUBMIT_REJECT, STOP, RETRY = (
    "decide", "edit", "reject", "back", "submit_edit", "submit_reject", "stop", "retry")


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def md(text: str, users: Iterable[str] = ()) -> str:
    """The core's mrkdwn as Feishu markdown: emoji codes as emoji, `*bold*` as `**bold**`, people as @-mentions."""
    text = EMOJI_CODE.sub(lambda m: EMOJI.get(m.group(1), m.group(0)), text)
    parts = text.split("```")
    text = "```".join(part if n % 2 else BOLD.sub(r"**\1**", part) for n, part in enumerate(parts))
    return named(text, users, lambda user: f"<at id={user}></at>")


def plain(text: str) -> str:
    """A text shown as typed (a header, a button): emoji codes as emoji, no markup."""
    return EMOJI_CODE.sub(lambda m: EMOJI.get(m.group(1), m.group(0)), text).replace("*", "")


def _text(content: str) -> dict[str, Any]:
    return {"tag": "plain_text", "content": content}


def markdown(text: str, users: Iterable[str] = ()) -> dict[str, Any]:
    return {"tag": "markdown", "content": clip(md(text, users), TEXT_MAX)}


def note(text: str, users: Iterable[str] = ()) -> dict[str, Any]:
    return {"tag": "note", "elements": [{"tag": "lark_md", "content": clip(md(text, users), TEXT_MAX)}]}


def fitted(elements: list[dict[str, Any]], keep_last: int = 0) -> list[dict[str, Any]]:
    """At most CARD_ELEMENTS_MAX elements: the last texts before the final `keep_last` dropped, action rows and
    forms kept."""
    while count_elements(elements) > CARD_ELEMENTS_MAX:
        droppable = [n for n, e in enumerate(elements[:len(elements) - keep_last])
                     if e.get("tag") not in ("action", "form")]
        elements = [e for n, e in enumerate(elements) if n != droppable[-1]]
    return elements


def _texts(elements: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The objects holding a card's texts (each a `content`): markdown, fields, notes; not buttons or inputs."""
    found = []
    for element in elements:
        if element.get("tag") == "markdown":
            found.append(element)
        found += [f["text"] for f in element.get("fields") or []]
        if element.get("tag") == "note":
            found += element["elements"]
    return found


def sized(card_json: dict[str, Any]) -> dict[str, Any]:
    """The card within CARD_BYTES_MAX: its longest text halved until it fits (a copy: `card_json` is kept)."""
    card_json = copy.deepcopy(card_json)
    while len(json.dumps(card_json, ensure_ascii=False).encode()) > CARD_BYTES_MAX:
        longest = max(_texts(card_json["elements"]), key=lambda t: len(t["content"]), default=None)
        if longest is None or len(longest["content"]) < 100:
            break
        longest["content"] = clip(longest["content"], len(longest["content"]) // 2)
    return card_json


def card(title: str, elements: list[dict[str, Any]], template: str = "blue") -> dict[str, Any]:
    """A card: its header and its elements, within Feishu's count and size."""
    return sized({"config": {"wide_screen_mode": True, "update_multi": True},
                  "header": {"title": _text(clip(plain(title), TITLE_MAX)), "template": template},
                  "elements": fitted(elements)})


def count_elements(elements: list[dict[str, Any]]) -> int:
    """Elements as Feishu counts them: each one, and each inside an action row or a form."""
    return sum(1 + count_elements(e.get("actions") or e.get("elements") or [])
               if e.get("tag") in ("action", "form") else 1 for e in elements)


def value(kind: str, thread_id: str, interrupt_id: str = "", decision: str = "") -> dict[str, str]:
    """A button's value: what it asks for (`kind`), which thread, which pause, what was chosen."""
    return {"k": kind, "t": thread_id, "i": interrupt_id, "d": decision}


def button(label: str, kind: str, thread_id: str, interrupt_id: str = "", decision: str = "",
           style: str = "default") -> dict[str, Any]:
    return {"tag": "button", "text": _text(clip(label, 40)), "type": style,
            "value": value(kind, thread_id, interrupt_id, decision)}


def actions(buttons: list[dict[str, Any]]) -> dict[str, Any]:
    return {"tag": "action", "actions": buttons}


def _who(requester: str | None) -> str:
    return (_("{user} or a configured approver").format(user=requester) if requester else
            _("The requester or a configured approver"))


def clarify_card(thread_id: str, interrupt_id: str, question: ClarifyCard) -> dict[str, Any]:
    """A clarify question; its choices are buttons, a reply in the thread answers too."""
    text = question.question or _("Could you say more?")
    elements = [markdown(f"❓ {text}")]
    choices = list(question.choices)[:CHOICE_BUTTONS_MAX]
    for start in range(0, len(choices), 4):
        elements.append(actions([button(choice, DECIDE, thread_id, interrupt_id, choice)
                                 for choice in choices[start:start + 4]]))
    elements.append(note(_("Reply in this thread or press a button.") if choices else _("Reply in this thread.")))
    return card(_("Question"), elements)


def _decision_buttons(thread_id: str, interrupt_id: str, allowed: Iterable[str]) -> dict[str, Any]:
    kinds = {"approve": DECIDE, "edit": EDIT_FORM, "reject": REJECT_FORM}
    return actions([button(_(DECISION_LABELS[d]), kinds[d], thread_id, interrupt_id, d, BUTTON_STYLES.get(d, "default"))
                    for d in allowed if d in DECISION_LABELS])


def code_review_card(thread_id: str, interrupt_id: str, review: CodeReviewCard, requester: str | None,
                     ) -> dict[str, Any]:
    """Code for review: the checks' verdict, the summary, the diff, the body (inline when it fits), the decisions."""
    verdict = (_("❌ **Checks failed:** {failure}").format(failure=review.failure) if review.failure else
               _("✅ **Checks passed**")) + _(" · sandbox isolation: {isolation}").format(isolation=review.isolation)
    elements = [markdown(verdict), note(review.summary or "-")]
    if review.diff:
        elements.append(markdown(_("**Changes against the code first reviewed**") + f"\n```\n{review.diff}\n```"))
    if len(review.code) <= CODE_INLINE_MAX:
        elements.append(markdown(_("**Body of `compute_factor`**") + f"\n```python\n{review.code.rstrip()}\n```"))
    else:
        elements.append(markdown(_("**Body of `compute_factor`** is {n} characters, too long to show here: it is "
                                   "attached below as a file.").format(n=f"{len(review.code):,}")))
    elements.append(_decision_buttons(thread_id, interrupt_id, review.allowed))
    elements.append(note(_("{who} can decide. Edit opens the code in a form; edited code is dry-run, checked and "
                           "shown here again for review.").format(who=_who(requester)), [requester or ""]))
    return card(_("Code review: {name}").format(name=review.name), elements, "red" if review.failure else "blue")


def _detail(item: Any) -> str:
    if isinstance(item, list):
        return "\n".join(_detail(v) for v in item) or "-"
    if isinstance(item, dict):
        return ", ".join(f"{k}: {_detail(v)}" for k, v in item.items()) or "-"
    return str(item) if item not in (None, "") else "-"


def label(key: str) -> str:
    return _(key.replace("_", " ").capitalize())


def approval_card(thread_id: str, interrupt_id: str, approval: ApprovalCard, requester: str | None,
                  ) -> dict[str, Any]:
    """An action waiting for approval: what it is, its details, the decisions, who may decide and what a
    rejection means; one its checks refused says which failed."""
    title = approval.title or approval.action or _("action")
    users = list(approval.users or ())
    elements: list[dict[str, Any]] = [markdown(approval.description or title, users)]
    fields = [{"is_short": True, "text": {"tag": "lark_md", "content": clip(
        f"**{label(key)}**\n{md(_detail(item), users)}", 2000)}} for key, item in approval.args.items()]
    for start in range(0, len(fields), 10):
        elements.append({"tag": "div", "fields": fields[start:start + 10]})
    elements.append(_decision_buttons(thread_id, interrupt_id, approval.allowed))
    on_reject = _(" Reject: {consequence}").format(consequence=approval.on_reject) if approval.on_reject else ""
    who = approval.who_decides or _("{who} can decide.").format(who=_who(requester))
    elements.append(note(f"{who}{on_reject}", [*users, requester or ""]))
    head = _("Refused by the checks: {title}") if approval.failed else _("Approval: {title}")
    return card(head.format(title=title), elements, "red" if approval.failed else "orange")


def question_card(thread_id: str, interrupt_id: str, question: Card, requester: str | None) -> dict[str, Any]:
    if isinstance(question, CodeReviewCard):
        return code_review_card(thread_id, interrupt_id, question, requester)
    if isinstance(question, ApprovalCard):
        return approval_card(thread_id, interrupt_id, question, requester)
    assert isinstance(question, ClarifyCard)
    return clarify_card(thread_id, interrupt_id, question)


def processing(shown: dict[str, Any], text: str) -> dict[str, Any]:
    """A card as a click leaves it while its decision is taken: every button disabled, forms gone, `text` said."""
    def still(element: dict[str, Any]) -> dict[str, Any]:
        if element.get("tag") == "action":
            return {**element, "actions": [{**b, "disabled": True} for b in element["actions"]]}
        return element
    elements = [still(e) for e in shown["elements"] if e.get("tag") != "form"]
    return sized({**shown, "elements": fitted([*elements, note(f"⏳ {text}")], keep_last=1)})


def edit_form(thread_id: str, interrupt_id: str, review: CodeReviewCard) -> dict[str, Any]:
    """Edit: the code in a multi-line input (a body over the input's limit is said, not cut), an optional new
    name, submit and back."""
    fits = len(review.code) <= INPUT_MAX
    intro = (_("Edit the body of `compute_factor`. It is dry-run, checked and reviewed again before it is saved.")
             if fits else _("The current body is {n} characters, more than a form can hold; write a shorter body "
                            "here to replace it.").format(n=f"{len(review.code):,}"))
    code_input: dict[str, Any] = {"tag": "input", "name": "code", "input_type": "multiline_text", "rows": 12,
                                  "max_length": INPUT_MAX, "required": True, "label": _text(_("Code"))}
    if fits:
        code_input["default_value"] = review.code
    form = {"tag": "form", "name": "edit", "elements": [
        code_input,
        {"tag": "input", "name": "name", "max_length": 64, "label": _text(_("Name of the edited factor")),
         "placeholder": _text(clip(_("Empty: {name}_edit_ and a code hash. Lower-case letters, digits and _.")
                                   .format(name=review.name), 100))},
        {**button(_("Dry-run & submit"), SUBMIT_EDIT, thread_id, interrupt_id, "edit", "primary"),
         "action_type": "form_submit", "name": "submit"},
        {**button(_("Back"), BACK, thread_id, interrupt_id), "name": "back"}]}
    return card(_("Edit factor code: {name}").format(name=review.name), [markdown(intro), form])


def fields_form(thread_id: str, interrupt_id: str, approval: ApprovalCard) -> dict[str, Any]:
    """Edit an approval: one input per field it lets change, prefilled."""
    inputs = [{"tag": "input", "name": key, "max_length": 200, "label": _text(label(key)),
               "default_value": str(approval.args.get(key, ""))} for key in approval.args_schema]
    form = {"tag": "form", "name": "edit", "elements": [
        *inputs,
        {**button(_("Submit"), SUBMIT_EDIT, thread_id, interrupt_id, "edit", "primary"),
         "action_type": "form_submit", "name": "submit"},
        {**button(_("Back"), BACK, thread_id, interrupt_id), "name": "back"}]}
    title = approval.title or approval.action or _("action")
    return card(_("Edit: {title}").format(title=title), [markdown(approval.description or title), form], "orange")


def reject_form(thread_id: str, interrupt_id: str, name: str, consequence: str) -> dict[str, Any]:
    """Reject: the reason, typed; what rejecting does."""
    form = {"tag": "form", "name": "reject", "elements": [
        {"tag": "input", "name": "reason", "input_type": "multiline_text", "rows": 3, "max_length": 2000,
         "required": True, "label": _text(_("Reason"))},
        {**button(_("Reject"), SUBMIT_REJECT, thread_id, interrupt_id, "reject", "danger"),
         "action_type": "form_submit", "name": "submit"},
        {**button(_("Back"), BACK, thread_id, interrupt_id), "name": "back"}]}
    return card(_("Reject: {name}").format(name=name), [markdown(_("Rejecting: {consequence}").format(
        consequence=consequence)), form], "red")


def status_card(thread_id: str, text: str, running: bool) -> dict[str, Any]:
    """A run's status; while it runs, Stop stops it at its next step."""
    elements = [markdown(text)]
    if running:
        elements.append(actions([button(_("Stop"), STOP, thread_id)]))
    return card(_("Status"), elements, "grey" if not running else "blue")


def notice_card(text: str, users: Iterable[str] = (), failure: bool = False) -> dict[str, Any]:
    return card(_("Stopped") if failure else "QuantDesk", [markdown(text, users)], "red" if failure else "blue")


def view_card(view: View) -> dict[str, Any]:
    """A result: the summary and lines, the facts as fields, the table and code as code, notes and warnings."""
    users = view.users
    elements = [markdown("\n".join([view.summary, *view.lines]), users)]
    fields = [{"is_short": True, "text": {"tag": "lark_md", "content": clip(f"**{name}**\n{md(text, users)}", 2000)}}
              for name, text in view.facts]
    for start in range(0, len(fields), 10):
        elements.append({"tag": "div", "fields": fields[start:start + 10]})
    if view.table is not None:
        elements.append(markdown(f"```\n{view.table.aligned()}\n```"))
    if view.code:
        elements.append(markdown(f"```\n{view.code}\n```"))
    elements += [note(n, users) for n in view.notes]
    elements += [note(f"⚠️ {w}", users) for w in view.warnings[:10]]
    return card(view.title, elements, "green")


def decided_card(title: str, user: str, decision: str, detail: str = "") -> dict[str, Any]:
    """What a card becomes once decided: who decided what, no buttons."""
    verbs = {"approve": _("✅ approved"), "edit": _("✏️ edited"), "reject": _("⛔ rejected")}
    text = _("**{title}** — {verb} by {user}").format(title=title, verb=verbs.get(decision, decision), user=user)
    return card(title, [markdown(text + (f"\n> {detail}" if detail else ""), [user])], "grey")


def answered_card(question: str, user: str, answer: str) -> dict[str, Any]:
    return card(_("Question"), [markdown(f"{question}\n**{user}:** {answer}", [user])], "grey")


def retry_card(thread_id: str, interrupt_id: str, error: str) -> dict[str, Any]:
    text = _("❌ Your decision is recorded but was not applied: {error}").format(error=error)
    return card(_("Not applied"), [markdown(text), actions([button(_("Retry"), RETRY, thread_id, interrupt_id)])],
                "red")


def help_text(sections: tuple[HelpSection, ...]) -> str:
    lines = ["**QuantDesk** — " + _("type these in a thread, or mention me")]
    for section in sections:
        lines.append(f"**{section.title}**")
        lines += [f"• `{entry.usage}` — {entry.summary}" if entry.usage else f"     {entry.summary}"
                  for entry in section.entries]
    return "\n".join(lines)


def reply_card(reply: Reply) -> dict[str, Any]:
    """What the core answered at once: a command's view, the help, or a line."""
    if reply.view is not None:
        return view_card(reply.view)
    if reply.help:
        return card("QuantDesk", [markdown(help_text(reply.help))])
    return notice_card(f"⚠️ {reply.text}" if reply.failed else reply.text)


def content(card_json: dict[str, Any]) -> str:
    """A card as a message's content."""
    return json.dumps(card_json, ensure_ascii=False)


def named_text(text: str, users: Iterable[str] = ()) -> str:
    """A plain text message's text: emoji codes as emoji, backticks kept, people as @-mentions."""
    return named(plain(text), users, lambda user: f'<at user_id="{user}"></at>')
