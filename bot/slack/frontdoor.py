"""What the bot does with a Slack message, command or click once Bolt has acked it.

Work runs off the listener thread on a bounded pool; each thread's runs are serialised by a lock that
holds across processes; dedupe keys are claimed before any run starts; interrupts are rendered after the
run returns; results are posted as blocks plus uploaded files."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.decisions import CLAIM_SECONDS, MAX_ATTEMPTS, DecisionStore, PostStore
from bot.interrupt_kinds import kind_of
from bot.jobs import JobQueue, Message
from bot.registry import AuditLog, ThreadInfo, ThreadRegistry, dedupe_key, thread_id_for
from bot.runner import INFRASTRUCTURE_ERRORS, Outcome, Runner
from bot.slack import render
from graphs.clarify import is_cancel
from graphs.interrupts import TRADERS, approval_refusal
from graphs.registry import PASSES, WORKFLOWS, workflow_for
from tools.broker.paper import settle_all
from tools.broker.proposal_claims import release_proposals
from tools.rule_store import Rule, RuleError
from tools.schedule import run_due, scheduled_rule_id, trading_day_checker

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
ALREADY_HANDLED = "Already handled."
SCHEDULED_RUN = "rule:"  # the dedupe key of a scheduled rule run's message: this prefix, then its execution id
POST_EVENT = "quantdesk_post"  # message metadata event type: {"key": interrupt id or result key}
RULE_RUN_EVENT = "quantdesk_rule_run"  # a scheduled run's root message: {"execution": its execution id}
BLOCKS_REFUSED = ("invalid_blocks", "invalid_blocks_format", "msg_too_long", "too_many_blocks")
PLAIN_TEXT_NOTE = "\n(Shown as plain text: Slack refused the formatted message. Reply here, or use `quantdesk chat`.)"
PLAIN_TEXT_MAX = 39_000


class Posted(NamedTuple):
    """A message Slack accepted: its ts, and in which form (full, compact: header and buttons, or plain text)."""

    ts: str
    form: str


@dataclass(frozen=True)
class Where:
    team: str
    channel: str
    thread_ts: str
    user: str


class FrontDoor:
    def __init__(self, runner: Runner, client: WebClient, registry: ThreadRegistry, audit: AuditLog,
                 queue: JobQueue, approvers: frozenset[str],
                 claim_seconds: float = CLAIM_SECONDS, catch_up: str = "once") -> None:
        self.runner, self.client, self.queue = runner, client, queue
        self.registry, self.audit = registry, audit
        self.decisions = DecisionStore(registry.engine, claim_seconds)
        self.posts = PostStore(registry.engine, claim_seconds)
        self.approvers = approvers
        self.catch_up = catch_up
        self._team: str | None = None  # the workspace's team id, for threads the bot roots itself
        self.owner = f"{socket.gethostname()}:{os.getpid()}"  # who claims decisions to apply them

    # --- entry points (called by Bolt listeners after ack) ----------------------------------------

    def is_known_thread(self, team: str, channel: str, thread_ts: str) -> bool:
        return self.registry.find(team, channel, thread_ts) is not None

    def submit_text(self, where: Where, text: str, key: str) -> bool:
        """Record the message (its dedupe key) and queue its run behind the thread's earlier jobs. `cancel` also
        stops the thread's running job at its next step at once, without waiting its turn."""
        text = clean_text(text)
        message = Message(dedupe_key(key), where.team, where.channel, where.thread_ts, where.user, text)
        if is_cancel(text) and self.queue.abort(message.thread_id):
            log.info("stop requested for thread %s", message.thread_id)
        return self.queue.submit_text(message)

    def submit_decision(self, interrupt_id: str, where: Where) -> bool:
        """Queue the application of a decision `decide()` accepted (its row holds the decision and the decider)."""
        return self.queue.submit_decision(interrupt_id, thread_id_for(where.team, where.channel, where.thread_ts))

    # --- jobs (JobHandler: the queue's workers call these, one job of a thread at a time) ------------------

    def run_text(self, message: Message) -> None:
        scheduled = message.key.startswith(SCHEDULED_RUN)
        outcome = self._handle_text(Where(message.team, message.channel, message.thread_ts, message.user),
                                    message.text, scheduled, f"slack:{message.key}")
        if outcome is not None and scheduled:
            self._after_crash(message, outcome)

    def apply_decision(self, interrupt_id: str, thread_id: str) -> None:
        info = self.registry.get(thread_id)
        where = Where(info.team_id, info.channel_id, info.thread_ts, info.user_id or "") if info else None
        self.apply(interrupt_id, where)

    def reapply(self, interrupt_id: str, thread_id: str) -> None:
        """The reconciler found the decision due: queue it like any other job of its thread."""
        self.queue.submit_decision(interrupt_id, thread_id)

    def authorised(self, thread: ThreadInfo, user: str) -> bool:
        return user == thread.user_id or user in self.approvers

    # --- work ---------------------------------------------------------------------------------------

    def _handle_text(self, where: Where, text: str, scheduled: bool = False,
                     message_id: str | None = None) -> Outcome | None:
        """Start a run or answer the thread's pending question; returns the outcome of a run it started.
        `scheduled`: the rule scheduler queued this message (never a person). `message_id`: the message's stable
        id; a job retried after a crash whose message the thread already took in goes on with (or shows) the run
        that message started, and is never read again as an answer or a second request."""
        thread_id = thread_id_for(where.team, where.channel, where.thread_ts)
        info, _created = self.registry.open(where.team, where.channel, where.thread_ts, where.user)
        pending = self.runner.pending(thread_id)
        if not pending or (message_id and self.runner.took_in(thread_id, message_id)):
            status = self._status_message(where)
            outcome = self.runner.start(thread_id, text, self._progress(where, status), user=where.user,
                                        account=channel_account(where.channel), scheduled=scheduled,
                                        message_id=message_id)
            self._render(where, info, outcome, status)
            return outcome
        if workflow_for(text) is not None:  # a new request, not an answer: it gets its own thread
            self._start_elsewhere(where, text)
            return None
        interrupt = next((p for p in pending if kind_of(p["value"]).thread_reply_decides), None)
        if interrupt is None:
            self._safe(self.client.chat_postEphemeral, channel=where.channel, user=where.user,
                       thread_ts=where.thread_ts, text=kind_of(pending[0]["value"]).reply_hint)
            return None
        decision = {"type": "respond", "message": text}
        allowed, reason = self.decide(thread_id, interrupt["id"], where.user, decision, "thread reply")
        if not allowed:
            if reason != ALREADY_HANDLED:  # a button click answered it first: nothing to say
                self._safe(self.client.chat_postEphemeral, channel=where.channel, user=where.user,
                           thread_ts=where.thread_ts, text=reason)
            return None
        self.accept_answer(where, info, interrupt["id"], text, {"source": "thread reply"})
        self.apply(interrupt["id"], where)
        return None

    def _after_crash(self, message: Message, outcome: Outcome) -> None:
        """A scheduled rule run whose graph crashed never reached its report node, which counts failed runs and
        gives back the rule's order proposal claim: count it here toward the rule's auto-pause
        (QUANTDESK_RULE_MAX_FAILURES), telling the owner when it paused the rule, and release the claim (the run
        ended before any order card was shown). A database or network failure is not the rule's."""
        rules = self.runner.context.rules
        execution_id = message.key.removeprefix(SCHEDULED_RUN)
        rule_id = scheduled_rule_id(execution_id)
        if outcome.status != "failed" or outcome.retryable or rules is None or rule_id is None:
            return
        try:
            paused = rules.record_failure(rule_id, outcome.text)
        except RuleError:  # deleted since the run was queued
            return
        release_proposals(rules.engine, execution_id)
        if paused:
            self.notify(message.thread_id, f"rule-paused:{execution_id}",
                        f":pause_button: Rule {rule_id} is paused after repeated failures; its owner "
                        f"<@{message.user}> can `rule resume {rule_id}` once it is fixed.")

    def apply(self, interrupt_id: str, where: Where | None = None) -> None:
        """Apply an accepted decision: resume the graph once. The checkpoint is the truth: when the interrupt is
        no longer pending the decision was applied before (a crash came after), so it is only marked applied and
        the thread shown where it stands. Infrastructure errors are retried later; graph errors are final.
        `where` is the thread to tell when even the database is unreachable."""
        try:
            self._apply(interrupt_id)
        except INFRASTRUCTURE_ERRORS as exc:
            error = f"the database or network failed ({type(exc).__name__})"
            log.warning("decision %s not applied: %s", interrupt_id, error)
            with contextlib.suppress(*INFRASTRUCTURE_ERRORS):  # else the row stays due for the reconciler
                self.decisions.mark_retry(interrupt_id, error)
            if where is not None:
                self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                           text=f":warning: Your decision is recorded but could not be applied yet: {error}. I will "
                                "try again automatically; nothing is lost.")

    def _apply(self, interrupt_id: str) -> None:
        record = self.decisions.get(interrupt_id)
        if record is None or record.applied or record.outcome or not self.decisions.claim(interrupt_id, self.owner):
            return
        info = self.registry.get(record.thread_id)
        if info is None:
            self.decisions.mark_failed(interrupt_id, "the thread is not in the registry")
            return
        where = Where(info.team_id, info.channel_id, info.thread_ts, record.decided_by or "")
        try:
            still_pending = interrupt_id in {p["id"] for p in self.runner.pending(record.thread_id)}
        except INFRASTRUCTURE_ERRORS as exc:
            self._retry_later(where, interrupt_id, f"the database failed ({type(exc).__name__})")
            return
        if not still_pending:
            self._render(where, info, self.runner.current(record.thread_id), None)
            self.decisions.mark_applied(interrupt_id)
            return
        status = self._status_message(where)
        outcome = self.runner.resume(record.thread_id, interrupt_id, record.decision, record.decided_by,
                                     self._progress(where, status), decided_at=record.decided_at)
        if outcome.status == "failed" and outcome.retryable:
            self._finish_status(where, status, ":warning: not applied yet")
            self._retry_later(where, interrupt_id, outcome.text)
            return
        if outcome.status == "failed":
            self.decisions.mark_failed(interrupt_id, outcome.text)
            self._finish_status(where, status, ":x: stopped")
            self._offer_retry(where, interrupt_id, outcome.text)
            self.registry.update(info.thread_id, status="failed")
            return
        self._render(where, info, outcome, status)
        self.decisions.mark_applied(interrupt_id)

    def retry(self, interrupt_id: str) -> bool:
        """A human pressed Retry on a failed decision: apply it again."""
        record = self.decisions.get(interrupt_id)
        if record is None or not self.decisions.retry(interrupt_id):
            return False
        self.queue.submit_decision(interrupt_id, record.thread_id)
        return True

    def _retry_later(self, where: Where, interrupt_id: str, error: str) -> None:
        attempts = self.decisions.mark_retry(interrupt_id, error)
        if attempts >= MAX_ATTEMPTS:
            self._offer_retry(where, interrupt_id, f"{error}; gave up after {attempts} attempts")
            return
        self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                   text=f":warning: Your decision is recorded but could not be applied yet: {error}. I will try "
                        "again automatically; nothing is lost.")

    def _offer_retry(self, where: Where, interrupt_id: str, error: str) -> None:
        self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                   **render.retry_message(interrupt_id, error))

    def _start_elsewhere(self, where: Where, text: str) -> None:
        """A complete new request typed into a thread that waits on a question: it starts in a new thread (a new
        top-level message), and the old thread is told so; its question stays open."""
        try:
            root = self.client.chat_postMessage(channel=where.channel, text=f"<@{where.user}> asked: `{text}`")["ts"]
        except SlackApiError as exc:
            log.warning("could not start a new thread: %s", exc.response.get("error"))
            return
        self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                   text="That looks like a new request, so I started it in its own thread. The question here is "
                        "still open (reply `cancel` to drop it).")
        self.queue.submit_text(Message(f"new:{where.channel}:{root}", where.team, where.channel, root, where.user,
                                       text))

    def may_decide(self, thread_id: str, interrupt_id: str, user: str, decision_type: str) -> tuple[bool, str]:
        """Whether `user` may take `decision_type` on this pause now (nothing is recorded: opening a form is not a
        decision). Approvals for traders (orders) are approved or edited by traders only, and not after expiry;
        anyone who may answer the thread, or a trader, may reject them. When the database cannot be read, the
        answer is no, saying so: the click is not recorded and the buttons stay."""
        try:
            return self._may_decide(thread_id, interrupt_id, user, decision_type)
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not check a decision on %s: %s", thread_id, type(exc).__name__)
            return False, unrecorded(exc)

    def _may_decide(self, thread_id: str, interrupt_id: str, user: str, decision_type: str) -> tuple[bool, str]:
        info = self.registry.get(thread_id)
        if info is None:
            return False, "This thread is not one of mine any more."
        if self.decisions.get(interrupt_id) is not None:
            return False, ALREADY_HANDLED
        value = self.pending_value(thread_id, interrupt_id)  # the checkpoint is the truth
        if value is None:
            return False, "This question is no longer open: the run has moved on."
        traders = self.runner.context.traders
        if value.get("deciders") == TRADERS:
            refusal = approval_refusal(value, user, decision_type, traders, datetime.now(UTC))
            if refusal:
                return False, refusal
            if not (self.authorised(info, user) or user in traders):
                return False, "Only the requester, a configured approver or a trader can reject this order."
            return True, ""
        if not self.authorised(info, user):
            return False, "Only the person who started this request or a configured approver can answer it."
        return True, ""

    def pending_value(self, thread_id: str, interrupt_id: str) -> dict[str, Any] | None:
        return next((p["value"] for p in self.runner.pending(thread_id) if p["id"] == interrupt_id), None)

    def decide(self, thread_id: str, interrupt_id: str, user: str, decision: dict[str, Any],
               source: str) -> tuple[bool, str]:
        """Accept a decision: (accepted, reason). Accepting inserts its durable row; the first decision wins."""
        allowed, reason = self.may_decide(thread_id, interrupt_id, user, str(decision.get("type")))
        try:
            if allowed and not self.decisions.accept(interrupt_id, thread_id, decision, user, source):
                return False, ALREADY_HANDLED
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("could not record a decision on %s: %s", thread_id, type(exc).__name__)
            return False, unrecorded(exc)
        return allowed, reason

    # --- rendering ---------------------------------------------------------------------------------

    def _status_message(self, where: Where) -> str | None:
        try:
            return self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                                **render.status_message(_thread_of(where),
                                                                        ":hourglass_flowing_sand: working…"))["ts"]
        except SlackApiError as exc:
            log.warning("could not post a status message: %s", exc.response.get("error"))
            return None

    def _progress(self, where: Where, status_ts: str | None):  # noqa: ANN202
        done: list[str] = []

        def update(label: str, detail: str | None) -> None:
            step = f"{label} ({detail})" if detail else label
            if done and done[-1].split(" (")[0] == label:  # the same step again with new detail
                done[-1] = step
            else:
                done.append(step)
            if status_ts:
                self._safe(self.client.chat_update, channel=where.channel, ts=status_ts, **render.status_message(
                    _thread_of(where), ":hourglass_flowing_sand: " + " → ".join(done) + " …"))

        return update

    def _finish_status(self, where: Where, status_ts: str | None, text: str) -> None:
        if status_ts:  # the Stop button goes with the run
            self._safe(self.client.chat_update, channel=where.channel, ts=status_ts,
                       **render.status_message(_thread_of(where), text, running=False))

    def accept_decision(self, where: Where, info: ThreadInfo, interrupt_id: str, decision: dict[str, Any],
                        message_ts: str | None = None) -> None:
        """Audit a review decision and turn its message into "who decided what", without buttons."""
        kind = decision["type"]
        detail: dict[str, Any] = {"source": "slack"}
        if kind == "reject":
            detail["reason"] = decision.get("message", "")
        edited = (decision.get("edited_action") or {}).get("args") or {}
        if kind == "edit":
            detail["edited"] = edited
        self.audit.record(info.thread_id, where.user, kind, interrupt_id, detail)
        shown = info.pending.get(interrupt_id) or {}
        ts = message_ts or shown.get("ts")
        if ts:
            note = detail.get("reason", "") if kind == "reject" else ""
            if kind == "edit":
                note = ("the edited code is being dry-run and checked" if "code" in edited else
                        "the edited values are being checked again")
            message = render.decided_message(shown.get("question") or "Code review", where.user, kind, note)
            self._safe(self.client.chat_update, channel=where.channel, ts=ts, **message)

    def accept_answer(self, where: Where, info: ThreadInfo, interrupt_id: str, answer: str,
                      detail: dict[str, Any], message_ts: str | None = None) -> None:
        """Audit an accepted answer and turn its question into "who answered what", without buttons."""
        self.audit.record(info.thread_id, where.user, "respond", interrupt_id, detail)
        shown = info.pending.get(interrupt_id) or {}
        ts = message_ts or shown.get("ts")
        if ts:
            message = render.answered_message(shown.get("question", "Question"), where.user, answer)
            self._safe(self.client.chat_update, channel=where.channel, ts=ts, **message)

    def _render(self, where: Where, info: ThreadInfo, outcome: Outcome, status_ts: str | None) -> None:
        """Show an outcome in the thread. Every question and result is a post row first, keyed by its interrupt
        id or its checkpoint, so showing the same outcome again (after a crash) posts nothing twice, and a post
        Slack refused stays for the reconciler."""
        if outcome.workflow and outcome.workflow != info.workflow:
            self.registry.update(info.thread_id, workflow=outcome.workflow)
        if outcome.status == "waiting":
            self._finish_status(where, status_ts, ":speech_balloon: waiting for your answer")
            pending: dict[str, Any] = {i["id"]: _pending_entry(i["value"]) for i in outcome.interrupts}
            self.registry.update(info.thread_id, status="waiting", pending=pending)
            for interrupt in outcome.interrupts:
                _post, created = self.posts.record(interrupt["id"], info.thread_id, "interrupt")
                if created and self.posts.claim(interrupt["id"], self.owner):  # the reconciler keeps off it
                    pending[interrupt["id"]]["ts"] = self._post_interrupt(where, info, interrupt)
                else:  # shown before (a crash came after): check, and post only what never arrived
                    self.repost(interrupt["id"])
                    pending[interrupt["id"]]["ts"] = self.posts.get(interrupt["id"]).ts  # type: ignore[union-attr]
            self.registry.update(info.thread_id, pending=pending)
            return
        if outcome.status == "failed":
            self._finish_status(where, status_ts, ":x: stopped")
            self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                       **render.reply_message(outcome.text))
            self.registry.update(info.thread_id, status="failed", pending={})
            return
        self._finish_status(where, status_ts, ":white_check_mark: done")
        key = f"result:{info.thread_id}:{outcome.checkpoint}"
        body = {"workflow": outcome.workflow, "result": outcome.result, "text": outcome.text}
        _post, created = self.posts.record(key, info.thread_id, "result", body)
        if created and self.posts.claim(key, self.owner):  # the reconciler keeps off it while it is posted
            self._post_result(where, key, body)
        else:
            self.repost(key)
        self.registry.update(info.thread_id, status="done", pending={})

    def _post(self, where: Where, key: str, message: dict[str, Any]) -> Posted | None:
        """Post `message` into the thread with its key in the message metadata (so a re-post can find it).
        Blocks Slack refuses fall back to the header and buttons alone (a review or approval stays decidable),
        then to the plain text. None (and the post row says why) when Slack refused."""
        metadata = {"event_type": POST_EVENT, "event_payload": {"key": key}}
        compact = render.compact_message(message)
        forms = [("full", message), *([("compact", compact)] if compact else [])]
        plain = {"text": (message["text"] + PLAIN_TEXT_NOTE)[:PLAIN_TEXT_MAX]}
        try:
            for form, attempt in forms:
                try:
                    return self._posted(key, form, self.client.chat_postMessage(
                        channel=where.channel, thread_ts=where.thread_ts, metadata=metadata, **attempt)["ts"])
                except SlackApiError as exc:
                    if exc.response.get("error") not in BLOCKS_REFUSED:
                        raise
            return self._posted(key, "plain", self.client.chat_postMessage(
                channel=where.channel, thread_ts=where.thread_ts, metadata=metadata, **plain)["ts"])
        except SlackApiError as exc:
            return self._refused(key, exc.response.get("error"))
        except OSError as exc:
            return self._refused(key, type(exc).__name__)

    def _posted(self, key: str, form: str, ts: str) -> Posted:
        self.posts.mark_posted(key, ts)
        return Posted(ts, form)

    def _refused(self, key: str, error: Any) -> None:
        log.warning("post %s not accepted by Slack: %s", key, error)
        self.posts.mark_failed(key, str(error))

    def _post_result(self, where: Where, key: str, body: dict[str, Any], ts: str | None = None) -> None:
        """Post a result (unless `ts` says Slack has it already), then its files; complete once both are done."""
        workflow, result = body.get("workflow"), body.get("result")
        if result and workflow in WORKFLOWS:
            message = render.view_message(WORKFLOWS[workflow].present(result))
        else:
            message = render.reply_message(str(body.get("text") or "Done."))
        if not (ts or self._post(where, key, message)):
            return
        if result:
            self.upload(where, result.get("artifacts", []))
        self.posts.mark_complete(key)

    def _post_interrupt(self, where: Where, info: ThreadInfo, interrupt: dict[str, Any]) -> str | None:
        """Post one question, review or approval; a code body too long to show inline goes up as a snippet file."""
        value = interrupt["value"]
        kind = kind_of(value)
        posted = self._post(where, interrupt["id"], kind.slack_message(info.thread_id, interrupt["id"], value,
                                                                        info.user_id))
        if posted is None:
            return None
        self.posts.mark_complete(interrupt["id"])
        if posted.form != "full":  # the details Slack refused to show, as a file beside the buttons
            self._safe(self.client.files_upload_v2, content=kind.console_text(value), filename="details.txt",
                       title=f"{kind.title(value)} (details)", channel=where.channel, thread_ts=where.thread_ts)
            return posted.ts
        code = str(value.get("code") or "")
        if len(code) > render.CODE_INLINE_MAX:
            try:
                self.client.files_upload_v2(content=value.get("program") or code, filename=f"{value['name']}.py",
                                            title=f"{value['name']}.py (code under review)",
                                            channel=where.channel, thread_ts=where.thread_ts)
            except SlackApiError as exc:
                log.warning("code snippet upload failed: %s", exc.response.get("error"))
                self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                           text=":warning: I could not attach the code under review; review it with "
                                "`quantdesk chat` or ask an admin to check the bot's file permissions.")
        return posted.ts

    # --- reconciliation ------------------------------------------------------------------------------

    def settle(self, now: Callable[[], datetime] | None = None) -> None:
        """The paper account's settle job: fill open orders whose session's bar exists now, and post each fill
        (or why it did not fill) into the order's thread, once."""
        ctx = self.runner.context
        if ctx.paper is None:
            return
        for order in settle_all(ctx.engine, ctx.provider, ctx.paper, now):
            if order.thread_id:
                self.notify(order.thread_id, f"order:{order.id}:{order.status}", order.summary())

    def run_passes(self) -> None:
        """The workflows' periodic passes (the registry's PASSES, such as resolving the desk's due decisions): each
        notice is posted into its thread once. A pass that fails is logged, and the others still run."""
        for name, run in PASSES.items():
            try:
                notices = run(self.runner.context)
            except Exception:  # noqa: BLE001 - the next pass, and the reconciler's other work, must still run
                log.exception("the %s pass failed; it runs again next time", name)
                continue
            for notice in notices:
                self.notify(notice.thread_id, notice.key, notice.text)

    def schedule_rules(self, now: datetime | None = None) -> None:
        """The scheduler pass: each enabled rule whose cron matched (in its timezone, on a trading day) runs once
        per tick across every process, in a new thread of its channel rooted at a message naming the rule."""
        ctx = self.runner.context
        if ctx.rules is None:
            return
        run_due(ctx.engine, ctx.rules, now or datetime.now(UTC), self._start_rule, self.owner,
                is_trading_day=trading_day_checker(ctx.provider), catch_up=self.catch_up)

    def _start_rule(self, rule: Rule, tick: datetime, execution_id: str, again: bool) -> None:
        """Root a scheduled run's thread and queue the run; a failure raises, so a later pass starts it again.
        The root carries the execution id in its metadata: started `again` (an earlier attempt may have posted
        the root, then died or failed before queueing), it is looked for in the channel before posting another,
        since Slack has no idempotency key."""
        if self._team is None:
            self._team = str(self.client.auth_test()["team_id"])
        root = self._rule_root(rule.channel, execution_id, tick) if again else None
        if root is None:
            root = self.client.chat_postMessage(
                channel=rule.channel, text=f"Rule {rule.id} ({rule.symbol}): scheduled run for "
                                           f"{tick:%Y-%m-%d %H:%M} UTC, owner <@{rule.owner}>",
                metadata={"event_type": RULE_RUN_EVENT, "event_payload": {"execution": execution_id}})["ts"]
        self.queue.submit_text(Message(f"{SCHEDULED_RUN}{execution_id}", self._team, rule.channel, root, rule.owner,
                                       f"rule run {rule.id} execution={execution_id}"))

    def _rule_root(self, channel: str, execution_id: str, tick: datetime) -> str | None:
        """The ts of the root an earlier start of `execution_id` posted in the channel, if any: the channel's
        messages newest first, page by page, until one older than the tick (the root came after it)."""
        cursor = None
        while True:
            page = self.client.conversations_history(channel=channel, limit=200, include_all_metadata=True,
                                                     cursor=cursor)
            messages = page.get("messages", [])
            for message in messages:
                if _carries(message, RULE_RUN_EVENT, "execution", execution_id):
                    log.info("scheduled run %s: its root %s was posted before; not posting another", execution_id,
                             message["ts"])
                    return str(message["ts"])
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not (page.get("has_more") and cursor and messages) or float(messages[-1]["ts"]) < tick.timestamp():
                return None

    def notify(self, thread_id: str, key: str, text: str) -> None:
        """Post a notice into a thread once (a post row keyed by `key`, re-posted by the reconciler if refused)."""
        info = self.registry.get(thread_id)
        if info is None:
            return
        where = Where(info.team_id, info.channel_id, info.thread_ts, info.user_id or "")
        body = {"text": text}
        _post, created = self.posts.record(key, thread_id, "result", body)
        if created and self.posts.claim(key, self.owner):
            self._post_result(where, key, body)

    def repost(self, key: str) -> None:
        """Post a question or result Slack refused before, unless the thread shows it already (a crash can come
        after Slack accepted a post and before its ts was saved) or the question is no longer open."""
        post = self.posts.get(key)
        info = self.registry.get(post.thread_id) if post else None
        if post is None or post.complete or info is None or not self.posts.claim(key, self.owner):
            return
        where = Where(info.team_id, info.channel_id, info.thread_ts, info.user_id or "")
        ts = post.ts or self._find_in_thread(where, key)
        if ts and not post.ts:
            self.posts.mark_posted(key, ts)
        if post.kind == "result":
            self._post_result(where, key, post.body, ts)
        elif ts:
            self.posts.mark_complete(key)
        else:
            interrupt = next((p for p in self.runner.pending(info.thread_id) if p["id"] == key), None)
            if interrupt is None:
                self.posts.mark_complete(key)  # answered or moved on meanwhile: nothing left to ask
                return
            ts = self._post_interrupt(where, info, interrupt)
            if ts:
                pending = dict(self.registry.get(info.thread_id).pending)  # type: ignore[union-attr]
                pending[key] = {**pending.get(key, _pending_entry(interrupt["value"])), "ts": ts}
                self.registry.update(info.thread_id, pending=pending)

    def _find_in_thread(self, where: Where, key: str) -> str | None:
        """The ts of the bot's message in the thread whose metadata carries `key`, if Slack has one."""
        try:
            replies = self.client.conversations_replies(channel=where.channel, ts=where.thread_ts,
                                                        include_all_metadata=True, limit=200)
        except SlackApiError as exc:
            log.warning("could not read the thread to check a re-post: %s", exc.response.get("error"))
            raise
        for message in replies.get("messages", []):
            if _carries(message, POST_EVENT, "key", key):
                return str(message["ts"])
        return None

    def upload(self, where: Where, artifacts: list[dict[str, Any]]) -> None:
        """Upload the result's chart, CSVs and reports with their bytes from the database, so whichever worker
        finished the run can; a failure is said in the thread (the files stay stored), never with a host path."""
        refs = [a for a in artifacts if a["kind"] in ("chart", "signal_csv", "metrics_csv", "ic_csv", "reports")]
        store = self.runner.context.artifacts
        stored = [s for s in (store.get(a["id"]) for a in refs) if s is not None]
        if len(stored) < len(refs):
            log.warning("%d artifact(s) of thread %s are no longer stored", len(refs) - len(stored), where.thread_ts)
        if not stored:
            return
        uploads = [{"content": s.data, "filename": s.filename, "title": s.title} for s in stored]
        try:
            self.client.files_upload_v2(file_uploads=uploads, channel=where.channel, thread_ts=where.thread_ts)
        except (SlackApiError, OSError) as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("upload failed: %s", error)
            kept = f" for {store.retention_days} days" if store.retention_days else ""
            titles = "\n".join(f"• {s.title} ({s.filename})" for s in stored)
            self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                       text=f":warning: I could not upload the files ({error}). Nothing is lost: they are kept "
                            f"with this thread in QuantDesk's database{kept} and can be posted here again:\n{titles}")

    def _safe(self, method: Any, **kwargs: Any) -> None:
        """A Slack call whose failure (an API error or a dropped connection) must not stop the run."""
        try:
            method(**kwargs)
        except SlackApiError as exc:
            log.warning("Slack call failed: %s", exc.response.get("error"))
        except OSError as exc:
            log.warning("Slack call failed: %s", type(exc).__name__)


def _carries(message: dict[str, Any], event_type: str, field: str, value: str) -> bool:
    """Whether a Slack message's metadata is of `event_type` with `field` = `value` (how a post finds itself)."""
    metadata = message.get("metadata") or {}
    return metadata.get("event_type") == event_type and (metadata.get("event_payload") or {}).get(field) == value


def unrecorded(exc: BaseException) -> str:
    """What a person is told when their click could not be checked or recorded (the database failed)."""
    return (f"I could not record your decision: the database did not answer ({type(exc).__name__}). Nothing was "
            "decided and the buttons are still there; please try again in a moment.")


def _pending_entry(value: dict[str, Any]) -> dict[str, Any]:
    """What the registry keeps about a pause: its kind and the title its message shows."""
    kind = kind_of(value)
    return {"kind": kind.name, "question": kind.title(value)}


def channel_account(channel: str) -> str:
    """The paper account a channel trades in unless a request names another: one per channel."""
    return channel


def _thread_of(where: Where) -> str:
    return thread_id_for(where.team, where.channel, where.thread_ts)


def clean_text(text: str) -> str:
    return MENTION.sub("", text or "").strip()


def parse_button_value(value: str) -> tuple[str, str, str]:
    data = json.loads(value)
    return str(data["t"]), str(data["i"]), str(data["d"])
