"""A fake Feishu Open API on loopback: the tenant access token, the bot's info, messages sent, replied in threads
and patched, images and files uploaded, ephemeral cards. Every call is recorded; each message card is checked
against the card schema the fake enforces (`card_problems`: a header with a title, known elements, buttons with
values, no more than CARD_ELEMENTS_MAX elements, no more than CARD_BYTES_MAX bytes) and a card that fails it is
refused as Feishu refuses one (code 230099). The long connection's endpoint call hands out `ws_url` (a
LongConnectionServer, testkit/fakes/feishu_ws.py). A message carrying a `uuid` seen before is not sent again: the first
one's id is answered, as Feishu keeps one message per uuid.

Faults are injected per method: `fake.inject("im.message.reply", Fault.rate_limited(), Fault.server_error())`
makes the next calls fail in that order, each fault used once; `Fault.stalled` holds a call until released."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler
from itertools import count
from typing import Any
from urllib.parse import parse_qs, urlsplit

from testkit.fakes.loopback import LoopbackServer
from testkit.wait import wait_until

BOT_OPEN_ID = "ou_quantdesk_bot"
TOKEN = "t-fake-tenant-token"
CARD_ELEMENTS_MAX = 50
CARD_BYTES_MAX = 30_000
CARD_INVALID = 230099
RATE_LIMITED = 99991400
ELEMENT_TAGS = {"markdown", "div", "note", "action", "form", "hr", "img"}
TEMPLATES = {"blue", "wathet", "turquoise", "green", "yellow", "orange", "red", "carmine", "violet", "purple",
             "indigo", "grey", "default"}


@dataclass(frozen=True)
class Fault:
    """How one call fails: an HTTP `status` with Feishu's `{"code": ..., "msg": ...}`."""

    status: int = 500
    code: int = 1500
    msg: str = "internal error"
    page: bytes | None = None  # a body that is no JSON (a proxy's error page) instead of Feishu's
    # a call that hangs: `arrived` is set when it comes, and it is answered (with the error) once `release` is set
    arrived: threading.Event | None = None
    release: threading.Event | None = None
    message_id: str | None = None  # only a call on this message meets the fault (None: the next call)

    @classmethod
    def stalled(cls, arrived: threading.Event, release: threading.Event, message_id: str | None = None) -> Fault:
        """A Feishu that stops answering this call until the test releases it (then it fails)."""
        return cls(status=504, code=1504, msg="gateway timeout", arrived=arrived, release=release,
                   message_id=message_id)

    @classmethod
    def server_error(cls) -> Fault:
        return cls()

    @classmethod
    def error_page(cls) -> Fault:
        return cls(status=502, page=b"<html><body>502 Bad Gateway</body></html>")

    @classmethod
    def rate_limited(cls) -> Fault:
        return cls(status=429, code=RATE_LIMITED, msg="request trigger frequency limit")

    @classmethod
    def api_error(cls, code: int, msg: str = "refused") -> Fault:
        return cls(status=400, code=code, msg=msg)


@dataclass
class Call:
    method: str
    args: dict[str, Any]
    response: dict[str, Any] = field(default_factory=dict)
    fault: Fault | None = None
    at: float = field(default_factory=time.monotonic)

    @property
    def ok(self) -> bool:
        return self.fault is None and self.response.get("code") == 0

    @property
    def card(self) -> dict[str, Any] | None:
        """The card a send, reply or patch carried (None for other messages)."""
        if self.args.get("msg_type", "interactive") != "interactive" or "content" not in self.args:
            return None
        return dict(json.loads(self.args["content"]))

    @property
    def message_id(self) -> str:
        return str((self.response.get("data") or {}).get("message_id") or "")


def _text_problems(text: Any, where: str) -> list[str]:
    if not isinstance(text, dict) or text.get("tag") not in ("plain_text", "lark_md") or not isinstance(
            text.get("content"), str):
        return [f"{where}: a text object (plain_text or lark_md) with its content is required"]
    return []


def _button_problems(button: Any, where: str, in_form: bool) -> list[str]:
    if not isinstance(button, dict) or button.get("tag") != "button":
        return [f"{where}: only buttons are allowed here"]
    problems = _text_problems(button.get("text"), f"{where}.text")
    if not isinstance(button.get("value", {}), dict):
        problems.append(f"{where}.value must be an object")
    if button.get("type", "default") not in ("default", "primary", "danger", "text", "laser"):
        problems.append(f"{where}.type {button.get('type')!r} is unknown")
    if in_form and not button.get("name"):
        problems.append(f"{where}: a button in a form needs a name")
    return problems


def _element_problems(element: Any, where: str) -> list[str]:
    if not isinstance(element, dict) or element.get("tag") not in ELEMENT_TAGS:
        return [f"{where}: unknown element {element.get('tag') if isinstance(element, dict) else element!r}"]
    tag = element["tag"]
    if tag == "markdown" and not isinstance(element.get("content"), str):
        return [f"{where}: markdown needs its content"]
    if tag == "div":
        texts = [element["text"]] if "text" in element else []
        texts += [f.get("text") for f in element.get("fields") or []]
        if not texts:
            return [f"{where}: div needs a text or fields"]
        return [p for n, t in enumerate(texts) for p in _text_problems(t, f"{where}.text[{n}]")]
    if tag == "note":
        return [p for n, t in enumerate(element.get("elements") or [None])
                for p in _text_problems(t, f"{where}.elements[{n}]")]
    if tag == "action":
        buttons = element.get("actions")
        if not isinstance(buttons, list) or not buttons:
            return [f"{where}: an action row needs its actions"]
        return [p for n, b in enumerate(buttons) for p in _button_problems(b, f"{where}.actions[{n}]", False)]
    if tag == "form":
        problems = [] if element.get("name") else [f"{where}: a form needs a name"]
        inner = element.get("elements") or []
        for n, item in enumerate(inner):
            if isinstance(item, dict) and item.get("tag") == "input":
                if not item.get("name"):
                    problems.append(f"{where}.elements[{n}]: an input needs a name")
            else:
                problems += _button_problems(item, f"{where}.elements[{n}]", True)
        if not any(isinstance(i, dict) and i.get("action_type") == "form_submit" for i in inner):
            problems.append(f"{where}: a form needs a submit button")
        return problems
    return []


def count_elements(elements: list[Any]) -> int:
    return sum(1 + count_elements(e.get("actions") or e.get("elements") or [])
               if isinstance(e, dict) and e.get("tag") in ("action", "form") else 1 for e in elements)


def card_problems(card: Any) -> list[str]:
    """What is wrong with a message card (card JSON 1.0), as the fake's schema says; empty when it is fine."""
    if not isinstance(card, dict):
        return ["a card is an object"]
    problems: list[str] = []
    header = card.get("header")
    if not isinstance(header, dict):
        problems.append("header is required")
    else:
        problems += _text_problems(header.get("title"), "header.title")
        if not (header.get("title") or {}).get("content"):
            problems.append("header.title is empty")
        if header.get("template", "blue") not in TEMPLATES:
            problems.append(f"header.template {header.get('template')!r} is unknown")
    elements = card.get("elements")
    if not isinstance(elements, list) or not elements:
        return [*problems, "elements are required"]
    for n, element in enumerate(elements):
        problems += _element_problems(element, f"elements[{n}]")
    if count_elements(elements) > CARD_ELEMENTS_MAX:
        problems.append(f"{count_elements(elements)} elements: more than {CARD_ELEMENTS_MAX}")
    if len(json.dumps(card, ensure_ascii=False).encode()) > CARD_BYTES_MAX:
        problems.append(f"over {CARD_BYTES_MAX} bytes")
    return problems


@dataclass
class FakeFeishu:
    calls: list[Call] = field(default_factory=list)
    ws_url: str | None = None  # the long connection's address the endpoint call hands out
    messages: dict[str, dict[str, Any]] = field(default_factory=dict)  # message id -> what it is now
    _uuids: dict[str, str] = field(default_factory=dict)
    _ids: count = field(default_factory=lambda: count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _faults: dict[str, list[Fault]] = field(default_factory=dict)

    def inject(self, method: str, *faults: Fault) -> None:
        with self._lock:
            self._faults.setdefault(method, []).extend(faults)

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def forget_calls(self) -> None:
        """Start the record of calls anew (the messages stay): a test's next bot sees only its own calls."""
        with self._lock:
            self.calls.clear()

    def _fault(self, method: str, args: dict[str, Any]) -> Fault | None:
        with self._lock:
            queue = self._faults.get(method) or []
            at = next((i for i, f in enumerate(queue) if f.message_id in (None, args.get("_message_id"))), None)
            return queue.pop(at) if at is not None else None

    def of(self, method: str) -> list[Call]:
        with self._lock:
            return [c for c in self.calls if c.method == method]

    def wait_for(self, method: str, n: int = 1, timeout: float = 60.0,
                 where: Callable[[Call], bool] | None = None) -> list[Call]:
        def found() -> list[Call]:
            calls = [c for c in self.of(method) if where is None or where(c)]
            return calls if len(calls) >= n else []

        return wait_until(found, f"{n} {method} call(s)", timeout, seen=lambda: [c.method for c in self.calls])

    def cards(self) -> list[Call]:
        """Every call that carried a card (sent, replied, patched, ephemeral)."""
        with self._lock:
            return [c for c in self.calls if c.card is not None or c.method == "ephemeral.send"]

    def thread(self, root: str) -> list[Call]:
        """The bot's replies in the thread of `root` that Feishu took, in order."""
        return [c for c in self.of("im.message.reply") if c.ok and self._root_of(c.args["_message_id"]) == root]

    def _root_of(self, message_id: str) -> str:
        with self._lock:
            return str((self.messages.get(message_id) or {}).get("root_id") or message_id)

    def answer(self, method: str, args: dict[str, Any], authorised: bool) -> tuple[int, dict[str, Any] | bytes]:
        """The HTTP status and the body (Feishu's JSON, or a page) of one call."""
        fault = self._fault(method, args)
        if fault is not None and fault.arrived is not None and fault.release is not None:
            fault.arrived.set()
            fault.release.wait(120)
        if fault is not None:
            response = {"code": fault.code, "msg": fault.msg}
            self._record(Call(method, args, response, fault))
            return fault.status, fault.page if fault.page is not None else response
        status, response = (200, self._respond(method, args)) if authorised else (
            401, {"code": 99991663, "msg": "Invalid access token for authorization"})
        self._record(Call(method, args, response))
        return status, response

    def _record(self, call: Call) -> None:
        with self._lock:
            self.calls.append(call)

    def _message(self, args: dict[str, Any], root: str | None, chat: str) -> dict[str, Any]:
        uuid = args.get("uuid")
        with self._lock:
            if uuid and uuid in self._uuids:
                return {"code": 0, "msg": "success", "data": {**self.messages[self._uuids[uuid]], "duplicate": True}}
            message_id = f"om_bot{next(self._ids):06d}"
            message = {"message_id": message_id, "root_id": root, "chat_id": chat, "msg_type": args.get("msg_type"),
                       "content": args.get("content")}
            self.messages[message_id] = message
            if uuid:
                self._uuids[uuid] = message_id
        return {"code": 0, "msg": "success", "data": dict(message)}

    def _respond(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        if method == "auth.tenant_access_token":
            return {"code": 0, "msg": "ok", "tenant_access_token": TOKEN, "expire": 7200}
        if method == "ws.endpoint":
            if self.ws_url is None or not args.get("AppSecret"):
                return {"code": 514, "msg": "auth failed"}
            return {"code": 0, "msg": "ok", "data": {"URL": self.ws_url, "ClientConfig": {
                "ReconnectCount": -1, "ReconnectInterval": 1, "ReconnectNonce": 0, "PingInterval": 120}}}
        if method == "bot.info":
            return {"code": 0, "msg": "ok", "bot": {"open_id": BOT_OPEN_ID, "app_name": "QuantDesk"}}
        if method in ("im.message.create", "im.message.reply", "im.message.patch"):
            card = json.loads(args["content"]) if args.get("msg_type", "interactive") == "interactive" else None
            problems = card_problems(card) if card is not None else []
            if problems:
                return {"code": CARD_INVALID, "msg": "card content invalid: " + "; ".join(problems)}
        if method == "im.message.create":
            return self._message(args, None, str(args.get("receive_id")))
        if method == "im.message.reply":
            with self._lock:
                parent = self.messages.get(args["_message_id"]) or {"chat_id": args.get("_chat", "")}
            root = str(parent.get("root_id") or args["_message_id"])
            return self._message(args, root, str(parent.get("chat_id") or ""))
        if method == "im.message.patch":
            with self._lock:
                if args["_message_id"] in self.messages:
                    self.messages[args["_message_id"]]["content"] = args["content"]
            return {"code": 0, "msg": "success", "data": {}}
        if method == "ephemeral.send":
            problems = card_problems(args.get("card"))
            if problems:
                return {"code": CARD_INVALID, "msg": "card content invalid: " + "; ".join(problems)}
            return {"code": 0, "msg": "success", "data": {"message_id": f"om_eph{next(self._ids):06d}"}}
        if method == "im.image.create":
            return {"code": 0, "msg": "success", "data": {"image_key": f"img_v3_{next(self._ids):06d}"}}
        if method == "im.file.create":
            return {"code": 0, "msg": "success", "data": {"file_key": f"file_v3_{next(self._ids):06d}"}}
        return {"code": 404, "msg": f"no such method {method}"}

    def seen_message(self, message_id: str, chat: str, root: str | None = None) -> None:
        """A person's message, as Feishu knows it (so a reply to it opens or joins its thread)."""
        with self._lock:
            self.messages[message_id] = {"message_id": message_id, "root_id": root, "chat_id": chat}


ROUTES = [  # (HTTP method, path prefix, path suffix, fake method)
    ("POST", "/open-apis/auth/v3/tenant_access_token/internal", "", "auth.tenant_access_token"),
    ("GET", "/open-apis/bot/v3/info", "", "bot.info"),
    ("POST", "/callback/ws/endpoint", "", "ws.endpoint"),
    ("POST", "/open-apis/ephemeral/v1/send", "", "ephemeral.send"),
    ("POST", "/open-apis/im/v1/images", "", "im.image.create"),
    ("POST", "/open-apis/im/v1/files", "", "im.file.create"),
    ("POST", "/open-apis/im/v1/messages/", "/reply", "im.message.reply"),
    ("PATCH", "/open-apis/im/v1/messages/", "", "im.message.patch"),
    ("POST", "/open-apis/im/v1/messages", "", "im.message.create"),
]


def _route(verb: str, path: str) -> tuple[str, str] | None:
    for method, prefix, suffix, name in ROUTES:
        if verb != method or not path.startswith(prefix) or not path.endswith(suffix):
            continue
        middle = path[len(prefix):len(path) - len(suffix)]
        if prefix.endswith("/") and (not middle or "/" in middle):
            continue
        if not prefix.endswith("/") and middle:
            continue
        return name, middle
    return None


def _field(data: bytes, is_file: bool) -> bytes | str:
    """A multipart field: a file's bytes (the SDK names the file field, with or without a filename), a text
    field's text."""
    return data if is_file else data.decode()


def _handler(fake: FakeFeishu) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            pass

        def _serve(self, verb: str) -> None:
            url = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            found = _route(verb, url.path)
            if found is None:
                self._send(404, {"code": 404, "msg": "not found"})
                return
            method, message_id = found
            args: dict[str, Any] = {k: v[-1] for k, v in parse_qs(url.query).items()}
            content_type = self.headers.get("Content-Type") or ""
            if content_type.startswith("multipart/form-data"):
                parsed = BytesParser(policy=HTTP).parsebytes(
                    f"Content-Type: {content_type}\r\n\r\n".encode() + body)
                for part in parsed.iter_parts():
                    name = part.get_param("name", header="content-disposition")
                    data = part.get_payload(decode=True) or b""
                    args[str(name)] = _field(data, bool(part.get_filename()) or name in ("file", "image"))
            elif body:
                args.update(json.loads(body))
            if message_id:
                args["_message_id"] = message_id
            authorised = method in ("auth.tenant_access_token", "ws.endpoint") or self.headers.get(
                "Authorization") == f"Bearer {TOKEN}"
            status, response = fake.answer(method, args, authorised)
            self._send(status, response)

        def _send(self, status: int, response: dict[str, Any] | bytes) -> None:
            page = isinstance(response, bytes)
            data = response if isinstance(response, bytes) else json.dumps(response).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html" if page else "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self._serve("GET")

        def do_POST(self) -> None:  # noqa: N802
            self._serve("POST")

        def do_PATCH(self) -> None:  # noqa: N802
            self._serve("PATCH")

    return Handler


class FeishuServer(LoopbackServer):
    """The fake on an ephemeral port; `url` is its origin (FEISHU_DOMAIN)."""

    def __init__(self, fake: FakeFeishu | None = None) -> None:
        self.fake = fake or FakeFeishu()
        super().__init__(_handler(self.fake))
        self.url = f"http://127.0.0.1:{self.port}"
