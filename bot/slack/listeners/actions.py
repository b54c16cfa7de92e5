"""Buttons: a clarify choice, Approve, Edit / Reject (which open a form), Stop and Retry. A decision click is acked
once its decision row is written, so an acked click is never lost; a button whose value is not what the bot wrote
is answered plainly and decides nothing. The decision buttons are the same on the App Home (their value carries
the thread); a click there is answered on the Home."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from slack_bolt import App

from bot.cards import Answer, ApprovalCard, Approve, CodeReviewCard, Decision
from bot.core import ALREADY_HANDLED, Core, Place
from bot.slack import render
from bot.slack.render import Malformed, parse_button_value, parse_field
from tools.i18n import N_, _, using

NO_CARD = N_("This question's card has not reached its thread yet; try again in a moment.")
MALFORMED = N_("This button's value is not one I wrote (it may have been cut or edited), so nothing was decided.")


def clicked_at(body: dict[str, Any]) -> Place:
    """Where a click happened, and who clicked (for a private answer)."""
    message = body.get("message") or {}
    return Place((body.get("team") or {}).get("id", ""), (body.get("channel") or {}).get("id", ""),
                 message.get("thread_ts") or message.get("ts") or "", body["user"]["id"])


def on_home(body: dict[str, Any]) -> bool:
    """A click on the App Home (its payload has a view, not a channel or a message)."""
    return (body.get("container") or {}).get("type") == "view"


def register(app: App, core: Core) -> None:
    def say(body: dict[str, Any], place: Place, text: str) -> None:
        """Answer the clicker: on their Home when they clicked there, else privately in the thread."""
        if on_home(body) and core.homes is not None:
            core.homes.opened(place.user, notice=text)
        else:
            core.surface.tell(place, text)

    def decide(ack: Any, body: dict[str, Any], value: str, decision_of: Callable[[str], Decision]) -> None:
        """A decision button, in its thread or on the Home (its value carries the thread): record the row, then
        ack (an acked click is never lost), then show and queue it. What only the clicker sees is in their
        language; the card, in the thread's."""
        place = clicked_at(body)
        with using(core.language_of(place.user)):
            try:
                thread_id, interrupt_id, choice = parse_button_value(value)
            except Malformed:
                ack()
                say(body, place, _(MALFORMED))
                return
            decision = decision_of(choice)
            verdict = core.decider.decide(thread_id, interrupt_id, place.user, decision, "button")
            ack()
            if not verdict.allowed:
                say(body, place, verdict.reason)
                return
        card = None if on_home(body) else body["message"]["ts"]  # from the Home: the card in the thread
        core.decider.confirm(verdict, interrupt_id, place.user, decision, card)

    @app.action(re.compile(r"^clarify_choice_\d+$"))
    def on_choice(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        decide(ack, body, action["value"], Answer)

    @app.action("review_approve")
    def on_approve(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        decide(ack, body, action["value"], lambda _choice: Approve())

    def answer(ack: Any, body: dict[str, Any], value: str, field: str, act: Callable[[str, str], str]) -> None:
        """A button that names one thing (`field` of its value): ack, `act` on it as the clicker, say the result."""
        ack()
        place = clicked_at(body)
        with using(core.language_of(place.user)):
            try:
                named = parse_field(value, field)
            except Malformed:
                core.surface.tell(place, _(MALFORMED))
                return
            core.surface.tell(place, act(named, place.user))

    @app.action("run_stop")
    def on_stop(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        answer(ack, body, action["value"], "t", core.decider.stop)

    @app.action("decision_retry")
    def on_retry(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        answer(ack, body, action["value"], "i", core.decider.retry)

    @app.action(re.compile(r"^review_(edit|reject)$"))
    def on_open_form(ack: Any, body: dict[str, Any], action: dict[str, Any]) -> None:
        ack()  # first: the trigger_id expires 3 s after the click
        place = clicked_at(body)
        with using(core.language_of(place.user)):  # the form is the clicker's
            open_form(place, body, action)

    def open_form(place: Place, body: dict[str, Any], action: dict[str, Any]) -> None:
        try:
            thread_id, interrupt_id, decision = parse_button_value(action["value"])
        except Malformed:
            say(body, place, _(MALFORMED))
            return
        verdict = core.decider.may_decide(thread_id, interrupt_id, place.user, decision)
        card = verdict.card
        if not verdict.allowed or card is None or verdict.thread is None:
            say(body, place, verdict.reason or _(ALREADY_HANDLED))
            return
        shown = verdict.thread.pending.get(interrupt_id) or {}
        message_ts = str(shown.get("ts") or "") if on_home(body) else body["message"]["ts"]
        if not message_ts:
            say(body, place, _(NO_CARD))
            return
        if isinstance(card, ApprovalCard):
            name, on_reject = card.title or _("code"), card.on_reject
        elif isinstance(card, CodeReviewCard):
            name, on_reject = card.name or _("code"), card.on_reject
        else:
            say(body, place, _(MALFORMED))  # a question has no Edit or Reject: not a button I wrote
            return
        if decision == "reject":
            view = render.reject_modal(thread_id, interrupt_id, message_ts, name,
                                       on_reject or _("The action is not taken."))
        elif isinstance(card, ApprovalCard):
            view = render.approval_edit_modal(thread_id, interrupt_id, message_ts, card)
        else:
            view = render.edit_modal(thread_id, interrupt_id, message_ts, name, card.code)
        app.client.views_open(trigger_id=body["trigger_id"], view=view)
