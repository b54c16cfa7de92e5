"""One path for every human decision, whatever it came from (a button, a form, a thread reply, a console line):
`decide` checks the policy and writes its row (the first decision wins), `confirm` audits it, shows it on its card
and queues the apply job, and `apply_decision` (that job) resumes the run once. A trading switch-off closes every
open card of its action on every surface the same way (`close_cards`)."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.cards import Answer, ApprovalCard, Card, Decision, Edit, Malformed, Reject, decision_of
from bot.core.outbox import DECIDED_POST, pending_entry, place_of
from bot.core.policy import ALREADY_HANDLED
from bot.core.surface import Answered, Decided
from bot.jobs.failures import INFRASTRUCTURE_ERRORS
from bot.stores.decisions import MAX_ATTEMPTS
from bot.stores.decisions import Decision as DecisionRecord
from bot.stores.homes import HomeStore
from bot.stores.threads import ThreadInfo
from graphs.context import admins_of
from tools.i18n import N_, _, using

if TYPE_CHECKING:
    from bot.core.core import Core
    from bot.core.surface import Place

log = logging.getLogger(__name__)

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
    card: Card | None = None
    already: bool = False  # refused because the pause was decided before (a click raced it): often said nothing


class Decider:
    def __init__(self, core: Core) -> None:
        self.core = core

    def may_decide(self, thread_id: str, interrupt_id: str, user: str, decision_type: str,
                   ask_policy: bool = True) -> Verdict:
        """Whether `user` may take `decision_type` on this pause now (nothing is recorded: opening a form is not a
        decision). When the database cannot be read, the answer is no, saying so. `ask_policy=False`: the caller
        checked the person's right already (a switch-off closing cards), only whether the pause is open counts."""
        try:
            info = self.core.threads.get(thread_id)
            if info is None:
                return Verdict(False, _("This thread is not one of mine any more."))
            if self.core.decisions.get(interrupt_id) is not None:
                return Verdict(False, _(ALREADY_HANDLED), info, already=True)
            card = self.pending_value(thread_id, interrupt_id)  # the checkpoint is the truth
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not check a decision on %s: %s", thread_id, type(exc).__name__)
            return Verdict(False, unrecorded(exc))
        except Malformed as exc:  # fail closed: nothing is decided on what cannot be read
            log.error("thread %s waits on an interrupt that is no card: %s", thread_id, exc)
            return Verdict(False, _("This question cannot be read ({error}), so nothing can be decided on it.").format(
                error=exc), info)
        if card is None:
            return Verdict(False, _("This question is no longer open: the run has moved on."), info)
        refusal = self.core.policy.refusal(info, card, user, decision_type) if ask_policy else None
        return Verdict(refusal is None, refusal or "", info, card)

    def decide(self, thread_id: str, interrupt_id: str, user: str, decision: Decision, source: str,
               message_key: str | None = None, ask_policy: bool = True) -> Verdict:
        """Check and record a decision: its durable row (the HITL dict) is written here; the first decision wins.
        `message_key`: the message it was typed in (a thread reply); `ask_policy`: see `may_decide`."""
        verdict = self.may_decide(thread_id, interrupt_id, user, decision.type, ask_policy)
        if not verdict.allowed:
            return verdict
        try:
            if not self.core.decisions.accept(interrupt_id, thread_id, decision.hitl(), user, source, message_key):
                return Verdict(False, _(ALREADY_HANDLED), verdict.thread, already=True)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not record a decision on %s: %s", thread_id, type(exc).__name__)
            return Verdict(False, unrecorded(exc))
        return verdict

    def confirm(self, verdict: Verdict, interrupt_id: str, user: str, decision: Decision,
                message_ref: str | None = None) -> None:
        """After `decide` wrote the row and its chained audit entry: show it on its card, and queue its
        application. If the database fails here, the background service queues it (nothing is lost)."""
        info = verdict.thread
        if info is None:
            return
        try:
            with using(info.language):  # the card is the thread's
                self._show_decision(info, interrupt_id, user, decision, message_ref)
            self.core.queue.submit_decision(interrupt_id, info.thread_id)
            self.core.presenter.home_changed(info, user)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("decision %s recorded, not queued yet (%s): the background service will queue it",
                        interrupt_id, type(exc).__name__)

    def reshow(self, record: DecisionRecord) -> None:
        """A decision found due before its first attempt, shown on its card as its confirm shows it: the process that
        decided it may have died before the confirm did (a Feishu card would stay "processing", a Slack card keep
        its buttons). Showing it twice shows the same."""
        info = self.core.threads.get(record.thread_id)
        if info is None or record.decided_by is None:
            return
        try:
            with using(info.language):
                self._show_decision(info, record.interrupt_id, record.decided_by, decision_of(record.decision), None)
        except Malformed:
            log.warning("decision %s is no decision a card shows", record.interrupt_id)

    def _show_decision(self, info: ThreadInfo, interrupt_id: str, user: str, decision: Decision,
                       message_ref: str | None) -> None:
        shown = info.pending.get(interrupt_id) or {}
        ref = message_ref or shown.get("ts")
        if not ref:
            return
        place = place_of(info, user)
        if isinstance(decision, Answer):
            self.core.surface.update(place, ref, Answered(shown.get("question", _("Question")), user,
                                                          decision.message))
            return
        note = decision.message if isinstance(decision, Reject) else ""
        if isinstance(decision, Edit):
            note = (_("the edited code is being dry-run and checked") if "code" in decision.args else
                    _("the edited values are being checked again"))
        self.core.surface.update(place, ref, Decided(shown.get("question") or _("Code review"), user, decision.type,
                                                     note))

    def pending_value(self, thread_id: str, interrupt_id: str) -> Card | None:
        """The card of an open pause, or None. Raises Malformed when the pause is no card."""
        return next((p.card for p in self.core.runner.pending(thread_id) if p.id == interrupt_id), None)

    def retry(self, interrupt_id: str, user: str) -> str:
        """A human pressed Retry on a failed decision: apply it again (the requester or an approver only)."""
        record = self.core.decisions.get(interrupt_id)
        info = self.core.threads.get(record.thread_id) if record else None
        if record is None or info is None or not self.core.policy.authorised(info, user):
            return _("Only the person who started this request or a configured approver can retry it.")
        if not self.core.decisions.retry(interrupt_id):
            return _(ALREADY_HANDLED)
        self.core.queue.submit_decision(interrupt_id, record.thread_id)
        return _("Retrying the decision.")

    def stop(self, thread_id: str, user: str) -> str:
        """A human asked to stop the thread's run: it stops at its next step."""
        info = self.core.threads.get(thread_id)
        if info is None or not self.core.policy.authorised(info, user):
            return _("Only the person who started this request or a configured approver can stop it.")
        if self.core.queue.abort(thread_id):
            return _("Stopping after the current step.")
        return _("Nothing is running in this thread any more.")

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        """Apply an accepted decision: resume the graph once, in the thread's language. The checkpoint is the
        truth: when the interrupt is no longer pending the decision was applied before (a crash came after), so it
        is only marked applied and the thread shown where it stands. Infrastructure errors are retried later; graph
        errors are final."""
        with using(self.core.thread_language(thread_id)):
            self._apply_decision(interrupt_id, thread_id)

    def _apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        try:
            self._apply(interrupt_id)
        except INFRASTRUCTURE_ERRORS as exc:
            error = _("the database or network failed ({error})").format(error=type(exc).__name__)
            log.warning("decision %s not applied: %s", interrupt_id, error)
            with contextlib.suppress(*INFRASTRUCTURE_ERRORS):  # else the row stays due for the background service
                self.core.decisions.mark_retry(interrupt_id, error)
            with contextlib.suppress(*INFRASTRUCTURE_ERRORS):
                info = self.core.threads.get(thread_id)
                if info is not None:
                    self.core.outbox.say(place_of(info), _(NOT_APPLIED_YET).format(error=error))

    def _apply(self, interrupt_id: str) -> None:
        record = self.core.decisions.get(interrupt_id)
        if record is None or record.applied or record.outcome or not self.core.decisions.claim(interrupt_id,
                                                                                               self.core.owner):
            return
        info = self.core.threads.get(record.thread_id)
        if info is None:
            self.core.decisions.mark_failed(interrupt_id, "the thread is not in the registry")
            return
        if self._refused_unproven(info, record):
            return
        place = place_of(info, record.decided_by or "")
        try:
            still_pending = interrupt_id in {p.id for p in self.core.runner.pending(record.thread_id)}
        except INFRASTRUCTURE_ERRORS as exc:
            self._retry_later(place, interrupt_id, _("the database failed ({error})").format(error=type(exc).__name__))
            return
        if not still_pending:
            self.core.presenter.show(place, info, self.core.runner.current(record.thread_id), None)
            self.core.decisions.mark_applied(interrupt_id)
            return
        status = self.core.presenter.status(place, f"decision:{interrupt_id}")
        outcome = self.core.runner.resume(record.thread_id, interrupt_id, record.decision, record.decided_by,
                                     self.core.presenter.progress(place, status), decided_at=record.decided_at,
                                     language=info.language, prose=self.core.presenter.prose(place, interrupt_id))
        if outcome.status == "failed" and outcome.retryable:
            self.core.presenter.finish_status(place, status, _(":warning: not applied yet"))
            self._retry_later(place, interrupt_id, outcome.text)
            return
        if outcome.status == "failed":
            self.core.decisions.mark_failed(interrupt_id, outcome.text)
            self.core.presenter.finish_status(place, status, _(":x: stopped"))
            self.core.presenter.retry_offer(place, interrupt_id, outcome.text)
            self.core.threads.update(info.thread_id, status="failed")
            return
        self.core.presenter.show(place, info, outcome, status)
        self.core.decisions.mark_applied(interrupt_id)

    def _refused_unproven(self, info: ThreadInfo, record: DecisionRecord) -> bool:
        """A decision without its chained audit entry (a row written into `decisions` by hand) is not applied: it
        is removed, the attempt chained as evidence, the card left open for a real decision, and the thread's
        admins and approvers told. True when it was refused."""
        problem = self.core.decisions.unproven(record)
        if problem is None:
            return False
        log.error("decision %s on %s refused: %s", record.interrupt_id, record.thread_id, problem)
        self.core.decisions.refuse(record, problem)
        card = self.pending_value(record.thread_id, record.interrupt_id)
        account = card.account if isinstance(card, ApprovalCard) else ""
        told = self.core.policy.approvers | admins_of(self.core.runner.context, account)
        with using(info.language):
            text = _(":no_entry: A decision on this question ({kind}, in the name of {who}) is not in the audit "
                     "record, so it was not applied: {problem}. The question still waits for a decision made here. "
                     "{told}: find out who wrote it into the database.").format(
                kind=record.decision.get("type"), who=record.decided_by or "?", problem=problem,
                told=", ".join(sorted(told)) or _("Admins"))
        named = tuple(sorted(told | ({record.decided_by} if record.decided_by else set())))
        self.core.notify(info.thread_id, f"unproven:{record.interrupt_id}:{record.decided_at.isoformat()}", text,
                         named)
        return True

    def _retry_later(self, place: Place, interrupt_id: str, error: str) -> None:
        attempts = self.core.decisions.mark_retry(interrupt_id, error)
        if attempts >= MAX_ATTEMPTS:
            self.core.presenter.retry_offer(place, interrupt_id, _("{error}; gave up after {attempts} attempts").format(
                error=error, attempts=attempts))
            return
        self.core.outbox.say(place, _(NOT_APPLIED_YET).format(error=error))

    def close_cards(self, action: str, reason: str, user: str | None) -> list[str]:
        """Reject, as `user` and with `reason`, every open card of `action` on every surface sharing the database:
        each one a decision row, then its apply, like a click (its card says who and why). A card of this surface's
        is confirmed as a click is; another surface's run is applied here too, so its checkpoint ends now, and that
        surface shows the closure when its background service posts it. Returns the threads closed."""
        if not user:
            return []
        closed: list[str] = []
        decision = Reject(reason)
        for info, pending in list(self.core.open_questions(everywhere=True)):
            if not (isinstance(pending.card, ApprovalCard) and pending.card.action == action):
                continue
            # whoever may switch trading off (the command checked: a trader or an admin) closes every card it ends
            verdict = self.decide(info.thread_id, pending.id, user, decision, SWITCH_SOURCE, ask_policy=False)
            if not verdict.allowed:
                continue
            if info.thread_id.startswith(self.core.scope):
                self.confirm(verdict, pending.id, user, decision)
            else:
                self._close_elsewhere(info, pending.id, user, reason)
            closed.append(info.thread_id)
        return closed

    def _close_elsewhere(self, info: ThreadInfo, interrupt_id: str, user: str, reason: str) -> None:
        """Another surface's card, rejected by a switch-off here (its row written): audited, its card's change and
        the run's outcome left as post rows for that surface, the run applied now. A run that cannot be applied
        now stays due for that surface's background service (nothing is lost)."""
        try:
            with using(info.language):
                shown = info.pending.get(interrupt_id) or {}
                if shown.get("ts"):
                    self.core.posts.record(f"decided:{interrupt_id}", info.thread_id, DECIDED_POST, {
                        "ref": shown["ts"], "title": shown.get("question") or _("Code review"), "user": user,
                        "decision": "reject", "note": reason})
                self._apply_elsewhere(interrupt_id, info)
            self._homes_elsewhere(info, user)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("decision %s recorded, not applied yet (%s): its surface applies it", interrupt_id,
                        type(exc).__name__)

    def _apply_elsewhere(self, interrupt_id: str, info: ThreadInfo) -> None:
        record = self.core.decisions.get(interrupt_id)
        if record is None or not self.core.decisions.claim(interrupt_id, self.core.owner):
            return  # that surface is applying it already
        if self._refused_unproven(info, record):
            return
        outcome = self.core.runner.resume(info.thread_id, interrupt_id, record.decision, record.decided_by,
                                     decided_at=record.decided_at, language=info.language)
        if outcome.status == "failed" and outcome.retryable:
            self.core.decisions.mark_retry(interrupt_id, outcome.text)
            return
        if outcome.status == "failed":
            self.core.decisions.mark_failed(interrupt_id, outcome.text)
            self.core.threads.update(info.thread_id, status="failed", pending={})
            self.core.outbox.notify(info.thread_id, f"failed:{interrupt_id}", outcome.text)
        elif outcome.status == "waiting":
            self.core.threads.update(info.thread_id, status="waiting",
                                pending={i.id: pending_entry(i.card) for i in outcome.interrupts})
            for question in outcome.interrupts:
                self.core.posts.record(question.id, info.thread_id, "interrupt")
        else:
            self.core.posts.record(f"result:{info.thread_id}:{outcome.checkpoint}", info.thread_id, "result",
                              {"workflow": outcome.workflow, "result": outcome.result, "text": outcome.text})
            self.core.threads.update(info.thread_id, status="done", pending={})
        self.core.decisions.mark_applied(interrupt_id)

    def _homes_elsewhere(self, info: ThreadInfo, user: str) -> None:
        """The homes another surface's thread concerns are due again: that surface's background service
        publishes them."""
        people = {user, info.user_id or ""} | set(self.core.policy.approvers) | set(self.core.policy.all_traders())
        HomeStore(self.core.queue.engine).changed(sorted(p for p in people if p))
