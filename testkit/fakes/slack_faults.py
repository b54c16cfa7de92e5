"""The fake Slack Web API with a held response: Slack accepted the message (or the status update), but the bot
never learns it did: the caller is blocked there until the test kills the bot."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from testkit.fakes.slack_server import FakeSlack


def metadata_of(args: dict[str, Any]) -> dict[str, Any]:
    """A posted message's metadata (JSON bodies carry a dict, form bodies a JSON string)."""
    value = args.get("metadata")
    return (json.loads(value) if isinstance(value, str) else value) or {}


def post_key(args: dict[str, Any]) -> str:
    """The QuantDesk post key in a message's metadata ('' when it has none)."""
    return str((metadata_of(args).get("event_payload") or {}).get("key") or "")


@dataclass
class FaultySlack(FakeSlack):
    hold_when: Callable[[dict[str, Any]], bool] | None = None  # a matching post is accepted, its answer held
    hold_method: str = "chat.postMessage"  # or chat.update: a run's progress report, mid-run
    held: threading.Event = field(default_factory=threading.Event)  # set once a post is being held
    release: threading.Event = field(default_factory=threading.Event)

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        response = super().answer(method, args)
        if method == self.hold_method and response.get("ok") and self.hold_when and self.hold_when(args):
            self.hold_when = None
            self.held.set()
            self.release.wait(timeout=120)  # the bot is killed meanwhile; its socket is gone when we answer
        return response


@dataclass
class GatedSlack(FakeSlack):
    """The fake Slack Web API holding back the answers of every call `gate_when(method, args)` picks until the gate
    opens: Slack took each call (it is recorded, a message kept), and its caller (a run, in a job slot) waits."""

    gate_when: Callable[[str, dict[str, Any]], bool] | None = None
    gate: threading.Event = field(default_factory=threading.Event)
    _gated: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        response = super().answer(method, args)
        if self.gate_when is not None and self.gate_when(method, args) and not self.gate.is_set():
            with self._lock:
                self._gated.append(args)
            self.gate.wait(timeout=120)
        return response

    def gated(self) -> int:
        """How many calls were held (or are still held)."""
        with self._lock:
            return len(self._gated)
