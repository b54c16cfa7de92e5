"""How a thread's runs are shown: the status message and its progress, long prose streamed, an outcome (a question,
a result, a failure) as post rows the outbox delivers, a retry offer, and the homes a change concerns."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.core.outbox import pending_entry
from bot.core.surface import Place, Refused, RetryOffer, Status, StreamSurface
from bot.runner import Outcome, ProseSink
from bot.stores.threads import ThreadInfo
from tools.i18n import _

if TYPE_CHECKING:
    from bot.core.core import Core

log = logging.getLogger(__name__)


class Presenter:
    def __init__(self, core: Core) -> None:
        self.core = core

    def status(self, place: Place, key: str) -> str | None:
        """The status line of the run of a message or decision (`key`): posted once, over its queued line."""
        return self.core.waiting.status(place, key, Status(place.thread_id, _(":hourglass_flowing_sand: working…")))

    def progress(self, place: Place, status_ref: str | None) -> Callable[[str, str | None], None]:
        done: list[str] = []

        def update(label: str, detail: str | None) -> None:
            step = f"{label} ({detail})" if detail else label
            if done and done[-1].split(" (")[0] == label:  # the same step again with new detail
                done[-1] = step
            else:
                done.append(step)
            if status_ref:
                self.core.surface.update(place, status_ref, Status(place.thread_id, ":hourglass_flowing_sand: "
                                                              + " → ".join(done) + " …", step=step))

        return update

    def prose(self, place: Place, run: str) -> ProseSink | None:
        """On a surface that streams, each piece of long prose a run finishes is streamed into its thread once
        (keyed by the run, the message or decision that started it, and the prose's own key)."""
        if not isinstance(self.core.surface, StreamSurface):
            return None

        def stream(key: str, title: str, text: str) -> None:
            digest = hashlib.sha256(f"{run}:{key}".encode()).hexdigest()[:24]
            self.core.outbox.stream(place, f"prose:{place.thread_id}:{digest}", title, text)

        return stream

    def finish_status(self, place: Place, status_ref: str | None, text: str) -> None:
        if status_ref:  # the Stop button goes with the run
            self.core.surface.update(place, status_ref, Status(place.thread_id, text, running=False))

    def show(self, place: Place, info: ThreadInfo, outcome: Outcome, status_ref: str | None) -> None:
        """Show an outcome in the thread: every question and result is a post row first (see Outbox)."""
        if outcome.workflow and outcome.workflow != info.workflow:
            self.core.threads.update(info.thread_id, workflow=outcome.workflow)
        if outcome.status == "waiting":
            self.finish_status(place, status_ref, _(":speech_balloon: waiting for your answer") + _used(outcome))
            pending: dict[str, Any] = {i.id: pending_entry(i.card) for i in outcome.interrupts}
            self.core.threads.update(info.thread_id, status="waiting", pending=pending)
            shown = self.core.threads.get(info.thread_id) or info
            total = len(outcome.interrupts)
            for index, interrupt in enumerate(outcome.interrupts):
                pending[interrupt.id]["ts"] = self.core.outbox.question(place, shown, interrupt, (index + 1, total),
                                                                      self.core.runner.pending)
            self.core.threads.update(info.thread_id, pending=pending)
            self.home_changed(info, place.user)
            return
        if outcome.status == "failed":
            self.finish_status(place, status_ref, _(":x: stopped"))
            self.core.outbox.say(place, outcome.text, failure=True)
            self.core.threads.update(info.thread_id, status="failed", pending={})
            self.home_changed(info, place.user)
            return
        self.finish_status(place, status_ref, _(":white_check_mark: done") + _used(outcome))
        body = {"workflow": outcome.workflow, "result": outcome.result, "text": outcome.text}
        self.core.outbox.result(place, f"result:{info.thread_id}:{outcome.checkpoint}", body)
        self.core.threads.update(info.thread_id, status="done", pending={})
        self.home_changed(info, place.user)

    def retry_offer(self, place: Place, interrupt_id: str, error: str) -> None:
        try:
            self.core.surface.post(place, RetryOffer(interrupt_id, error))
        except Refused as exc:
            log.warning("could not offer a retry: %s", exc.reason)

    def home_changed(self, info: ThreadInfo | None, *users: str | None) -> None:
        """A thread changed (a card waits, was decided or went, a result or a fill came): the homes it concerns
        are published again (on a surface that has homes)."""
        if self.core.homes is not None:
            self.core.homes.changed(self.core.homes.concerned(info, *users))


def _used(outcome: Outcome) -> str:
    """What the run's models used, after its status (nothing for a run that asked none)."""
    return f" · {outcome.usage}" if outcome.usage else ""

