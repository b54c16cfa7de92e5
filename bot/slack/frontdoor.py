"""What the bot does with a Slack message, command or click once Bolt has acked it.

Work runs off the listener thread on a bounded pool; each thread's runs are serialised by a lock that
holds across processes; dedupe keys are claimed before any run starts; interrupts are rendered after the
run returns; results are posted as blocks plus uploaded files."""

from __future__ import annotations

import json
import logging
import re
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

from bot.interrupt_kinds import kind_of
from bot.locks import ThreadLocks
from bot.registry import AuditLog, Deduper, ThreadInfo, ThreadRegistry, thread_id_for
from bot.runner import Outcome, Runner
from bot.slack import render
from graphs.registry import WORKFLOWS, workflow_for

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
@dataclass(frozen=True)
class Where:
    team: str
    channel: str
    thread_ts: str
    user: str


class FrontDoor:
    def __init__(self, runner: Runner, client: WebClient, registry: ThreadRegistry, deduper: Deduper,
                 audit: AuditLog, locks: ThreadLocks, approvers: frozenset[str], workers: int = 8) -> None:
        self.runner, self.client = runner, client
        self.registry, self.deduper, self.audit, self.locks = registry, deduper, audit, locks
        self.approvers = approvers
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="quantdesk-run")

    # --- entry points (called by Bolt listeners after ack) ----------------------------------------

    def claim_event(self, event_id: str | None, channel: str, ts: str) -> bool:
        """True when neither the event id nor channel:ts was seen before (retries, app_mention + message)."""
        if event_id and not self.deduper.claim(f"event:{event_id}"):
            return False  # a retry: stop before touching the message key, or two deliveries could both drop it
        return self.deduper.claim(f"msg:{channel}:{ts}")

    def is_known_thread(self, team: str, channel: str, thread_ts: str) -> bool:
        return self.registry.find(team, channel, thread_ts) is not None

    def submit_text(self, where: Where, text: str) -> Future:
        return self.pool.submit(self._guarded, self._handle_text, where, clean_text(text))

    def submit_decision(self, where: Where, thread_id: str, interrupt_id: str, decision: dict[str, Any]) -> Future:
        """Resume a pause with a decision already accepted by `decide()` (HITL shape: approve/edit/reject/respond)."""
        return self.pool.submit(self._guarded, self._handle_decision, where, thread_id, interrupt_id, decision)

    def authorised(self, thread: ThreadInfo, user: str) -> bool:
        return user == thread.user_id or user in self.approvers

    # --- work ---------------------------------------------------------------------------------------

    def _guarded(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("handling failed")

    def _handle_text(self, where: Where, text: str) -> None:
        thread_id = thread_id_for(where.team, where.channel, where.thread_ts)
        with self.locks.hold(thread_id):
            info, _created = self.registry.open(where.team, where.channel, where.thread_ts, where.user)
            pending = self.runner.pending(thread_id)
            if pending and workflow_for(text) is not None:  # a new request, not an answer: it gets its own thread
                self._start_elsewhere(where, text)
                return
            if pending:
                interrupt = next((p for p in pending if kind_of(p["value"]).thread_reply_decides), None)
                if interrupt is None:
                    self._safe(self.client.chat_postEphemeral, channel=where.channel, user=where.user,
                               thread_ts=where.thread_ts, text=kind_of(pending[0]["value"]).reply_hint)
                    return
                if not self.authorised(info, where.user):
                    self._safe(self.client.chat_postEphemeral, channel=where.channel, user=where.user,
                               thread_ts=where.thread_ts, text="Only the person who started this request or a "
                                                               "configured approver can answer its questions.")
                    return
                if not self.deduper.claim(f"decision:{interrupt['id']}"):
                    return  # a button click answered it first
                self.accept_answer(where, info, interrupt["id"], text, {"source": "thread reply"})
                status = self._status_message(where)
                outcome = self.runner.resume(thread_id, interrupt["id"], {"type": "respond", "message": text},
                                             where.user, self._progress(where, status))
            else:
                status = self._status_message(where)
                outcome = self.runner.start(thread_id, text, self._progress(where, status), user=where.user)
            self._render(where, info, outcome, status)

    def _handle_decision(self, where: Where, thread_id: str, interrupt_id: str, decision: dict[str, Any]) -> None:
        with self.locks.hold(thread_id):
            info = self.registry.get(thread_id)
            if info is None:
                return
            status = self._status_message(where)
            outcome = self.runner.resume(thread_id, interrupt_id, decision, where.user, self._progress(where, status))
            self._render(where, info, outcome, status)

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
        self._handle_text(Where(where.team, where.channel, root, where.user), text)

    def may_decide(self, thread_id: str, interrupt_id: str, user: str) -> tuple[bool, str]:
        """Whether `user` may decide this pause now (nothing is claimed: opening a form is not a decision)."""
        info = self.registry.get(thread_id)
        if info is None:
            return False, "This thread is not one of mine any more."
        if not self.authorised(info, user):
            return False, "Only the person who started this request or a configured approver can answer it."
        if interrupt_id not in {p["id"] for p in self.runner.pending(thread_id)}:  # the checkpoint is the truth
            return False, "Already handled."
        return True, ""

    def pending_value(self, thread_id: str, interrupt_id: str) -> dict[str, Any] | None:
        return next((p["value"] for p in self.runner.pending(thread_id) if p["id"] == interrupt_id), None)

    def decide(self, thread_id: str, interrupt_id: str, user: str) -> tuple[bool, str]:
        """Gatekeeping for a decision: (allowed, reason). Claims the decision when it is the first one."""
        allowed, reason = self.may_decide(thread_id, interrupt_id, user)
        if allowed and not self.deduper.claim(f"decision:{interrupt_id}"):
            return False, "Already handled."
        return allowed, reason

    # --- rendering ---------------------------------------------------------------------------------

    def _status_message(self, where: Where) -> str | None:
        try:
            return self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                                text=":hourglass_flowing_sand: working…")["ts"]
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
                self._safe(self.client.chat_update, channel=where.channel, ts=status_ts,
                           text=":hourglass_flowing_sand: " + " → ".join(done) + " …")

        return update

    def _finish_status(self, where: Where, status_ts: str | None, text: str) -> None:
        if status_ts:
            self._safe(self.client.chat_update, channel=where.channel, ts=status_ts, text=text)

    def accept_decision(self, where: Where, info: ThreadInfo, interrupt_id: str, decision: dict[str, Any],
                        message_ts: str | None = None) -> None:
        """Audit a review decision and turn its message into "who decided what", without buttons."""
        kind = decision["type"]
        detail: dict[str, Any] = {"source": "slack"}
        if kind == "reject":
            detail["reason"] = decision.get("message", "")
        if kind == "edit":
            detail["code"] = decision["edited_action"]["args"]["code"]
        self.audit.record(info.thread_id, where.user, kind, interrupt_id, detail)
        shown = info.pending.get(interrupt_id) or {}
        ts = message_ts or shown.get("ts")
        if ts:
            note = detail.get("reason", "") if kind == "reject" else (
                "the edited code is being dry-run and checked" if kind == "edit" else "")
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
        if outcome.workflow and outcome.workflow != info.workflow:
            self.registry.update(info.thread_id, workflow=outcome.workflow)
        if outcome.status == "waiting":
            self._finish_status(where, status_ts, ":speech_balloon: waiting for your answer")
            pending: dict[str, Any] = {i["id"]: _pending_entry(i["value"]) for i in outcome.interrupts}
            self.registry.update(info.thread_id, status="waiting", pending=pending)
            for interrupt in outcome.interrupts:
                pending[interrupt["id"]]["ts"] = self._post_interrupt(where, info, outcome.thread_id, interrupt)
            self.registry.update(info.thread_id, pending=pending)
            return
        if outcome.status == "failed":
            self._finish_status(where, status_ts, ":x: stopped")
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.reply_message(outcome.text))
            self.registry.update(info.thread_id, status="failed", pending={})
            return
        self._finish_status(where, status_ts, ":white_check_mark: done")
        if outcome.result and outcome.workflow in WORKFLOWS:
            view = WORKFLOWS[outcome.workflow].present(outcome.result)
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.view_message(view))
            self._upload(where, outcome.result.get("artifacts", []))
        else:
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.reply_message(outcome.text))
        self.registry.update(info.thread_id, status="done", pending={})

    def _post_interrupt(self, where: Where, info: ThreadInfo, thread_id: str, interrupt: dict[str, Any]) -> str:
        """Post one question, review or approval; a code body too long to show inline goes up as a snippet file."""
        value = interrupt["value"]
        message = kind_of(value).slack_message(thread_id, interrupt["id"], value, info.user_id)
        ts = self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts, **message)["ts"]
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
        return ts

    def _upload(self, where: Where, artifacts: list[dict[str, str]]) -> None:
        files = [a for a in artifacts if a["kind"] in ("chart", "signal_csv", "metrics_csv", "ic_csv")]
        if not files:
            return
        uploads = [{"file": a["path"], "filename": Path(a["path"]).name, "title": a["title"]} for a in files]
        try:
            self.client.files_upload_v2(file_uploads=uploads, channel=where.channel, thread_ts=where.thread_ts)
        except (SlackApiError, OSError) as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("upload failed: %s", error)
            kept = "\n".join(f"• {a['title']}: `{a['path']}`" for a in files)
            self._safe(self.client.chat_postMessage, channel=where.channel, thread_ts=where.thread_ts,
                       text=f":warning: I could not upload the files ({error}). Nothing is lost; they are kept on "
                            f"the bot host:\n{kept}")

    def _safe(self, method: Any, **kwargs: Any) -> None:
        try:
            method(**kwargs)
        except SlackApiError as exc:
            log.warning("Slack call failed: %s", exc.response.get("error"))


def _pending_entry(value: dict[str, Any]) -> dict[str, Any]:
    """What the registry keeps about a pause: its kind and the title its message shows."""
    kind = kind_of(value)
    return {"kind": kind.name, "question": kind.title(value)}


def clean_text(text: str) -> str:
    return MENTION.sub("", text or "").strip()


def parse_button_value(value: str) -> tuple[str, str, str]:
    data = json.loads(value)
    return str(data["t"]), str(data["i"]), str(data["d"])
