"""The core every surface shares: take in a message, record a decision, apply it, show the outcome.

It holds the runner, the job queue, the thread registry, the decision and post stores and the permission policy,
and reaches people only through its surface (bot/core/surface.py). Every human decision takes one path, whatever
it came from (a button, a form, a thread reply, a console line): `decide` writes its row, `confirm` shows it and
queues the apply job, and `apply_decision` (that job) resumes the run once."""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import socket
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

from bot.core.home import Homes
from bot.core.intake import Intake
from bot.core.kinds import kind_of
from bot.core.outbox import DECIDED_POST, Outbox, pending_entry, place_of
from bot.core.policy import ALREADY_HANDLED, Policy
from bot.core.surface import (
    Answered,
    Decided,
    HomeSurface,
    Place,
    Refused,
    RetryOffer,
    Status,
    StreamSurface,
    Surface,
    ThreadStart,
)
from bot.jobs import JobQueue, Message
from bot.runner import INFRASTRUCTURE_ERRORS, Outcome, ProseSink, Runner
from bot.stores.decisions import CLAIM_SECONDS, MAX_ATTEMPTS, DecisionStore
from bot.stores.homes import HomeStore
from bot.stores.languages import LanguageStore
from bot.stores.posts import PostStore
from bot.stores.threads import AuditLog, ThreadInfo, ThreadRegistry, dedupe_key
from graphs import conversation
from graphs.background import Notice, ScheduledRun
from graphs.home import HomeAction
from graphs.registry import WORKFLOWS, command_for
from graphs.workflow import CommandCall, CommandError
from tools.i18n import DEFAULT_LANGUAGE, N_, _, choice_of, language_for_locale, using
from tools.i18n.languages import Language

log = logging.getLogger(__name__)

NOT_OFFERED = N_("That button is not on your home any more (or never was), so nothing was done.")
FROM_HOME = N_("from {user}'s App Home, no reason typed")  # what a home button that asks says when left empty
SWITCH_SOURCE = "trading switch"  # the decision source of a card a switch-off closed
NOT_APPLIED_YET = N_(":warning: Your decision is recorded but could not be applied yet: {error}. I will try again "
                     "automatically; nothing is lost.")


def unrecorded(exc: BaseException) -> str:
    """What a person is told when their decision could not be checked or recorded (the database failed)."""
    return _("I could not record your decision: the database did not answer ({error}). Nothing was decided and the "
             "buttons are still there; please try again in a moment.").format(error=type(exc).__name__)


@dataclass(frozen=True)
class Verdict:
    """Whether a decision was (or may be) taken, why not, and the thread it is on (passed along, not re-read)."""

    allowed: bool
    reason: str = ""
    thread: ThreadInfo | None = None
    payload: dict[str, Any] | None = None
    already: bool = False  # refused because the pause was decided before (a click raced it): often said nothing


class Core:
    def __init__(self, runner: Runner, surface: Surface, queue: JobQueue, policy: Policy, scope: str,
                 claim_seconds: float = CLAIM_SECONDS, language: Language = DEFAULT_LANGUAGE) -> None:
        """`scope`: the thread-id prefix of the surface's threads (`slack-`, `console-`); `language`: the
        workspace's (QUANTDESK_LANGUAGE)."""
        engine = queue.engine
        self.runner, self.surface, self.queue, self.policy, self.scope = runner, surface, queue, policy, scope
        self.threads = ThreadRegistry(engine)
        self.audit = AuditLog(engine)
        self.languages = LanguageStore(engine)
        self.language: Language = language
        self.decisions = DecisionStore(engine, claim_seconds)
        self.posts = PostStore(engine, claim_seconds)
        self.owner = f"{socket.gethostname()}:{os.getpid()}"  # who claims decisions and posts to work on them
        self.outbox = Outbox(surface, self.posts, self.threads, runner.context.artifacts, self.owner, scope)
        self.intake = Intake(self)
        self.homes = (Homes(runner, self.open_questions, self.decisions, policy, surface,
                            HomeStore(engine, claim_seconds), self.threads, self.owner, self.language_of)
                      if isinstance(surface, HomeSurface) else None)

    # --- languages ---------------------------------------------------------------------------------------------

    def language_of(self, user: str) -> Language:
        """The language `user` is answered in: their own choice, else their locale where the table maps it
        (tools/i18n/languages.py LOCALES), else the workspace's."""
        chosen = self.languages.chosen(user) if user else None
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
        return info.language if info is not None else None  # type: ignore[return-value]

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

    # --- decisions ----------------------------------------------------------------------------------------------

    def may_decide(self, thread_id: str, interrupt_id: str, user: str, decision_type: str,
                   ask_policy: bool = True) -> Verdict:
        """Whether `user` may take `decision_type` on this pause now (nothing is recorded: opening a form is not a
        decision). When the database cannot be read, the answer is no, saying so. `ask_policy=False`: the caller
        checked the person's right already (a switch-off closing cards), only whether the pause is open counts."""
        try:
            info = self.threads.get(thread_id)
            if info is None:
                return Verdict(False, _("This thread is not one of mine any more."))
            if self.decisions.get(interrupt_id) is not None:
                return Verdict(False, _(ALREADY_HANDLED), info, already=True)
            payload = self.pending_value(thread_id, interrupt_id)  # the checkpoint is the truth
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not check a decision on %s: %s", thread_id, type(exc).__name__)
            return Verdict(False, unrecorded(exc))
        if payload is None:
            return Verdict(False, _("This question is no longer open: the run has moved on."), info)
        refusal = self.policy.refusal(info, payload, user, decision_type) if ask_policy else None
        return Verdict(refusal is None, refusal or "", info, payload)

    def decide(self, thread_id: str, interrupt_id: str, user: str, decision: dict[str, Any], source: str,
               message_key: str | None = None, ask_policy: bool = True) -> Verdict:
        """Check and record a decision: its durable row is written here; the first decision wins. `message_key`:
        the message it was typed in (a thread reply); `ask_policy`: see `may_decide`."""
        verdict = self.may_decide(thread_id, interrupt_id, user, str(decision.get("type")), ask_policy)
        if not verdict.allowed:
            return verdict
        try:
            if not self.decisions.accept(interrupt_id, thread_id, decision, user, source, message_key):
                return Verdict(False, _(ALREADY_HANDLED), verdict.thread, already=True)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not record a decision on %s: %s", thread_id, type(exc).__name__)
            return Verdict(False, unrecorded(exc))
        return verdict

    def confirm(self, verdict: Verdict, interrupt_id: str, user: str, decision: dict[str, Any], source: str,
                message_ref: str | None = None) -> None:
        """After `decide` wrote the row: audit it, show it on its card, and queue its application. If the database
        fails here, the background service queues it (nothing is lost)."""
        info = verdict.thread
        if info is None:
            return
        try:
            with using(info.language):  # the card is the thread's
                self._show_decision(info, interrupt_id, user, decision, source, message_ref)
            self.queue.submit_decision(interrupt_id, info.thread_id)
            self.home_changed(info, user)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("decision %s recorded, not queued yet (%s): the background service will queue it",
                        interrupt_id, type(exc).__name__)

    def _show_decision(self, info: ThreadInfo, interrupt_id: str, user: str, decision: dict[str, Any], source: str,
                       message_ref: str | None) -> None:
        kind = decision["type"]
        detail: dict[str, Any] = {"source": source}
        shown = info.pending.get(interrupt_id) or {}
        ref = message_ref or shown.get("ts")
        place = place_of(info, user)
        if kind == "respond":
            answer = str(decision.get("message") or "")
            if source == "button":
                detail["choice"] = answer
            self.audit.record(info.thread_id, user, "respond", interrupt_id, detail)
            if ref:
                self.surface.update(place, ref, Answered(shown.get("question", _("Question")), user, answer))
            return
        if kind == "reject":
            detail["reason"] = decision.get("message", "")
        edited = (decision.get("edited_action") or {}).get("args") or {}
        if kind == "edit":
            detail["edited"] = edited
        self.audit.record(info.thread_id, user, kind, interrupt_id, detail)
        if ref:
            note = detail.get("reason", "") if kind == "reject" else ""
            if kind == "edit":
                note = (_("the edited code is being dry-run and checked") if "code" in edited else
                        _("the edited values are being checked again"))
            self.surface.update(place, ref, Decided(shown.get("question") or _("Code review"), user, kind, note))

    def pending_value(self, thread_id: str, interrupt_id: str) -> dict[str, Any] | None:
        return next((p["value"] for p in self.runner.pending(thread_id) if p["id"] == interrupt_id), None)

    def retry(self, interrupt_id: str, user: str) -> str:
        """A human pressed Retry on a failed decision: apply it again (the requester or an approver only)."""
        record = self.decisions.get(interrupt_id)
        info = self.threads.get(record.thread_id) if record else None
        if record is None or info is None or not self.policy.authorised(info, user):
            return _("Only the person who started this request or a configured approver can retry it.")
        if not self.decisions.retry(interrupt_id):
            return _(ALREADY_HANDLED)
        self.queue.submit_decision(interrupt_id, record.thread_id)
        return _("Retrying the decision.")

    def stop(self, thread_id: str, user: str) -> str:
        """A human asked to stop the thread's run: it stops at its next step."""
        info = self.threads.get(thread_id)
        if info is None or not self.policy.authorised(info, user):
            return _("Only the person who started this request or a configured approver can stop it.")
        if self.queue.abort(thread_id):
            return _("Stopping after the current step.")
        return _("Nothing is running in this thread any more.")

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
            status = self._status(place)
            outcome = self.runner.start(info.thread_id, message.text, self._progress(place, status),
                                        user=place.user, account=channel_account(place.channel),
                                        request=message.request, message_id=message_id, language=info.language,
                                        prose=self._prose(place, message_id))
            self._show(place, info, outcome, status)
            if message.request is not None:
                self._after_background_run(info.thread_id, message.request, outcome)
            return
        # a command was answered where it was typed (Intake.take); a new request is not an answer: its own thread
        if isinstance(conversation.read(message.text, kind_of(pending[0]["value"]).name), conversation.Request):
            self._start_elsewhere(place, message.text)
            return
        interrupt = next((p for p in pending if kind_of(p["value"]).thread_reply_decides), None)
        with using(self.language_of(place.user)):  # what only they see is in their own language
            if interrupt is None:
                self.surface.tell(place, _(kind_of(pending[0]["value"]).reply_hint))
                return
            decision = {"type": "respond", "message": message.text}
            verdict = self.decide(info.thread_id, interrupt["id"], place.user, decision, "thread reply", message.key)
            if not (verdict.allowed or verdict.already):  # a button click answered it first: nothing to say
                self.surface.tell(place, verdict.reason)
        if verdict.allowed:
            self.confirm(verdict, interrupt["id"], place.user, decision, "thread reply")

    def _after_background_run(self, thread_id: str, request: dict[str, Any], outcome: Outcome) -> None:
        """A background run whose graph crashed never reached its own bookkeeping: its workflow's `after_failure`
        counts it (a rule's auto-pause) and hands back notices. A database or network failure is not the run's."""
        workflow = WORKFLOWS.get(str(request.get("workflow")))
        if outcome.status != "failed" or outcome.retryable or workflow is None or workflow.after_failure is None:
            return
        for notice in workflow.after_failure(self.runner.context, thread_id, request, outcome.text):
            self.outbox.notify(notice.thread_id, notice.key, self.notice_text(notice), notice.users)

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        """Apply an accepted decision: resume the graph once, in the thread's language. The checkpoint is the
        truth: when the interrupt is no longer pending the decision was applied before (a crash came after), so it
        is only marked applied and the thread shown where it stands. Infrastructure errors are retried later; graph
        errors are final."""
        with using(self.thread_language(thread_id)):
            self._apply_decision(interrupt_id, thread_id)

    def _apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        try:
            self._apply(interrupt_id)
        except INFRASTRUCTURE_ERRORS as exc:
            error = _("the database or network failed ({error})").format(error=type(exc).__name__)
            log.warning("decision %s not applied: %s", interrupt_id, error)
            with contextlib.suppress(*INFRASTRUCTURE_ERRORS):  # else the row stays due for the background service
                self.decisions.mark_retry(interrupt_id, error)
            with contextlib.suppress(*INFRASTRUCTURE_ERRORS):
                info = self.threads.get(thread_id)
                if info is not None:
                    self.outbox.say(place_of(info), _(NOT_APPLIED_YET).format(error=error))

    def _apply(self, interrupt_id: str) -> None:
        record = self.decisions.get(interrupt_id)
        if record is None or record.applied or record.outcome or not self.decisions.claim(interrupt_id, self.owner):
            return
        info = self.threads.get(record.thread_id)
        if info is None:
            self.decisions.mark_failed(interrupt_id, "the thread is not in the registry")
            return
        place = place_of(info, record.decided_by or "")
        try:
            still_pending = interrupt_id in {p["id"] for p in self.runner.pending(record.thread_id)}
        except INFRASTRUCTURE_ERRORS as exc:
            self._retry_later(place, interrupt_id, _("the database failed ({error})").format(error=type(exc).__name__))
            return
        if not still_pending:
            self._show(place, info, self.runner.current(record.thread_id), None)
            self.decisions.mark_applied(interrupt_id)
            return
        status = self._status(place)
        outcome = self.runner.resume(record.thread_id, interrupt_id, record.decision, record.decided_by,
                                     self._progress(place, status), decided_at=record.decided_at,
                                     language=info.language, prose=self._prose(place, interrupt_id))
        if outcome.status == "failed" and outcome.retryable:
            self._finish_status(place, status, _(":warning: not applied yet"))
            self._retry_later(place, interrupt_id, outcome.text)
            return
        if outcome.status == "failed":
            self.decisions.mark_failed(interrupt_id, outcome.text)
            self._finish_status(place, status, _(":x: stopped"))
            self._post_retry_offer(place, interrupt_id, outcome.text)
            self.threads.update(info.thread_id, status="failed")
            return
        self._show(place, info, outcome, status)
        self.decisions.mark_applied(interrupt_id)

    def _retry_later(self, place: Place, interrupt_id: str, error: str) -> None:
        attempts = self.decisions.mark_retry(interrupt_id, error)
        if attempts >= MAX_ATTEMPTS:
            self._post_retry_offer(place, interrupt_id, _("{error}; gave up after {attempts} attempts").format(
                error=error, attempts=attempts))
            return
        self.outbox.say(place, _(NOT_APPLIED_YET).format(error=error))

    def _post_retry_offer(self, place: Place, interrupt_id: str, error: str) -> None:
        try:
            self.surface.post(place, RetryOffer(interrupt_id, error))
        except Refused as exc:
            log.warning("could not offer a retry: %s", exc.reason)

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

    # --- showing outcomes ---------------------------------------------------------------------------------------

    def _status(self, place: Place) -> str | None:
        try:
            return self.surface.post(place, Status(place.thread_id, _(":hourglass_flowing_sand: working…")))
        except Refused as exc:
            log.warning("could not post a status message: %s", exc.reason)
            return None

    def _progress(self, place: Place, status_ref: str | None) -> Callable[[str, str | None], None]:
        done: list[str] = []

        def update(label: str, detail: str | None) -> None:
            step = f"{label} ({detail})" if detail else label
            if done and done[-1].split(" (")[0] == label:  # the same step again with new detail
                done[-1] = step
            else:
                done.append(step)
            if status_ref:
                self.surface.update(place, status_ref, Status(place.thread_id, ":hourglass_flowing_sand: "
                                                              + " → ".join(done) + " …", step=step))

        return update

    def _prose(self, place: Place, run: str) -> ProseSink | None:
        """On a surface that streams, each piece of long prose a run finishes is streamed into its thread once
        (keyed by the run, the message or decision that started it, and the prose's own key)."""
        if not isinstance(self.surface, StreamSurface):
            return None

        def stream(key: str, title: str, text: str) -> None:
            digest = hashlib.sha256(f"{run}:{key}".encode()).hexdigest()[:24]
            self.outbox.stream(place, f"prose:{place.thread_id}:{digest}", title, text)

        return stream

    def _finish_status(self, place: Place, status_ref: str | None, text: str) -> None:
        if status_ref:  # the Stop button goes with the run
            self.surface.update(place, status_ref, Status(place.thread_id, text, running=False))

    def _show(self, place: Place, info: ThreadInfo, outcome: Outcome, status_ref: str | None) -> None:
        """Show an outcome in the thread: every question and result is a post row first (see Outbox)."""
        if outcome.workflow and outcome.workflow != info.workflow:
            self.threads.update(info.thread_id, workflow=outcome.workflow)
        if outcome.status == "waiting":
            self._finish_status(place, status_ref, _(":speech_balloon: waiting for your answer"))
            pending: dict[str, Any] = {i["id"]: pending_entry(i["value"]) for i in outcome.interrupts}
            self.threads.update(info.thread_id, status="waiting", pending=pending)
            shown = self.threads.get(info.thread_id) or info
            total = len(outcome.interrupts)
            for index, interrupt in enumerate(outcome.interrupts):
                pending[interrupt["id"]]["ts"] = self.outbox.question(place, shown, interrupt, (index + 1, total),
                                                                      self.runner.pending)
            self.threads.update(info.thread_id, pending=pending)
            self.home_changed(info, place.user)
            return
        if outcome.status == "failed":
            self._finish_status(place, status_ref, _(":x: stopped"))
            self.outbox.say(place, outcome.text, failure=True)
            self.threads.update(info.thread_id, status="failed", pending={})
            self.home_changed(info, place.user)
            return
        self._finish_status(place, status_ref, _(":white_check_mark: done"))
        body = {"workflow": outcome.workflow, "result": outcome.result, "text": outcome.text}
        self.outbox.result(place, f"result:{info.thread_id}:{outcome.checkpoint}", body)
        self.threads.update(info.thread_id, status="done", pending={})
        self.home_changed(info, place.user)

    def command_call(self, args: list[str], user: str | None, account: str, **hooks: Any) -> CommandCall:
        """A command as this core hands it over: with the hook that closes open cards through the decision path."""
        hooks.setdefault("close_cards", lambda action, reason: len(self.close_cards(action, reason, user)))
        return CommandCall(self.runner.context, args, user, account, **hooks)

    def open_questions(self, everywhere: bool = False) -> Iterator[tuple[ThreadInfo, dict[str, Any]]]:
        """The open questions ({"id", "value"}) of this surface's waiting threads, or of every surface's sharing the
        database (`everywhere`), oldest thread first; the checkpoint is the truth."""
        for info in self.threads.waiting("" if everywhere else self.scope):
            for pending in self.runner.pending(info.thread_id):
                yield info, pending

    def close_cards(self, action: str, reason: str, user: str | None) -> list[str]:
        """Reject, as `user` and with `reason`, every open card of `action` on every surface sharing the database:
        each one a decision row, then its apply, like a click (its card says who and why). A card of this surface's
        is confirmed as a click is; another surface's run is applied here too, so its checkpoint ends now, and that
        surface shows the closure when its background service posts it. Returns the threads closed."""
        if not user:
            return []
        closed: list[str] = []
        decision = {"type": "reject", "message": reason}
        for info, pending in list(self.open_questions(everywhere=True)):
            if pending["value"].get("action") != action:
                continue
            # whoever may switch trading off (the command checked: a trader or an admin) closes every card it ends
            verdict = self.decide(info.thread_id, pending["id"], user, decision, SWITCH_SOURCE, ask_policy=False)
            if not verdict.allowed:
                continue
            if info.thread_id.startswith(self.scope):
                self.confirm(verdict, pending["id"], user, decision, SWITCH_SOURCE)
            else:
                self._close_elsewhere(info, pending["id"], user, reason)
            closed.append(info.thread_id)
        return closed

    def _close_elsewhere(self, info: ThreadInfo, interrupt_id: str, user: str, reason: str) -> None:
        """Another surface's card, rejected by a switch-off here (its row written): audited, its card's change and
        the run's outcome left as post rows for that surface, the run applied now. A run that cannot be applied
        now stays due for that surface's background service (nothing is lost)."""
        try:
            with using(info.language):
                self.audit.record(info.thread_id, user, "reject", interrupt_id, {"source": SWITCH_SOURCE,
                                                                                 "reason": reason})
                shown = info.pending.get(interrupt_id) or {}
                if shown.get("ts"):
                    self.posts.record(f"decided:{interrupt_id}", info.thread_id, DECIDED_POST, {
                        "ref": shown["ts"], "title": shown.get("question") or _("Code review"), "user": user,
                        "decision": "reject", "note": reason})
                self._apply_elsewhere(interrupt_id, info)
            self._homes_elsewhere(info, user)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("decision %s recorded, not applied yet (%s): its surface applies it", interrupt_id,
                        type(exc).__name__)

    def _apply_elsewhere(self, interrupt_id: str, info: ThreadInfo) -> None:
        record = self.decisions.get(interrupt_id)
        if record is None or not self.decisions.claim(interrupt_id, self.owner):
            return  # that surface is applying it already
        outcome = self.runner.resume(info.thread_id, interrupt_id, record.decision, record.decided_by,
                                     decided_at=record.decided_at, language=info.language)
        if outcome.status == "failed" and outcome.retryable:
            self.decisions.mark_retry(interrupt_id, outcome.text)
            return
        if outcome.status == "failed":
            self.decisions.mark_failed(interrupt_id, outcome.text)
            self.threads.update(info.thread_id, status="failed", pending={})
            self.outbox.notify(info.thread_id, f"failed:{interrupt_id}", outcome.text)
        elif outcome.status == "waiting":
            self.threads.update(info.thread_id, status="waiting",
                                pending={i["id"]: pending_entry(i["value"]) for i in outcome.interrupts})
            for question in outcome.interrupts:
                self.posts.record(question["id"], info.thread_id, "interrupt")
        else:
            self.posts.record(f"result:{info.thread_id}:{outcome.checkpoint}", info.thread_id, "result",
                              {"workflow": outcome.workflow, "result": outcome.result, "text": outcome.text})
            self.threads.update(info.thread_id, status="done", pending={})
        self.decisions.mark_applied(interrupt_id)

    def _homes_elsewhere(self, info: ThreadInfo, user: str) -> None:
        """The homes another surface's thread concerns are due again: that surface's background service
        publishes them."""
        people = {user, info.user_id or ""} | set(self.policy.approvers) | set(self.policy.all_traders())
        HomeStore(self.queue.engine).changed(sorted(p for p in people if p))

    def home_changed(self, info: ThreadInfo | None, *users: str | None) -> None:
        """A thread changed (a card waits, was decided or went, a result or a fill came): the homes it concerns
        are published again (on a surface that has homes)."""
        if self.homes is not None:
            self.homes.changed(self.homes.concerned(info, *users))

    # --- what the background service calls -----------------------------------------------------------------------

    def reapply(self, interrupt_id: str, thread_id: str) -> None:
        """A decision found due: queue it like any other job of its thread."""
        self.queue.submit_decision(interrupt_id, thread_id)

    def repost(self, key: str) -> None:
        self.outbox.repost(key, self.runner.pending)  # in the thread's language (the outbox reads it)

    def notify(self, thread_id: str, key: str, text: str, users: tuple[str, ...] = ()) -> None:
        self.outbox.notify(thread_id, key, text, users)
        if self.homes is not None:
            self.home_changed(self.threads.get(thread_id), *users)


def _quoted(word: str) -> str:
    """A home button's word as one word of a command line (a reason with spaces stays one)."""
    return f'"{word}"' if any(c.isspace() for c in word) else word


def channel_account(channel: str) -> str:
    """The paper account a channel trades in unless a request names another: one per channel (the console's
    channel is `console`)."""
    return channel
