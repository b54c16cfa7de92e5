"""The core every surface shares: take in a message, record a decision, apply it, show the outcome.

It holds the runner, the job queue, the thread registry, the decision and post stores and the permission policy,
and reaches people only through its surface (bot/core/surface.py). Every human decision takes one path, whatever
it came from (a button, a form, a thread reply, a console line): `decide` writes its row, `confirm` shows it and
queues the apply job, and `apply_decision` (that job) resumes the run once."""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from bot.cards import Answer, Malformed, Pending
from bot.core.decider import Decider
from bot.core.home import Homes
from bot.core.intake import Intake
from bot.core.kinds import kind_of
from bot.core.outbox import Outbox
from bot.core.policy import Policy
from bot.core.presenter import Presenter
from bot.core.surface import (
    HomeSurface,
    Place,
    Refused,
    Surface,
    ThreadStart,
)
from bot.core.waiting import WAITING_POSTS, Waiting
from bot.jobs import JobQueue, Message
from bot.jobs.failures import RetryLater, last_attempt
from bot.runner import Outcome, Runner
from bot.stores.decisions import CLAIM_SECONDS, DecisionStore
from bot.stores.homes import HomeStore
from bot.stores.languages import LanguageStore
from bot.stores.posts import PostStore
from bot.stores.threads import ThreadInfo, ThreadRegistry, dedupe_key
from graphs import conversation
from graphs.background import Notice, ScheduledRun
from graphs.home import HomeAction
from graphs.registry import WORKFLOWS, command_for
from graphs.workflow import CommandCall, CommandError
from tools.i18n import DEFAULT_LANGUAGE, N_, _, choice_of, language_for_locale, using
from tools.i18n.languages import LANGUAGES, Language

log = logging.getLogger(__name__)

NOT_OFFERED = N_("That button is not on your home any more (or never was), so nothing was done.")
FROM_HOME = N_("from {user}'s App Home, no reason typed")  # what a home button that asks says when left empty


class Core:
    def __init__(self, runner: Runner, surface: Surface, queue: JobQueue, policy: Policy, scope: str,
                 claim_seconds: float = CLAIM_SECONDS, language: Language = DEFAULT_LANGUAGE) -> None:
        """`scope`: the thread-id prefix of the surface's threads (`slack-`, `console-`); `language`: the
        workspace's (QUANTDESK_LANGUAGE)."""
        engine = queue.engine
        self.runner, self.surface, self.queue, self.policy, self.scope = runner, surface, queue, policy, scope
        self.threads = ThreadRegistry(engine)
        self.languages = LanguageStore(engine)
        self.language: Language = language
        self.decisions = DecisionStore(engine, claim_seconds)
        self.posts = PostStore(engine, claim_seconds)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"  # who claims decisions and posts to work on them
        self.outbox = Outbox(surface, self.posts, self.threads, runner.context.artifacts, self.owner, scope)
        self.intake = Intake(self)
        self.waiting = Waiting(self)
        self.decider = Decider(self)
        self.presenter = Presenter(self)
        self.homes = (Homes(runner, self.open_questions, self.decisions, policy, surface,
                            HomeStore(engine, claim_seconds), self.threads, self.owner, self.language_of)
                      if isinstance(surface, HomeSurface) else None)

    # --- languages ---------------------------------------------------------------------------------------------

    def language_of(self, user: str) -> Language:
        """The language `user` is answered in: their own choice, else their locale where the table maps it
        (tools/i18n/languages.py LOCALES), else the workspace's."""
        try:
            chosen = self.languages.chosen(user) if user else None
        except SQLAlchemyError:  # the database is down: answer in the locale's or the workspace's language
            log.warning("the language of %s could not be read", user, exc_info=True)
            chosen = None
        if chosen is not None:
            return chosen
        return language_for_locale(self.surface.locale(user) if user else None, self.language)

    def choose_language(self, user: str, word: str) -> str:
        """`lang zh|en`: store `user`'s choice; the answer, in the chosen language (or the usage, in theirs)."""
        language = choice_of(word)
        if language is None:
            with using(self.language_of(user)):
                return _("Usage: `lang zh` (中文) or `lang en` (English). You speak {language} here now.").format(
                    language=self.language_of(user))
        self.languages.choose(user, language)
        with using(language):
            return _("From now on I answer you in English. A thread keeps the language of the person who started "
                     "it.")

    def thread_language(self, thread_id: str) -> Language | None:
        info = self.threads.get(thread_id)
        return info.language if info is not None and info.language in LANGUAGES else None

    def notice_text(self, notice: Notice) -> str:
        """A background notice's text in its thread's language."""
        with using(self.thread_language(notice.thread_id)):
            return notice.said()

    # --- intake -------------------------------------------------------------------------------------------------

    def is_known_thread(self, place: Place) -> bool:
        return self.threads.get(place.thread_id) is not None

    def start_scheduled(self, run: ScheduledRun, again: bool) -> None:
        """Root a background run's thread and queue its structured request; a failure raises, so the next pass
        starts it again (`again`: the surface first looks for a root an earlier attempt posted). The root is in
        the owner's language, the thread's."""
        with using(self.language_of(run.owner)):
            title = run.titled()
        try:
            place = self.surface.open_thread(ThreadStart(run.channel, title, run.key, run.since, [run.owner]), again)
        except Refused as exc:
            raise RuntimeError(f"could not root the thread of {run.key}: {exc.reason}") from exc
        place = Place(place.team, place.channel, place.thread_ts, run.owner)
        self.queue.submit_text(Message(dedupe_key(f"run:{run.key}"), place.team, place.channel, place.thread_ts,
                                       run.owner, title, request=run.request))

    # --- jobs (JobHandler: the queue's workers call these, one job of a thread at a time) ------------------------

    def run_text(self, message: Message) -> None:
        """Start a run, or take the message as the answer to the thread's pending question. A message whose job
        is retried after a crash and that the thread already took in goes on with (or shows) the run it started,
        and is never read again as an answer or a second request."""
        place = Place(message.team, message.channel, message.thread_ts, message.user)
        taken = self.decisions.of_message(message.key)
        if taken is not None:  # a reply recorded as a decision before a crash: its apply job does the rest
            self.queue.submit_decision(taken.interrupt_id, taken.thread_id)
            return
        known = self.threads.get(place.thread_id)
        language = known.language if known is not None else self.language_of(place.user)  # a new thread: its starter's
        info, _created = self.threads.open(place.team, place.channel, place.thread_ts, place.user, language=language)
        with using(info.language):
            self._take_text(message, place, info)

    def _take_text(self, message: Message, place: Place, info: ThreadInfo) -> None:
        message_id = f"{self.scope.rstrip('-')}:{message.key}"  # its id in the thread's state
        pending = self.runner.pending(info.thread_id)
        if message.request is not None or not pending or self.runner.took_in(info.thread_id, message_id):
            status = self.presenter.status(place, message.key)
            outcome = self.runner.start(info.thread_id, message.text, self.presenter.progress(place, status),
                                        user=place.user, account=channel_account(place.channel),
                                        request=message.request, message_id=message_id, language=info.language,
                                        prose=self.presenter.prose(place, message_id))
            if outcome.retryable and not last_attempt():  # the job runs again and goes on from the checkpoint
                self.presenter.finish_status(place, status, _(":hourglass_flowing_sand: interrupted (the database "
                                                              "or network failed); trying again…"))
                raise RetryLater(outcome.text)
            self.presenter.show(place, info, outcome, status)
            if message.request is not None:
                self._after_background_run(info.thread_id, message.request, outcome)
            return
        # a command was answered where it was typed (Intake.take); a new request is not an answer: its own thread
        if isinstance(conversation.read(message.text, pending[0].card.kind), conversation.Request):
            self._start_elsewhere(place, message.text)
            return
        interrupt = next((p for p in pending if kind_of(p.card).thread_reply_decides), None)
        self.waiting.hand_over(place, message.key, f"decision:{interrupt.id}" if interrupt else None)
        with using(self.language_of(place.user)):  # what only they see is in their own language
            if interrupt is None:
                self.surface.tell(place, _(kind_of(pending[0].card).reply_hint))
                return
            decision = Answer(message.text)
            verdict = self.decider.decide(info.thread_id, interrupt.id, place.user, decision, "thread reply",
                                          message.key)
            if not (verdict.allowed or verdict.already):  # a button click answered it first: nothing to say
                self.surface.tell(place, verdict.reason)
        if verdict.allowed:
            self.decider.confirm(verdict, interrupt.id, place.user, decision)

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        """The apply job of an accepted decision (see Decider.apply_decision)."""
        self.decider.apply_decision(interrupt_id, thread_id)

    def _after_background_run(self, thread_id: str, request: dict[str, Any], outcome: Outcome) -> None:
        """A background run whose graph crashed never reached its own bookkeeping: its workflow's `after_failure`
        counts it (a rule's auto-pause) and hands back notices. A database or network failure is not the run's."""
        workflow = WORKFLOWS.get(str(request.get("workflow")))
        if outcome.status != "failed" or outcome.retryable or workflow is None or workflow.after_failure is None:
            return
        for notice in workflow.after_failure(self.runner.context, thread_id, request, outcome.text):
            self.outbox.notify(notice.thread_id, notice.key, self.notice_text(notice), notice.users)

    def home_action(self, user: str, panel: str, action: HomeAction, typed: str = "") -> str:
        """A button on a person's home: honoured only if their panel, built again now, offers it (a rule's owner or
        an admin); a command is run as them, a request starts in a new thread of its channel. `typed`: the text the
        person wrote beside a button that asks for it (a reason), appended to its words; left empty, the words say
        it came from the home. Returns what to say, in their language."""
        with using(self.language_of(user)):
            return self._home_action(user, panel, action, typed.strip())

    def _home_action(self, user: str, panel: str, action: HomeAction, typed: str) -> str:
        offered = self.homes.offered(user, panel, action) if self.homes is not None else None
        if offered is None:
            return _(NOT_OFFERED)
        if offered.asks:
            action = replace(action, words=(*action.words, *(typed or _(FROM_HOME).format(user=user)).split()))
        text = " ".join(action.words)
        if action.channel:
            try:
                root = self.surface.open_thread(ThreadStart(action.channel, _("{user} asked: `{text}`").format(
                    user=user, text=text), "", users=[user]), again=False)
            except Refused as exc:
                return _("I could not start `{text}` in its channel ({reason}).").format(text=text, reason=exc.reason)
            self.queue.submit_text(Message(f"home:{root.channel}:{root.thread_ts}", root.team, root.channel,
                                           root.thread_ts, user, text))
            return _("Started `{text}` in a new thread of its channel.").format(text=text)
        found = command_for(" ".join(_quoted(word) for word in action.words))
        if found is None:
            return _(NOT_OFFERED)
        command, args = found
        try:
            view = command.run(self.command_call(args, user, channel_account(action.channel)))
        except (CommandError, ValueError) as exc:
            return str(exc)
        return view.summary

    def _start_elsewhere(self, place: Place, text: str) -> None:
        """A complete new request typed into a thread that waits on a question: it starts in a new thread, and
        the old thread is told so; its question stays open."""
        try:
            root = self.surface.open_thread(ThreadStart(place.channel, _("{user} asked: `{text}`").format(
                user=place.user, text=text), "", users=[place.user]), again=False)
        except Refused as exc:
            log.warning("could not start a new thread: %s", exc.reason)
            return
        self.outbox.say(place, _("That looks like a new request, so I started it in its own thread. The question "
                                 "here is still open (reply `cancel` to drop it)."))
        self.queue.submit_text(Message(f"new:{root.channel}:{root.thread_ts}", root.team, root.channel,
                                       root.thread_ts, place.user, text))

    def command_call(self, args: list[str], user: str | None, account: str, **hooks: Any) -> CommandCall:
        """A command as this core hands it over: with the hooks that close open cards through the decision path and
        show a posted result again with what a command added to it."""
        hooks.setdefault("close_cards", lambda action, reason: len(self.decider.close_cards(action, reason, user)))
        hooks.setdefault("amend_result", self.outbox.amend)
        return CommandCall(self.runner.context, args, user, account, **hooks)

    def open_questions(self, everywhere: bool = False) -> Iterator[tuple[ThreadInfo, Pending]]:
        """The open questions of this surface's waiting threads, or of every surface's sharing the database
        (`everywhere`), oldest thread first; the checkpoint is the truth. A thread paused on what is no card is
        left out (logged): nothing is shown or decided on it."""
        for info in self.threads.waiting("" if everywhere else self.scope):
            try:
                pending = self.runner.pending(info.thread_id)
            except Malformed as exc:
                log.error("thread %s waits on an interrupt that is no card: %s", info.thread_id, exc)
                continue
            for question in pending:
                yield info, question
    # --- what the background service calls -----------------------------------------------------------------------

    def reapply(self, interrupt_id: str, thread_id: str) -> None:
        """A decision found due: queue it like any other job of its thread."""
        self.queue.submit_decision(interrupt_id, thread_id)

    def repost(self, key: str) -> None:
        post = self.posts.get(key)
        if post is not None and post.kind in WAITING_POSTS:
            if not post.complete and self.posts.claim(key, self.owner):
                self.waiting.repost(post)
            return
        self.outbox.repost(key, self.runner.pending)  # in the thread's language (the outbox reads it)

    def notify(self, thread_id: str, key: str, text: str, users: tuple[str, ...] = ()) -> None:
        self.outbox.notify(thread_id, key, text, users)
        if self.homes is not None:
            self.presenter.home_changed(self.threads.get(thread_id), *users)


def _quoted(word: str) -> str:
    """A home button's word as one word of a command line (a reason with spaces stays one)."""
    return f'"{word}"' if any(c.isspace() for c in word) else word


def channel_account(channel: str) -> str:
    """The paper account a channel trades in unless a request names another: one per channel (the console's
    channel is `console`)."""
    return channel
