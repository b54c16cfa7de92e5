"""A fake Slack Socket Mode endpoint on loopback: a real WebSocket server that says hello to the app, hands it
envelopes (events_api, slash_commands, interactive) and records the app's acknowledgements."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

from websockets.sync.server import ServerConnection, serve


class SocketModeServer:
    def __init__(self) -> None:
        self._server = serve(self._session, "127.0.0.1", 0)
        self.port = self._server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/link/?ticket=fake"
        self.acks: dict[str, dict[str, Any]] = {}
        self._sent: dict[str, float] = {}
        self._acked: dict[str, float] = {}
        self.connections = 0
        self._connection: ServerConnection | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> SocketModeServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()

    def _session(self, connection: ServerConnection) -> None:
        connection.send(json.dumps({"type": "hello", "num_connections": 1, "connection_info": {"app_id": "A1"},
                                    "debug_info": {"host": "fake-socket-mode"}}))
        with self._changed:
            self._connection, self.connections = connection, self.connections + 1
            self._changed.notify_all()
        for message in connection:
            data = json.loads(message)
            with self._changed:
                self.acks[data["envelope_id"]] = data
                self._acked[data["envelope_id"]] = time.monotonic()
                self._changed.notify_all()

    def wait_connected(self, timeout: float = 30.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._connection is not None, timeout):
                raise AssertionError("the app never opened the Socket Mode WebSocket")

    def send(self, kind: str, payload: dict[str, Any], retry_attempt: int = 0) -> str:
        """Deliver one envelope; returns its envelope id."""
        self.wait_connected()
        envelope_id = str(uuid.uuid4())
        assert self._connection is not None
        self._sent[envelope_id] = time.monotonic()
        self._connection.send(json.dumps({
            "envelope_id": envelope_id, "type": kind, "payload": payload,
            "accepts_response_payload": kind != "events_api", "retry_attempt": retry_attempt,
            "retry_reason": "timeout" if retry_attempt else ""}))
        return envelope_id

    def wait_ack(self, envelope_id: str, timeout: float = 10.0) -> tuple[dict[str, Any], float]:
        """The app's acknowledgement of an envelope and how many seconds after sending it arrived."""
        with self._changed:
            if not self._changed.wait_for(lambda: envelope_id in self.acks, timeout):
                raise AssertionError(f"envelope {envelope_id} was never acknowledged")
            return self.acks[envelope_id], self._acked[envelope_id] - self._sent[envelope_id]
