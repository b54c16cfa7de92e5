"""A run's status in Slack's assistant pane (assistant.threads.setStatus through the Web API client: a worker has no
Bolt listener context). Slack drops a status after about two minutes and when the app replies, so a live status
is set again every `refresh_seconds` until it is cleared (before a question or a result is posted)."""

from __future__ import annotations

import logging
import threading
import time

from slack_sdk import WebClient
from slack_sdk.errors import SlackApiError

log = logging.getLogger(__name__)

STATUS_MAX = 150


class AssistantStatuses:
    def __init__(self, client: WebClient, refresh_seconds: float) -> None:
        self.client, self.refresh_seconds = client, refresh_seconds
        self._live: dict[tuple[str, str], tuple[str, float]] = {}  # (channel, thread ts) -> (status, set at)
        self._lock = threading.Lock()
        self._refresher: threading.Thread | None = None

    def set(self, channel: str, thread_ts: str, status: str) -> bool:
        """Show `status` in the thread; False when Slack refused it (not an assistant thread, no scope)."""
        status = status[:STATUS_MAX]
        if not self._call(channel, thread_ts, status):
            return False
        with self._lock:
            self._live[(channel, thread_ts)] = (status, time.monotonic())
            if self._refresher is None:
                self._refresher = threading.Thread(target=self._refresh, name="assistant-status", daemon=True)
                self._refresher.start()
        return True

    def clear(self, channel: str, thread_ts: str) -> None:
        with self._lock:
            self._live.pop((channel, thread_ts), None)
        self._call(channel, thread_ts, "")

    def _call(self, channel: str, thread_ts: str, status: str) -> bool:
        try:
            self.client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts, status=status)
        except (SlackApiError, OSError) as exc:
            error = exc.response.get("error") if isinstance(exc, SlackApiError) else type(exc).__name__
            log.warning("assistant status not set: %s", error)
            return False
        return True

    def _refresh(self) -> None:
        """Set each live status again once it is `refresh_seconds` old; one Slack refuses (or cannot be reached
        for) is dropped, not retried for ever."""
        while True:
            time.sleep(min(1.0, self.refresh_seconds / 4))
            now = time.monotonic()
            with self._lock:
                due = [(key, status) for key, (status, at) in self._live.items() if now - at >= self.refresh_seconds]
            for (channel, thread_ts), status in due:
                with self._lock:
                    if self._live.get((channel, thread_ts), ("", 0.0))[0] != status:
                        continue  # cleared or changed meanwhile
                    self._live[(channel, thread_ts)] = (status, now)
                if not self._call(channel, thread_ts, status):  # refused or unreachable: stop refreshing it
                    with self._lock:
                        if self._live.get((channel, thread_ts), ("", 0.0))[0] == status:
                            del self._live[(channel, thread_ts)]
