"""The core's one dispatcher: what a person typed, from any surface, read once (graphs/conversation.py) and acted
on in one order. What the core answers at once (help, status, language, a command and its view, a usage) comes
back as a surface-neutral `Reply` the surface renders; a request, an answer, `cancel` or free text is recorded
and queued on its thread (`submit_text`), or, typed outside a thread (`/quant`), starts a thread of its own. A
session surface (the console) keeps its current thread itself and takes what concerns it from `Reply.intent`."""

from __future__ import annotations

import logging
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sqlalchemy.exc import SQLAlchemyError

from bot.core.surface import Place, Refused, ThreadStart
from bot.first_answers import read_line
from bot.jobs import Message
from bot.stores.threads import dedupe_key
from graphs import conversation
from graphs.clarify import is_cancel
from graphs.conversation import Answer, Cancel, HelpSection, Intent, Leave, LocalCommand, Pending, Request

__all__ = ["Answer", "Cancel", "HelpSection", "Intake", "Leave", "LocalCommand", "Pending", "Reply", "Request",
           "Typed", "clean_text"]
from graphs.views import View
from graphs.workflow import CommandError
from tools.data.schema import DataError
from tools.i18n import N_, _, ngettext, using

if TYPE_CHECKING:
    from bot.core.core import Core

log = logging.getLogger(__name__)
NOT_TAKEN = N_(":warning: I could not take this message: my database does not answer, so nothing was recorded or run. "
              "Send it again in a minute.")

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
STATUS_WORDS = {"running": N_("running"), "waiting": N_("waiting"), "done": N_("done"), "failed": N_("failed")}
NOT_IN_CHANNEL = N_("I am not a member of this channel, so I cannot start a thread here. Invite me with "
                    "`/invite @QuantDesk` and run the command again.")


@dataclass(frozen=True)
class Reply:
    """What the core made of a line: what to show the person who typed it (text, a command's view, the help), and
    what it was read as. `answered`: shown here and done; else it went to its thread (`queued`, or `started` in a
    new one) or is the session surface's to act on."""

    intent: Intent
    text: str = ""
    view: View | None = None
    help: tuple[HelpSection, ...] = ()
    answered: bool = True
    queued: bool = False
    closed: tuple[str, ...] = ()  # threads whose open cards a command closed (a trading switch-off)
    background_due: bool = False  # a command made background work due (a clock move's rule runs)
    failed: bool = False  # `text` says what went wrong


@dataclass(frozen=True)
class Typed:
    """A line as a surface hands it over: where, by whom, its dedupe key, what the thread waits on (the kind of its
    oldest open question; None when nothing waits or the surface leaves that to the thread's job), and the
    surface's own command words with their help."""

    place: Place
    text: str
    key: str = ""
    waiting: str | None = None
    local: Collection[tuple[str, str]] = field(default_factory=tuple)  # (usage, summary message id)
    session: bool = False  # a session surface (the console): `pending N`, `quit` and its thread are its own
    ref: str = ""  # the surface's reference of the typed message (acknowledged once queued), if it has one


class Intake:
    def __init__(self, core: Core) -> None:
        self.core = core

    def read(self, typed: Typed) -> Intent:
        return read_line(clean_text(typed.text), typed.waiting, typed.local)

    def answer(self, typed: Typed, account: str) -> Reply:
        """What the core answers at once, in the typist's language; `answered=False` for the rest (the intent
        says what it is). `account`: the paper account commands default to."""
        return self._answer(self.read(typed), typed, account)

    def _answer(self, intent: Intent, typed: Typed, account: str) -> Reply:
        with using(self.core.language_of(typed.place.user)):
            return self._reply(intent, typed, account)

    def _reply(self, intent: Intent, typed: Typed, account: str) -> Reply:
        user = typed.place.user
        if not answered_at_once(intent, typed.session):
            return Reply(intent, answered=False)
        if isinstance(intent, conversation.Empty):
            return Reply(intent)
        if isinstance(intent, conversation.Help):
            return Reply(intent, help=tuple(conversation.help_sections(self.core.runner.context.provider, typed.local)))
        if isinstance(intent, conversation.Status):
            return Reply(intent, text=self.status_text(user))
        if isinstance(intent, conversation.Language):
            return Reply(intent, text=self.core.choose_language(user, intent.word))
        if isinstance(intent, conversation.Usage):
            return Reply(intent, text=_("Usage: `{usage}`. `help` lists every command.").format(usage=intent.usage),
                         failed=True)
        if isinstance(intent, conversation.Command):
            return self._run(intent, user, account)
        if isinstance(intent, conversation.Pending):  # outside a session: what waits for this person
            return Reply(intent, text=self.status_text(user))
        return Reply(intent, text=_("There is no session to leave here; `cancel` stops a request in its thread."))

    def _run(self, intent: conversation.Command, user: str, account: str) -> Reply:
        """A command run as `user`: its view, the cards it closed and whether it made background work due."""
        closed: list[str] = []
        due: list[bool] = []

        def close(action: str, reason: str) -> int:
            closed.extend(self.core.decider.close_cards(action, reason, user))
            return len(closed)

        try:
            view = intent.command.run(self.core.command_call(list(intent.args), user or None, account,
                                                             background_due=lambda: due.append(True),
                                                             close_cards=close))
        except (CommandError, DataError, ValueError) as exc:
            return Reply(intent, text=str(exc), failed=True)
        return Reply(intent, view=view, closed=tuple(closed), background_due=bool(due))

    def take(self, typed: Typed, account: str) -> Reply:
        """A message typed in a thread (a mention, a reply, a direct message, the assistant pane): answered here
        once (a redelivered event is not answered twice: `Reply.answered` with nothing to show), else recorded and
        queued on its thread, whose job reads it against what the thread waits on."""
        intent = self.read(typed)
        if isinstance(intent, conversation.Empty):
            return Reply(intent)
        try:
            return self._take(intent, typed, account)
        except SQLAlchemyError:  # the person is told, so the message is not lost in silence
            log.warning("message %s not taken: the database failed", dedupe_key(typed.key), exc_info=True)
            with using(self.core.language_of(typed.place.user)):
                return Reply(intent, text=_(NOT_TAKEN), failed=True)

    def _take(self, intent: Intent, typed: Typed, account: str) -> Reply:
        if not answered_at_once(intent, typed.session):  # `queued` is False for a redelivery: recorded before
            queued = self.submit_text(typed.place, typed.text, typed.key)
            if queued:
                self.core.waiting.took_in(typed.place, dedupe_key(typed.key), typed.ref)
            return Reply(intent, answered=False, queued=queued)
        if not self.answered_once(typed.place, typed.text, typed.key):  # a redelivery: its command ran once
            return Reply(intent)
        return self._answer(intent, typed, account)

    def start(self, typed: Typed, account: str, title: str) -> Reply:
        """A line typed outside any thread (`/quant …`): what the core answers at once, else a request or free text
        starts a thread of its own under a root `title`; `cancel` and answers have no thread to go to."""
        reply = self.answer(typed, account)
        if reply.answered:
            return reply
        with using(self.core.language_of(typed.place.user)):
            if isinstance(reply.intent, conversation.Cancel | conversation.Answer | conversation.LocalCommand):
                return Reply(reply.intent, text=_("Nothing runs or waits here: `cancel` and answers go in the "
                                                  "request's thread; `cancel ORDER` cancels an order. `help` lists "
                                                  "what I can do."), failed=True)
            try:
                root = self.core.surface.open_thread(ThreadStart(typed.place.channel, title, "",
                                                                 users=[typed.place.user]), again=False)
            except Refused as exc:
                text = (_(NOT_IN_CHANNEL) if exc.reason in ("not_in_channel", "channel_not_found") else
                        _("I could not post here ({error}).").format(error=exc.reason))
                return Reply(reply.intent, text=text, failed=True)
        place = Place(root.team, root.channel, root.thread_ts, typed.place.user)
        key = f"msg:{root.channel}:{root.thread_ts}"
        if self.submit_text(place, typed.text, key):
            self.core.waiting.took_in(place, dedupe_key(key), "")  # the root it posted is its acknowledgement
        return Reply(reply.intent, answered=False, queued=True)

    def submit_text(self, place: Place, text: str, key: str) -> bool:
        """Record the message (its dedupe key) and queue its run behind the thread's earlier jobs. `cancel` also
        stops the thread's running job at its next step at once, without waiting its turn."""
        text = clean_text(text)
        message = Message(dedupe_key(key), place.team, place.channel, place.thread_ts, place.user, text)
        if is_cancel(text) and self.core.queue.abort(message.thread_id):
            log.info("stop requested for thread %s", message.thread_id)
        return self.core.queue.submit_text(message)

    def answered_once(self, place: Place, text: str, key: str) -> bool:
        """Record a message answered at once: True the first time its key is seen."""
        message = Message(dedupe_key(key), place.team, place.channel, place.thread_ts, place.user, clean_text(text))
        if not self.core.queue.inbox.record(message.key, message.thread_id, message.payload()):
            return False
        self.core.queue.inbox.mark_done(message.key)
        return True

    def status_text(self, user: str) -> str:
        """`status`: the user's open threads, and anything stuck in them with the reason: decisions not applied
        yet and questions or results that have not been shown."""
        core = self.core
        threads = core.threads.threads_of(user, ("running", "waiting", "failed"))
        if not threads:
            return _("You have no open QuantDesk threads.")
        mine = {t.thread_id for t in threads}
        waiting = _("waiting for its turn")
        lines = [_("Your open threads:")] + [
            _("• <#{channel}> thread {ts}: {status}").format(channel=t.channel_id, ts=t.thread_ts,
                                                             status=_(STATUS_WORDS.get(t.status, t.status)))
            + (ngettext(", {n} question waiting for you", ", {n} questions waiting for you", len(t.pending)).format(
                n=len(t.pending)) if t.pending else "") for t in threads]
        stuck = [_("• decision by <@{user}> ({source}) ").format(user=d.decided_by, source=d.source)
                 + (_("failed: ") if d.outcome == "failed" else
                    _("not applied yet (attempt {n}): ").format(n=d.attempts))
                 + (d.last_error or waiting) for d in core.decisions.stuck() if d.thread_id in mine]
        stuck += [_("• a {kind} not posted yet ({n} attempt(s)): {error}").format(kind=p.kind, n=p.attempts,
                                                                                  error=p.last_error or waiting)
                  for p in core.posts.unposted() if p.thread_id in mine]
        return "\n".join(lines + ([_("Stuck:"), *stuck] if stuck else []))


def answered_at_once(intent: Intent, session: bool) -> bool:
    """Whether the core answers `intent` where it was typed (`Intake._reply`), rather than its thread's job or the
    session surface (which keeps `pending N` and `quit` for itself)."""
    return isinstance(intent, conversation.Empty | conversation.Help | conversation.Status | conversation.Language
                      | conversation.Usage | conversation.Command) or (
        not session and isinstance(intent, conversation.Pending | conversation.Leave))


def clean_text(text: str) -> str:
    """A message's text without the mentions of the bot."""
    return MENTION.sub("", text or "").strip()

