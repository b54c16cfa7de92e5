"""What Feishu delivers, handed to the core: messages (`im.message.receive_v1`: a mention in a group, a reply in
a thread the bot runs, every message of a one-to-one chat) and card clicks (`card.action.trigger`).

A click is answered inside Feishu's 3 s with the card it leaves: a decision's row is written first (an answered
click is never lost), the card comes back with its buttons disabled and "processing", and the decision takes the
core's one path (`confirm`) once that answer is sent. Edit and Reject answer with the card's form; its submission
is checked (problems are said in a toast, nothing decided) and then decided like a click. A message is taken once
its callback is answered: the core records and queues it (a delivery Feishu repeats has the same key)."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import lark_oapi as lark
from lark_oapi.api.im.v1 import P2ImMessageReceiveV1
from lark_oapi.event.callback.model.p2_card_action_trigger import P2CardActionTrigger, P2CardActionTriggerResponse

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
from bot.core import ALREADY_HANDLED, Core, Place, Typed, channel_account
from bot.core.decider import Verdict
from bot.feishu import render
from bot.feishu.surface import FeishuSurface
from bot.surfaces import FEISHU_TEAM
from graphs.factor.spec import SpecError, check_name
from graphs.factor.template import edit_problems
from graphs.interrupts import validate_args
from tools.i18n import N_, _, using

log = logging.getLogger(__name__)

MALFORMED = N_("This button is not one I wrote (it may have been cut or edited), so nothing was decided.")
PROCESSING = N_("processing…")


class AfterAnswer:
    """Work a callback leaves for after its answer is sent (per request thread): the transport runs it."""

    def __init__(self) -> None:
        self._local = threading.local()

    def add(self, work: Callable[[], None]) -> None:
        self._local.__dict__.setdefault("work", []).append(work)

    def take(self) -> list[Callable[[], None]]:
        work: list[Callable[[], None]] = self._local.__dict__.pop("work", [])
        return work


def run_after(job: Callable[[], None]) -> None:
    """One piece of work after an answer: a failure is logged (what was recorded, the background service retries)."""
    try:
        job()
    except Exception:  # noqa: BLE001 - logged; the callback was answered already
        log.exception("work after a Feishu callback failed")


def toast(text: str, kind: str = "error", card: dict[str, Any] | None = None) -> P2CardActionTriggerResponse:
    answer: dict[str, Any] = {"toast": {"type": kind, "content": text}}
    if card is not None:
        answer["card"] = {"type": "raw", "data": card}
    return P2CardActionTriggerResponse(answer)


def text_of(message: Any, bot: str) -> tuple[str, bool]:
    """A message's text (text or rich text), its mention of the bot taken out and other people's as their open
    ids; and whether it mentions the bot."""
    try:
        body = json.loads(message.content or "{}")
    except ValueError:
        return "", False
    if message.message_type == "post":
        post: Any = body.get("content") or next((v.get("content") for v in body.values() if isinstance(v, dict)), [])
        text = "\n".join("".join(str(t.get("text") or "") for t in line if isinstance(t, dict)) for line in post or [])
    else:
        text = str(body.get("text") or "")
    mentioned = False
    for mention in message.mentions or []:
        open_id = mention.id.open_id if mention.id else ""
        mentioned = mentioned or open_id == bot
        text = text.replace(mention.key or "\0", "" if open_id == bot else (open_id or ""))
    return text.strip(), mentioned


class Callbacks:
    def __init__(self, core: Core, surface: FeishuSurface, bot: str) -> None:
        """`bot`: the bot's open id."""
        self.core, self.surface, self.bot = core, surface, bot
        self.after = AfterAnswer()

    def dispatcher(self, encrypt_key: str, verification_token: str) -> lark.EventDispatcherHandler:
        """The SDK's dispatcher: it answers the URL check, decrypts, checks the token and the signature."""
        return (lark.EventDispatcherHandler.builder(encrypt_key, verification_token)
                .register_p2_im_message_receive_v1(self.on_message)
                .register_p2_card_action_trigger(self.on_card)
                .build())

    # --- messages -----------------------------------------------------------------------------------------------

    def on_message(self, data: P2ImMessageReceiveV1) -> None:
        event = data.event
        if event is None or event.message is None or event.sender is None:
            return
        self.after.add(lambda: self.take(event))

    def take(self, event: Any) -> None:
        message, sender = event.message, event.sender
        user = sender.sender_id.open_id if sender.sender_id else ""
        if sender.sender_type != "user" or not user or user == self.bot:
            return
        chat = str(message.chat_id)
        self.surface.chat_types[chat] = str(message.chat_type or "")
        text, mentioned = text_of(message, self.bot)
        root = str(message.root_id or message.message_id)
        place = Place(FEISHU_TEAM, chat, root, user)
        in_my_thread = bool(message.root_id) and self.core.is_known_thread(place)
        if message.chat_type != "p2p" and not (mentioned or in_my_thread):
            return  # a group message not for the bot
        reply = self.core.intake.take(Typed(place, text, f"msg:{chat}:{message.message_id}",
                                            ref=str(message.message_id)), channel_account(chat))
        if reply.answered and (reply.text or reply.view is not None or reply.help):
            with using(self.core.language_of(user)):
                self.surface.send_card(place, render.reply_card(reply))
            if reply.view is not None:
                self.core.outbox.upload(place, reply.view.artifacts)

    # --- card clicks --------------------------------------------------------------------------------------------

    def on_card(self, data: P2CardActionTrigger) -> P2CardActionTriggerResponse:
        event = data.event
        if event is None or event.operator is None or event.action is None:
            return toast(_(MALFORMED))
        user = str(event.operator.open_id or "")
        with using(self.core.language_of(user)):  # a toast is the clicker's
            return self._on_card(user, event.action, event.context)

    def _on_card(self, user: str, action: Any, context: Any) -> P2CardActionTriggerResponse:
        value = action.value or {}
        kind, thread_id, interrupt_id = value.get("k"), str(value.get("t") or ""), str(value.get("i") or "")
        if kind == render.STOP:
            return toast(self.core.decider.stop(thread_id, user), "info")
        if kind == render.RETRY:
            return toast(self.core.decider.retry(interrupt_id, user), "info")
        if kind not in (render.DECIDE, render.EDIT_FORM, render.REJECT_FORM, render.BACK, render.SUBMIT_EDIT,
                        render.SUBMIT_REJECT) or not thread_id or not interrupt_id:
            return toast(_(MALFORMED))
        if kind in (render.EDIT_FORM, render.REJECT_FORM, render.BACK):
            return self._form(user, kind, thread_id, interrupt_id, str(value.get("d") or "edit"))
        found = self.core.decider.may_decide(thread_id, interrupt_id, user, "edit" if kind == render.SUBMIT_EDIT
                                             else "reject" if kind == render.SUBMIT_REJECT else "approve")
        card = found.card
        if card is None:
            return toast(found.reason or _(ALREADY_HANDLED))
        decision = self._decision(kind, card, str(value.get("d") or ""), action.form_value or {})
        if isinstance(decision, str):
            return toast(decision)
        verdict = self.core.decider.decide(thread_id, interrupt_id, user, decision,
                                           "button" if kind == render.DECIDE else "card form")
        if not verdict.allowed:
            return toast(verdict.reason)
        message = str(getattr(context, "open_message_id", "") or "") or None
        self.after.add(lambda: self.core.decider.confirm(verdict, interrupt_id, user, decision, message))
        return toast(_("Recorded."), "success", self._processing(verdict, thread_id, interrupt_id, card))

    def _processing(self, verdict: Verdict, thread_id: str, interrupt_id: str, card: Card) -> dict[str, Any]:
        """The card as the click leaves it, in its thread's language."""
        info = verdict.thread
        with using(info.language if info is not None else None):
            shown = render.question_card(thread_id, interrupt_id, card, info.user_id if info else None)
            return render.processing(shown, _(PROCESSING))

    def _form(self, user: str, kind: str, thread_id: str, interrupt_id: str, decision: str,
              ) -> P2CardActionTriggerResponse:
        """Edit or Reject: the card becomes its form (for whoever may decide); Back: the card again."""
        verdict = self.core.decider.may_decide(thread_id, interrupt_id, user,
                                               "reject" if kind == render.REJECT_FORM else decision)
        card, info = verdict.card, verdict.thread
        if card is None or info is None or (not verdict.allowed and kind != render.BACK):
            return toast(verdict.reason or _(ALREADY_HANDLED))
        with using(info.language):
            if kind == render.BACK:
                shown = render.question_card(thread_id, interrupt_id, card, info.user_id)
            elif kind == render.REJECT_FORM and isinstance(card, CodeReviewCard | ApprovalCard):
                name = card.name if isinstance(card, CodeReviewCard) else card.title or card.action
                shown = render.reject_form(thread_id, interrupt_id, name, card.on_reject or _("The action is not "
                                                                                                "taken."))
            elif isinstance(card, CodeReviewCard):
                shown = render.edit_form(thread_id, interrupt_id, card)
            elif isinstance(card, ApprovalCard) and "edit" in card.allowed:
                shown = render.fields_form(thread_id, interrupt_id, card)
            else:
                return toast(_(MALFORMED))
        return toast(_("Fill in the form on the card."), "info", shown)

    @staticmethod
    def _decision(kind: str, card: Card, chosen: str, form: dict[str, Any]) -> Decision | str:
        """The decision a click or a form asks for, or what is wrong with it (said; nothing decided)."""
        if kind == render.DECIDE:
            return Answer(chosen) if isinstance(card, ClarifyCard) else Approve()
        if kind == render.SUBMIT_REJECT:
            reason = str(form.get("reason") or "").strip()
            return Reject(reason) if reason else _("A rejection needs a reason.")
        if isinstance(card, CodeReviewCard):
            code, name = str(form.get("code") or "").strip("\n"), str(form.get("name") or "").strip()
            problems = edit_problems(code)
            if problems:
                return "; ".join(problems)
            try:
                if name:
                    check_name(name)
            except SpecError as exc:
                return str(exc)
            return code_edit(code, name or None)
        if isinstance(card, ApprovalCard):
            edits = {k: v for k, v in form.items() if k in card.args_schema}
            args, problems = validate_args(dict(card.args_schema), dict(card.args), edits)
            return "; ".join(problems) if problems else Edit(card.action, args)
        return _(MALFORMED)
