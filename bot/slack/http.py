"""Bolt's HTTP mode under uvicorn (asyncio) in one process (several pre-forked workers would each start their own
background service and worker child, and the embedded SQLite queue cannot span processes). An idle or slow
connection costs the event loop nothing until its request is complete, so thousands of them never hold a thread
nor shut the door (waitress's select loop walked every connection in Python on each turn, and stopped accepting at
its connection limit): a request's head must arrive within HEAD_SECONDS, its body within BODY_SECONDS, a body over
the cap is refused unread (HTTP 413); only complete requests reach Bolt, on THREADS threads. GET /healthz answers
ok."""

from __future__ import annotations

import asyncio
import logging
import resource
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from slack_bolt import App
from slack_bolt.request import BoltRequest
from slack_bolt.response import BoltResponse
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from bot.asgi import BodyTooLarge, Listener, Message, Receive, Send, answer, read_body

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # Slack's payloads are a few kB
THREADS = 16  # requests handled at once: an ack is a few ms of database work, so bursts queue only briefly
HEAD_SECONDS = 20  # a new or kept-alive connection without a complete request head by then is closed
BODY_SECONDS = 10  # a request whose body has not all arrived by then is answered 408 and closed
WANTED_FILES = 10_000  # open files (one a connection) below which the listener warns at start

def raise_file_limit(wanted: int = WANTED_FILES) -> int:
    """Raise this process's open-file limit to its hard limit (each connection holds a file); warn when that is
    under `wanted`. Returns the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = max(soft, wanted) if hard == resource.RLIM_INFINITY else hard  # the kernel refuses an infinite one
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %d to %d: %s", soft, target, exc)
    if soft != resource.RLIM_INFINITY and soft < wanted:
        log.warning("open-file limit %d (its hard limit): the HTTP listener holds fewer than %d connections; raise "
                    "the hard limit (ulimit -Hn, systemd LimitNOFILE=) for more", soft, wanted)
    return int(soft)


class _Protocol(HttpToolsProtocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for each request's head (its keep-alive timeout): uvicorn
    closes a kept-alive connection only while it sends nothing, and never one that stalls before or within its
    first head."""

    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._await_head()

    def on_headers_complete(self) -> None:
        self._cancel_head_deadline()
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.timeout_keep_alive_task is not None:  # uvicorn awaits the next request (none pipelined, not closing)
            self._await_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def _await_head(self) -> None:
        self._cancel_head_deadline()
        self._head_deadline = self.loop.call_later(self.timeout_keep_alive, self.transport.close)

    def _cancel_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None


class _BoltAsgi:
    """The ASGI application: /healthz, and complete requests on `path` handed to Bolt on a thread pool."""

    def __init__(self, app: App, path: str, max_body: int, body_seconds: float) -> None:
        self._app, self._path, self._max_body, self._body_seconds = app, path, max_body, body_seconds
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-bolt")

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        method, path = scope["method"], scope["path"]
        if method == "GET" and path == "/healthz":
            await answer(send, 200, b"ok")
        elif method != "POST" or path != self._path:
            await answer(send, 404, b"Not Found")
        else:
            await self._bolt(scope, receive, send)

    async def _bolt(self, scope: Message, receive: Receive, send: Send) -> None:
        fields: dict[str, list[str]] = {}
        for name, value in scope["headers"]:
            fields.setdefault(name.decode("latin-1").lower(), []).append(value.decode("latin-1"))
        length = fields.get("content-length", ["0"])[0]
        too_large = f"Request body exceeds max_body ({self._max_body} bytes)".encode()
        if length.isdigit() and int(length) > self._max_body:
            await answer(send, 413, too_large, close=True)
            return
        try:
            body = await asyncio.wait_for(read_body(receive, self._max_body), self._body_seconds)
        except BodyTooLarge:
            await answer(send, 413, too_large, close=True)
            return
        except TimeoutError:
            await answer(send, 408, b"Request body timed out", close=True)
            return
        headers: dict[str, str | Sequence[str]] = dict(fields)
        request = BoltRequest(body=body.decode("utf-8", errors="replace"),  # not UTF-8: its signature fails (401)
                              query=scope["query_string"].decode("latin-1"),
                              headers=headers)
        response: BoltResponse = await asyncio.get_running_loop().run_in_executor(
            self._pool, self._app.dispatch, request)
        await send({"type": "http.response.start", "status": response.status,
                    "headers": [(k.encode("latin-1"), v.encode("latin-1"))
                                for k, values in response.headers.items() for v in values]})
        await send({"type": "http.response.body", "body": response.body.encode("utf-8")})

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


class HttpListener(Listener):
    """Bolt's listener, bound at construction: `serve_forever()` in the calling thread, `shutdown()` from any other."""

    def __init__(self, app: App, host: str, port: int, path: str = "/slack/events", max_body: int = MAX_BODY_BYTES,
                 head_seconds: int = HEAD_SECONDS, body_seconds: float = BODY_SECONDS) -> None:
        raise_file_limit()
        super().__init__(_BoltAsgi(app, path, max_body, body_seconds), host, port, http=_Protocol,
                         timeout_keep_alive=head_seconds)


def make_server(app: App, host: str, port: int, path: str = "/slack/events", max_body: int = MAX_BODY_BYTES,
                head_seconds: int = HEAD_SECONDS, body_seconds: float = BODY_SECONDS) -> HttpListener:
    return HttpListener(app, host, port, path, max_body, head_seconds, body_seconds)

