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

from bot.locks import ThreadLocks
from bot.registry import AuditLog, Deduper, ThreadInfo, ThreadRegistry, thread_id_for
from bot.runner import Outcome, Runner
from bot.slack import render

log = logging.getLogger(__name__)

MENTION = re.compile(r"<@[A-Z0-9]+(?:\|[^>]*)?>")
NODE_LABELS = {"reflection": "planning", "data_fetch": "data", "signal_generate": "signal", "validate": "checks",
               "clarify": "answer", "report": "backtest and chart"}


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

    def submit_choice(self, where: Where, thread_id: str, interrupt_id: str, choice: str) -> Future:
        return self.pool.submit(self._guarded, self._handle_choice, where, thread_id, interrupt_id, choice)

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
            info, _created = self.registry.open(where.team, where.channel, where.thread_ts, where.user, "signal")
            pending = self.runner.pending(thread_id)
            if pending:
                interrupt = pending[0]
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
                                             self._progress(where, status))
            else:
                status = self._status_message(where)
                outcome = self.runner.start(thread_id, text, self._progress(where, status))
            self._render(where, info, outcome, status)

    def _handle_choice(self, where: Where, thread_id: str, interrupt_id: str, choice: str) -> None:
        with self.locks.hold(thread_id):
            info = self.registry.get(thread_id)
            if info is None:
                return
            status = self._status_message(where)
            outcome = self.runner.resume(thread_id, interrupt_id, {"type": "respond", "message": choice},
                                         self._progress(where, status))
            self._render(where, info, outcome, status)

    def decide(self, thread_id: str, interrupt_id: str, user: str) -> tuple[bool, str]:
        """Gatekeeping for a click: (allowed, reason). Records the decision when it is the first one."""
        info = self.registry.get(thread_id)
        if info is None:
            return False, "This thread is not one of mine any more."
        if not self.authorised(info, user):
            return False, "Only the person who started this request or a configured approver can answer it."
        still_pending = {p["id"] for p in self.runner.pending(thread_id)}  # the checkpoint is the durable truth
        if interrupt_id not in still_pending or not self.deduper.claim(f"decision:{interrupt_id}"):
            return False, "Already handled."
        return True, ""

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

        def update(node: str) -> None:
            done.append(NODE_LABELS.get(node, node))
            if status_ts:
                self._safe(self.client.chat_update, channel=where.channel, ts=status_ts,
                           text=":hourglass_flowing_sand: " + " → ".join(done) + " …")

        return update

    def _finish_status(self, where: Where, status_ts: str | None, text: str) -> None:
        if status_ts:
            self._safe(self.client.chat_update, channel=where.channel, ts=status_ts, text=text)

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
        if outcome.status == "waiting":
            self._finish_status(where, status_ts, ":speech_balloon: waiting for your answer")
            pending: dict[str, Any] = {
                i["id"]: {"kind": i["value"].get("type"), "question": i["value"].get("question", "")}
                for i in outcome.interrupts
            }
            self.registry.update(info.thread_id, status="waiting", pending=pending)
            for interrupt in outcome.interrupts:
                message = render.clarify_message(outcome.thread_id, interrupt["id"], interrupt["value"])
                posted = self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts, **message)
                pending[interrupt["id"]]["ts"] = posted["ts"]
            self.registry.update(info.thread_id, pending=pending)
            return
        if outcome.status == "failed":
            self._finish_status(where, status_ts, ":x: stopped")
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.reply_message(outcome.text))
            self.registry.update(info.thread_id, status="failed", pending={})
            return
        self._finish_status(where, status_ts, ":white_check_mark: done")
        if outcome.result:
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.signal_result_message(outcome.result))
            self._upload(where, outcome.result.get("artifacts", []))
        else:
            self.client.chat_postMessage(channel=where.channel, thread_ts=where.thread_ts,
                                         **render.reply_message(outcome.text))
        self.registry.update(info.thread_id, status="done", pending={})

    def _upload(self, where: Where, artifacts: list[dict[str, str]]) -> None:
        files = [a for a in artifacts if a["kind"] in ("chart", "signal_csv", "metrics_csv")]
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


def clean_text(text: str) -> str:
    return MENTION.sub("", text or "").strip()


def parse_button_value(value: str) -> tuple[str, str, str]:
    data = json.loads(value)
    return str(data["t"]), str(data["i"]), str(data["d"])
