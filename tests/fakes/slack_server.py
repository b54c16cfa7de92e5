"""A fake Slack Web API on loopback: answers the methods QuantDesk calls and records every call, including the
three steps of files_upload_v2 (getUploadURLExternal, the upload POST, completeUploadExternal)."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from itertools import count
from typing import Any
from urllib.parse import parse_qs

from tests.fakes.loopback import LoopbackServer

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0001"


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    body: bytes = b""
    response: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    not_in_channels: set[str] = field(default_factory=set)
    fail_uploads: bool = False
    socket_url: str | None = None  # apps.connections.open hands this WebSocket URL out (Socket Mode)
    _ts: count = field(default_factory=lambda: count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    port: int = 0

    def record(self, method: str, args: dict[str, Any], body: bytes = b"",
               response: dict[str, Any] | None = None) -> None:
        with self._lock:
            self.calls.append(Call(method, args, body, response or {}))

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, n: int = 1, timeout: float = 60.0,
                 where: Any = None) -> list[Call]:
        """Block until `n` calls of `method` (matching `where`) were made."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [c for c in self.of(method) if where is None or where(c)]
            if len(found) >= n:
                return found
            time.sleep(0.05)
        raise AssertionError(f"expected {n} {method} call(s); got {[c.method for c in self.calls]}")

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        response = self._respond(method, args)
        self.record(method, args, response=response)
        return response

    def _respond(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "apps.connections.open":
            if self.socket_url is None:
                return {"ok": False, "error": "not_allowed_token_type"}
            return {"ok": True, "url": self.socket_url}
        if method == "auth.test":
            return {"ok": True, "user_id": BOT_USER, "bot_id": BOT_ID, "team_id": TEAM, "user": "quantdesk"}
        if method in ("chat.postMessage", "chat.postEphemeral"):
            channel = args.get("channel")
            if channel in self.not_in_channels:
                return {"ok": False, "error": "not_in_channel"}
            ts = f"{1700000000 + next(self._ts)}.000100"
            return {"ok": True, "channel": channel, "ts": ts, "message_ts": ts,
                    "message": {"text": args.get("text"), "ts": ts}}
        if method == "chat.update":
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):06d}"
            return {"ok": True, "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            if self.fail_uploads:
                return {"ok": False, "error": "upload_failed"}
            files = args.get("files")
            files = json.loads(files) if isinstance(files, str) else files
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        if method in ("views.open", "views.update", "reactions.add", "conversations.info", "files.info"):
            return {"ok": True}
        return {"ok": False, "error": "unknown_method"}


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSlack

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path.startswith("/respond/"):
            self.fake.record("respond", json.loads(body or b"{}"))
            self._send(200, b"ok", "text/plain")
            return
        if self.path.startswith("/upload/"):
            self.fake.record("upload", {"file_id": self.path.rsplit("/", 1)[1]}, body)
            self._send(200, b"OK", "text/plain")
            return
        method = self.path.rsplit("/", 1)[-1]
        kind = self.headers.get("Content-Type", "")
        if kind.startswith("application/json"):
            args = json.loads(body or b"{}")
        else:
            args = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        self._send(200, json.dumps(self.fake.answer(method, args)).encode(), "application/json")

    def _send(self, status: int, data: bytes, kind: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


class SlackServer(LoopbackServer):
    def __init__(self, fake: FakeSlack | None = None) -> None:
        self.fake = fake or FakeSlack()
        super().__init__(type("H", (_Handler,), {"fake": self.fake}))
        self.fake.port = self.port
        self.url = f"http://127.0.0.1:{self.port}/api/"
