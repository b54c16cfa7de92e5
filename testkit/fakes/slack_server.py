"""A fake Slack Web API on loopback: answers the methods QuantDesk calls and records every call, including the
three steps of files_upload_v2 (getUploadURLExternal, the upload POST, completeUploadExternal), keeps each
person's last published Home (views.publish), and keeps streamed messages as Slack shows them (chat.*Stream).

Faults are injected per method: `fake.inject("chat.update", Fault.server_error(), Fault.ratelimited())` makes
the next matching calls fail in that order (an HTTP status with Slack's error body or a non-JSON page, a 429 with
Retry-After, or a connection closed without an answer); each fault is used once, and the failed call is recorded
with the fault that answered it."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from itertools import count
from typing import Any
from urllib.parse import parse_qs

from testkit.fakes.loopback import LoopbackServer
from testkit.wait import wait_until

BOT_USER = "UBOT"
BOT_ID = "BBOT"
TEAM = "T0001"
WORKSPACE_URL = "https://quantdesk-test.slack.com/"


@dataclass(frozen=True)
class Fault:
    """How one call fails: an HTTP `status` with Slack's `{"ok": false, "error": ...}` (or a raw non-JSON `page`),
    extra `headers`, or `drop` (the connection is closed unanswered). `where(args)` picks the calls it applies to."""

    status: int = 200
    error: str = "internal_error"
    page: bytes | None = None
    headers: tuple[tuple[str, str], ...] = ()
    drop: bool = False
    where: Callable[[dict[str, Any]], bool] | None = None

    @classmethod
    def server_error(cls, status: int = 500, page: bytes | None = None, **kw: Any) -> Fault:
        return cls(status=status, page=page, **kw)

    @classmethod
    def ratelimited(cls, retry_after: int = 0, **kw: Any) -> Fault:
        return cls(status=429, error="ratelimited", headers=(("Retry-After", str(retry_after)),), **kw)

    @classmethod
    def slack_error(cls, error: str, **kw: Any) -> Fault:
        """HTTP 200 with `ok: false`, as Slack answers e.g. `msg_too_long` or `message_not_found`."""
        return cls(status=200, error=error, **kw)

    @classmethod
    def dropped(cls, **kw: Any) -> Fault:
        return cls(drop=True, **kw)

    def applies(self, args: dict[str, Any]) -> bool:
        return self.where is None or bool(self.where(args))


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    body: bytes = b""
    response: dict[str, Any] = field(default_factory=dict)
    fault: Fault | None = None  # set when an injected fault answered this call
    at: float = field(default_factory=time.monotonic)  # when the fake recorded it

    @property
    def ok(self) -> bool:
        return self.fault is None and self.response.get("ok", True) is not False


@dataclass
class FakeSlack:
    calls: list[Call] = field(default_factory=list)
    not_in_channels: set[str] = field(default_factory=set)
    locales: dict[str, str] = field(default_factory=dict)  # user id -> the locale users.info reports
    names: dict[str, str] = field(default_factory=dict)  # user id -> the display name users.info reports
    channel_names: dict[str, str] = field(default_factory=dict)  # channel id -> the name conversations.info reports
    fail_uploads: bool = False
    socket_url: str | None = None  # apps.connections.open hands this WebSocket URL out (Socket Mode)
    _ts: count = field(default_factory=lambda: count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _faults: dict[str, list[Fault]] = field(default_factory=dict)
    _messages: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # channel -> ts -> message
    _homes: dict[str, dict[str, Any]] = field(default_factory=dict)  # user -> the Home view last published
    port: int = 0

    def record(self, method: str, args: dict[str, Any], body: bytes = b"",
               response: dict[str, Any] | None = None, fault: Fault | None = None) -> None:
        with self._lock:
            self.calls.append(Call(method, args, body, response or {}, fault))

    def inject(self, method: str, *faults: Fault) -> None:
        """Queue `faults` for `method`: each of the next matching calls takes the first fault that applies."""
        with self._lock:
            self._faults.setdefault(method, []).extend(faults)

    def take_fault(self, method: str, args: dict[str, Any]) -> Fault | None:
        with self._lock:
            queue = self._faults.get(method, [])
            found = next((f for f in queue if f.applies(args)), None)
            if found is not None:
                queue.remove(found)
            return found

    def pending_faults(self, method: str) -> list[Fault]:
        """Injected faults not used yet."""
        with self._lock:
            return list(self._faults.get(method, []))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, n: int = 1, timeout: float = 60.0,
                 where: Any = None) -> list[Call]:
        """Block until `n` calls of `method` (matching `where`) were made."""
        def found() -> list[Call]:
            calls = [c for c in self.of(method) if where is None or where(c)]
            return calls if len(calls) >= n else []

        return wait_until(found, f"{n} {method} call(s)", timeout, seen=lambda: [c.method for c in self.calls])

    def home(self, user: str) -> dict[str, Any] | None:
        """The Home view last published for `user` (views.publish), as Slack would show it."""
        with self._lock:
            return self._homes.get(user)

    def _remember(self, channel: str, ts: str, args: dict[str, Any]) -> None:
        """Keep a bot post, so conversations.replies can show the thread as Slack would."""
        metadata = args.get("metadata")
        metadata = json.loads(metadata) if isinstance(metadata, str) else metadata
        message = {"type": "message", "ts": ts, "text": args.get("text"), "user": BOT_USER, "bot_id": BOT_ID,
                   "thread_ts": args.get("thread_ts") or None, "metadata": metadata}
        with self._lock:
            self._messages.setdefault(channel, {})[ts] = message

    def replies(self, channel: str | None, root: str | None, with_metadata: bool = False) -> list[dict[str, Any]]:
        """The bot's messages of a thread (the root first when the bot posted it), oldest first."""
        with self._lock:
            kept = [dict(m) for m in self._messages.get(channel or "", {}).values()
                    if m["ts"] == root or m["thread_ts"] == root]
        for message in kept:
            if not with_metadata or message["metadata"] is None:
                message.pop("metadata")
            if message["thread_ts"] is None:
                message.pop("thread_ts")
        return sorted(kept, key=lambda m: float(m["ts"]))

    def history(self, channel: str | None, with_metadata: bool = False) -> list[dict[str, Any]]:
        """The bot's top-level messages of a channel, newest first, as conversations.history (one page)."""
        with self._lock:
            kept = [dict(m) for m in self._messages.get(channel or "", {}).values() if m["thread_ts"] is None]
        for message in kept:
            message.pop("thread_ts")
            if not with_metadata or message["metadata"] is None:
                message.pop("metadata")
        return sorted(kept, key=lambda m: float(m["ts"]), reverse=True)

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
            return {"ok": True, "user_id": BOT_USER, "bot_id": BOT_ID, "team_id": TEAM, "user": "quantdesk",
                    "url": WORKSPACE_URL}
        if method in ("chat.postMessage", "chat.postEphemeral"):
            channel = args.get("channel")
            if channel in self.not_in_channels:
                return {"ok": False, "error": "not_in_channel"}
            ts = f"{1700000000 + next(self._ts)}.000100"
            if method == "chat.postMessage":
                self._remember(channel, ts, args)
            return {"ok": True, "channel": channel, "ts": ts, "message_ts": ts,
                    "message": {"text": args.get("text"), "ts": ts}}
        if method == "chat.update":
            with self._lock:
                kept = self._messages.get(args.get("channel"), {}).get(args.get("ts"))
                if kept is not None:
                    kept["text"] = args.get("text")
                    if args.get("metadata"):
                        kept["metadata"] = _json(args["metadata"])
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "chat.startStream":
            ts = f"{1700000000 + next(self._ts)}.000100"
            self._remember(args.get("channel"), ts, {**args, "text": args.get("markdown_text") or ""})
            return {"ok": True, "channel": args.get("channel"), "ts": ts}
        if method in ("chat.appendStream", "chat.stopStream", "chat.delete"):
            with self._lock:
                messages = self._messages.get(args.get("channel"), {})
                kept = messages.get(args.get("ts"))
                if kept is None:
                    return {"ok": False, "error": "message_not_found"}
                if method == "chat.delete":
                    del messages[args["ts"]]
                else:
                    kept["text"] = (kept["text"] or "") + (args.get("markdown_text") or "")
                    kept["metadata"] = _json(args["metadata"]) if args.get("metadata") else kept["metadata"]
            return {"ok": True, "channel": args.get("channel"), "ts": args.get("ts")}
        if method == "conversations.replies":
            return {"ok": True, "messages": self.replies(args.get("channel"), args.get("ts"),
                                                         _truthy(args.get("include_all_metadata")))}
        if method == "conversations.history":
            return {"ok": True, "has_more": False,
                    "messages": self.history(args.get("channel"), _truthy(args.get("include_all_metadata")))}
        if method == "files.getUploadURLExternal":
            file_id = f"F{next(self._ts):06d}"
            return {"ok": True, "upload_url": f"http://127.0.0.1:{self.port}/upload/{file_id}", "file_id": file_id}
        if method == "files.completeUploadExternal":
            if self.fail_uploads:
                return {"ok": False, "error": "upload_failed"}
            files = args.get("files")
            files = json.loads(files) if isinstance(files, str) else files
            return {"ok": True, "files": [{"id": f["id"], "title": f.get("title")} for f in files]}
        if method == "views.publish":
            view = args.get("view")
            view = json.loads(view) if isinstance(view, str) else view
            with self._lock:
                self._homes[str(args.get("user_id"))] = view
                number = next(self._ts)
            return {"ok": True, "view": {**(view or {}), "id": f"VH{number:06d}", "hash": f"h{number}"}}
        if method == "users.info":
            user = args.get("user")
            found: dict[str, Any] = {"id": user}
            if _truthy(args.get("include_locale")) and user in self.locales:
                found["locale"] = self.locales[user]
            if user in self.names:
                found["profile"] = {"display_name": self.names[user]}
            return {"ok": True, "user": found}
        if method == "conversations.info" and args.get("channel") in self.channel_names:
            channel = str(args["channel"])
            return {"ok": True, "channel": {"id": channel, "name": self.channel_names[channel]}}
        if method in ("assistant.threads.setStatus", "assistant.threads.setSuggestedPrompts",
                      "assistant.threads.setTitle"):
            return {"ok": True}
        if method in ("views.open", "views.update", "reactions.add", "conversations.info", "files.info"):
            return {"ok": True}
        return {"ok": False, "error": "unknown_method"}


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def _truthy(value: Any) -> bool:
    return value not in (None, "", "0", "false", "False", False, 0)


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSlack

    def do_POST(self) -> None:  # noqa: N802
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length)
        if self.path.startswith("/respond/"):
            hook = self.path.split("/respond/", 1)[1]  # which response_url: the test names it
            self.fake.record("respond", {**json.loads(body or b"{}"), "_hook": hook})
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
        fault = self.fake.take_fault(method, args)
        if fault is None:
            self._send(200, json.dumps(self.fake.answer(method, args)).encode(), "application/json")
            return
        response = {"ok": False, "error": fault.error}
        self.fake.record(method, args, response=response, fault=fault)
        if fault.drop:
            self.close_connection = True  # no status line at all: the client sees the connection closed
            return
        if fault.page is not None:
            self._send(fault.status, fault.page, "text/html", fault.headers)
        else:
            self._send(fault.status, json.dumps(response).encode(), "application/json", fault.headers)

    def _send(self, status: int, data: bytes, kind: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        for name, value in headers:
            self.send_header(name, value)
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
