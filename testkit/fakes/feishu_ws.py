"""A fake Feishu long connection on loopback: a real WebSocket server speaking the SDK's frames (pbbp2 `Frame`
protobufs): it hands the app events and card callbacks as data frames and returns each answer frame (its code and
its decoded data, a card callback's toast and card)."""

from __future__ import annotations

import base64
import json
import threading
import time
import uuid
from typing import Any

from lark_oapi.ws.pb.pbbp2_pb2 import Frame
from websockets.sync.server import ServerConnection, serve

DATA, CONTROL = 1, 0


def _header(frame: Frame, key: str) -> str:
    return next((h.value for h in frame.headers if h.key == key), "")


class LongConnectionServer:
    def __init__(self) -> None:
        self._server = serve(self._session, "127.0.0.1", 0)
        self.port = self._server.socket.getsockname()[1]
        self.url = f"ws://127.0.0.1:{self.port}/ws?device_id=fake-device&service_id=1"
        self.connections = 0
        self._answers: dict[str, tuple[dict[str, Any], float]] = {}
        self._connection: ServerConnection | None = None
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> LongConnectionServer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._server.shutdown()

    def _session(self, connection: ServerConnection) -> None:
        with self._changed:
            self._connection, self.connections = connection, self.connections + 1
            self._changed.notify_all()
        for message in connection:
            frame = Frame()
            frame.ParseFromString(message if isinstance(message, bytes) else message.encode())
            if frame.method != DATA:
                continue  # the SDK's pings
            answer = json.loads(frame.payload or b"{}")
            with self._changed:
                self._answers[_header(frame, "message_id")] = (answer, time.monotonic())
                self._changed.notify_all()

    def wait_connected(self, timeout: float = 30.0) -> None:
        with self._changed:
            if not self._changed.wait_for(lambda: self._connection is not None, timeout):
                raise AssertionError("the app never opened the long connection")

    def deliver(self, payload: dict[str, Any], timeout: float = 10.0) -> tuple[int, dict[str, Any] | None, float]:
        """Hand the app one event or card callback; its answer's code, its data (decoded) and how many seconds
        after sending it arrived."""
        self.wait_connected()
        message_id = str(uuid.uuid4())
        frame = Frame(SeqID=0, LogID=0, service=1, method=DATA, payload=json.dumps(payload).encode())
        for key, value in (("type", "event"), ("message_id", message_id), ("sum", "1"), ("seq", "0"),
                           ("trace_id", message_id)):
            header = frame.headers.add()
            header.key, header.value = key, value
        sent = time.monotonic()
        assert self._connection is not None
        self._connection.send(frame.SerializeToString())
        with self._changed:
            if not self._changed.wait_for(lambda: message_id in self._answers, timeout):
                raise AssertionError(f"frame {message_id} was never answered")
            answer, at = self._answers[message_id]
        data = json.loads(base64.b64decode(answer["data"])) if answer.get("data") else None
        return int(answer["code"]), data, at - sent
