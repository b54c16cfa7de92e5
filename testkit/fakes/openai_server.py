"""A fake OpenAI-compatible chat-completions server on loopback (POST /v1/chat/completions, non-streaming).

Answers are scripted per key: a key matches a request whose `model` equals it or whose system prompt contains
it, so each agent (or each of the main and light models) replays its own queue. A scripted step is an
`AIMessage` (text, or real `tool_calls` with JSON arguments and finish_reason "tool_calls", with usage token
counts; `invalid_tool_calls` go out with their arguments as written; a text longer than the request's
max_completion_tokens is cut there with finish_reason "length") or a fault: `http_error(500)`,
`http_error(429, retry_after=1)`, `hang(seconds)` (answers nothing and closes the connection after at most
`seconds`, or at shutdown). Every request is recorded. A request the script
does not cover, one that breaks the protocol, one whose scripted answer calls a tool the request did not offer,
or one asking for more answer tokens than the model's output limit (`answer_limit`) gets HTTP 400 (the client
does not retry it, so the test sees it) and is recorded as a failure that `check()` (run at a fixture's teardown)
raises."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from itertools import count
from typing import Any

from langchain_core.messages import AIMessage

from testkit.fakes.loopback import LoopbackServer

API_KEY = "sk-fake-test-key"
ROLES = ("system", "developer", "user", "assistant", "tool")


@dataclass(frozen=True)
class HttpError:
    """Answer with this HTTP status and an OpenAI error body (and a Retry-After header when given)."""

    status: int
    retry_after: float | None = None
    message: str = ""


@dataclass(frozen=True)
class Hang:
    """Answer nothing; close the connection after `seconds` (sooner when the server shuts down)."""

    seconds: float


Step = AIMessage | HttpError | Hang


def http_error(status: int, retry_after: float | None = None) -> HttpError:
    return HttpError(status, retry_after)


ECHO = "{authorization}"  # in an HttpError's message: the request's Authorization header, as a careless gateway


def echoing_error(status: int = 400) -> HttpError:
    """An error whose message echoes the request's Authorization header (`Bearer <the API key>`)."""
    return HttpError(status, message=f"malformed request; headers were: Authorization: {ECHO}")


def hang(seconds: float = 10.0) -> Hang:
    return Hang(seconds)


@dataclass
class Exchange:
    """One request and what the fake did with it (`status` None: it hung)."""

    key: str | None
    body: dict[str, Any]
    headers: dict[str, str]
    received: float  # time.monotonic()
    status: int | None = None
    answer: dict[str, Any] | None = None


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def _tokens(text: str) -> int:
    """A deterministic stand-in for a tokenizer: whitespace-separated words."""
    return len(text.split())


def _protocol_problem(body: dict[str, Any]) -> str | None:
    """What makes `body` an invalid (or, for this fake, unsupported) chat-completions request."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "the request names no model"
    if body.get("stream"):
        return "the request asks for streaming; the product's calls are expected to be non-streaming"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "the request has no messages"
    called: set[str] = set()
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ROLES:
            return f"message {i} has role {role!r}"
        for call in message.get("tool_calls") or []:
            try:
                json.loads(call["function"]["arguments"])
            except (KeyError, TypeError, ValueError):
                return f"message {i} has a tool call whose arguments are not a JSON string: {call!r}"
            called.add(call["id"])
        if role == "tool" and message.get("tool_call_id") not in called:
            return f"tool message {i} answers {message.get('tool_call_id')!r}, which no assistant message called"
    return None


def _unoffered_call(step: Step, body: dict[str, Any]) -> str | None:
    """Why the scripted `step` cannot answer `body`: it calls a tool the request did not offer."""
    if not isinstance(step, AIMessage):
        return None
    offered = [t.get("function", {}).get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    unoffered = [c["name"] for c in step.tool_calls if c["name"] not in offered]
    if not unoffered:
        return None
    return f"the scripted answer calls {', '.join(unoffered)}, which the request did not offer (it offered {offered})"


def _completion(n: int, model: str, prompt_tokens: int, message: AIMessage, cap: int | None) -> dict[str, Any]:
    """The chat.completion for `message`; a text answer longer than the request's token cap is cut there, with
    finish_reason "length", as a real endpoint does."""
    content = _text(message.content)
    calls: list[dict[str, Any]] = [
        {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
        for c in message.tool_calls]
    calls += [{"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["args"] or ""}}
              for c in message.invalid_tool_calls]  # arguments sent as written: broken JSON stays broken
    cut = not calls and cap is not None and _tokens(content) > cap
    if cut:
        content = " ".join(content.split()[:cap])
    reply: dict[str, Any] = {"role": "assistant", "content": content or None, "refusal": None}
    if calls:
        reply["tool_calls"] = calls
    completion_tokens = _tokens(content) + sum(_tokens(c["function"]["arguments"]) + 1 for c in calls)
    return {
        "id": f"chatcmpl-fake-{n}", "object": "chat.completion", "created": int(time.time()), "model": model,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "message": reply, "logprobs": None,
                     "finish_reason": "length" if cut else "tool_calls" if calls else "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def _error_body(status: int, message: str) -> dict[str, Any]:
    kind = {400: "invalid_request_error", 401: "invalid_request_error", 429: "rate_limit_exceeded"}
    return {"error": {"message": message, "type": kind.get(status, "server_error"), "param": None,
                      "code": "invalid_api_key" if status == 401 else None}}


@dataclass
class FakeOpenAI:
    """Scripts keyed by model name or system-prompt marker; records every request and every failure."""

    scripts: dict[str, list[Step]] = field(default_factory=dict)
    api_key: str = API_KEY
    answer_limit: int = 16_384  # the model's output limit: a larger max_completion_tokens is refused (HTTP 400)
    exchanges: list[Exchange] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    closing: threading.Event = field(default_factory=threading.Event)
    _ids: count = field(default_factory=lambda: count(1))
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, key: str, *steps: Step) -> None:
        """Queue `steps` for requests matching `key` (a model name or a marker in the system prompt)."""
        with self._lock:
            self.scripts.setdefault(key, []).extend(steps)

    def of(self, key: str) -> list[Exchange]:
        with self._lock:
            return [e for e in self.exchanges if e.key == key]

    def check(self) -> None:
        """Raise when a request was not covered by the script or broke the protocol, or a step was not used."""
        with self._lock:
            left = {k: len(v) for k, v in self.scripts.items() if v}
            problems = [*self.failures, *(f"{n} scripted step(s) for {k!r} were never requested"
                                          for k, n in left.items())]
        if problems:
            raise AssertionError("fake OpenAI server: " + "; ".join(problems))

    def fail(self, problem: str) -> None:
        with self._lock:
            self.failures.append(problem)

    def take(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[Exchange, Step]:
        """Record the request and pick what to do with it."""
        with self._lock:
            exchange = Exchange(None, body, headers, time.monotonic())
            self.exchanges.append(exchange)
            if headers.get("authorization") != f"Bearer {self.api_key}":
                return exchange, HttpError(401, message="Incorrect API key provided")
            problem = _protocol_problem(body)
            cap = body.get("max_completion_tokens", body.get("max_tokens"))
            if problem is None and isinstance(cap, int) and cap > self.answer_limit:
                problem = f"max_completion_tokens is too large: {cap}; this model supports at most {self.answer_limit}"
            if problem is None:
                exchange.key, problem = self._key(body)
            if problem is None and not self.scripts[exchange.key]:  # type: ignore[index]
                problem = f"no scripted answer left for {exchange.key!r}"
            if problem is None:
                problem = _unoffered_call(self.scripts[exchange.key][0], body)  # type: ignore[index]
            if problem is not None:
                self.failures.append(problem)
                return exchange, HttpError(400, message=problem)
            return exchange, self.scripts[exchange.key].pop(0)  # type: ignore[index]

    def _key(self, body: dict[str, Any]) -> tuple[str | None, str | None]:
        system = "\n".join(_text(m.get("content")) for m in body["messages"] if m["role"] in ("system", "developer"))
        keys = [k for k in self.scripts if k == body["model"] or k in system]
        if len(keys) == 1:
            return keys[0], None
        start = system[:60].replace("\n", " ")
        if not keys:
            return None, f"no script for model {body['model']!r} with system prompt {start!r}"
        return None, f"scripts {keys} all match model {body['model']!r} with system prompt {start!r}"

    def answer(self, exchange: Exchange, message: AIMessage) -> dict[str, Any]:
        prompt = sum(_tokens(_text(m.get("content"))) for m in exchange.body["messages"])
        cap = exchange.body.get("max_completion_tokens", exchange.body.get("max_tokens"))
        completion = _completion(next(self._ids), exchange.body["model"], prompt, message, cap)
        exchange.status, exchange.answer = 200, completion
        return completion


class _Handler(BaseHTTPRequestHandler):
    fake: FakeOpenAI

    def do_POST(self) -> None:  # noqa: N802
        if self.path.rstrip("/") != "/v1/chat/completions":
            self.fake.fail(f"unexpected POST {self.path}")
            self._send(404, _error_body(404, f"no route {self.path}"))
            return
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw)
        except ValueError:
            self.fake.fail(f"a request body is not JSON: {raw[:80]!r}")
            self._send(400, _error_body(400, "the body is not JSON"))
            return
        exchange, step = self.fake.take({k.lower(): v for k, v in self.headers.items()}, body)
        if isinstance(step, Hang):
            self.fake.closing.wait(step.seconds)
            self.close_connection = True
            return
        if isinstance(step, HttpError):
            exchange.status = step.status
            message = (step.message or f"fake HTTP {step.status}").replace(ECHO, exchange.headers.get(
                "authorization", ""))
            headers = {"retry-after": f"{step.retry_after:g}"} if step.retry_after is not None else {}
            self._send(step.status, _error_body(step.status, message), headers)
            return
        self._send(200, self.fake.answer(exchange, step))

    def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-request-id", f"req_fake_{id(payload)}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *_args: object) -> None:
        pass


class OpenAIServer(LoopbackServer):
    """Runs a FakeOpenAI on 127.0.0.1; `url` is the base URL to give the client (…/v1)."""

    def __init__(self, fake: FakeOpenAI | None = None) -> None:
        self.fake = fake or FakeOpenAI()
        super().__init__(type("Handler", (_Handler,), {"fake": self.fake}))
        self.url = f"http://127.0.0.1:{self.port}/v1"

    def __exit__(self, *exc: object) -> None:
        self.fake.closing.set()  # hung answers end now
        super().__exit__(*exc)

