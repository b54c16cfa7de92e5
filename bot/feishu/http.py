"""The HTTP callback listener under uvicorn: events and card callbacks are POSTed to PATH (one address for both in
the developer console), handed to the SDK's dispatcher on a thread pool (it answers the URL check and refuses what
fails the verification token, the signature or the decryption), and the work a callback leaves for after its answer
(Callbacks.after) runs once that answer is sent. A body over MAX_BODY_BYTES is refused (413), one not all sent within
BODY_SECONDS too (408); GET /healthz answers ok."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lark_oapi as lark
import uvicorn
from lark_oapi.core.const import LARK_REQUEST_NONCE, LARK_REQUEST_SIGNATURE, LARK_REQUEST_TIMESTAMP
from lark_oapi.core.model import RawRequest, RawResponse

from bot.feishu.callbacks import AfterAnswer, run_after

log = logging.getLogger(__name__)

PATH = "/feishu/events"
MAX_BODY_BYTES = 1 << 20  # Feishu's callbacks are a few kB
BODY_SECONDS = 10  # a request whose body has not all arrived by then is answered 408
THREADS = 16
BACKLOG = 2048
HEADERS = {name.lower(): name for name in (LARK_REQUEST_TIMESTAMP, LARK_REQUEST_NONCE, LARK_REQUEST_SIGNATURE)}

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers: `serve`'s own stay."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _Asgi:
    def __init__(self, dispatcher: lark.EventDispatcherHandler, after: AfterAnswer) -> None:
        self._dispatcher, self._after = dispatcher, after
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-feishu")
        self._later = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-feishu-after")

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET" and scope["path"] == "/healthz":
            await _answer(send, 200, b"ok", b"text/plain")
        elif scope["method"] != "POST" or scope["path"] != PATH:
            await _answer(send, 404, b"Not Found", b"text/plain")
        else:
            await self._callback(scope, receive, send)

    async def _callback(self, scope: Message, receive: Receive, send: Send) -> None:
        try:
            body = await asyncio.wait_for(_body(receive), BODY_SECONDS)
        except _TooLarge:
            await _answer(send, 413, b"Request body too large", b"text/plain")
            return
        except TimeoutError:
            await _answer(send, 408, b"Request body timed out", b"text/plain")
            return
        request = RawRequest()
        request.uri = scope["path"]
        request.body = body
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            request.headers[HEADERS.get(key, key)] = value.decode("latin-1")
        response, work = await asyncio.get_running_loop().run_in_executor(self._pool, self._dispatch, request)
        await _answer(send, int(response.status_code or 500), response.content or b"", b"application/json")
        for job in work:
            self._later.submit(run_after, job)

    def _dispatch(self, request: RawRequest) -> tuple[RawResponse, list[Callable[[], None]]]:
        self._after.take()  # nothing a refused request left behind on this thread
        response = self._dispatcher.do(request)
        work = self._after.take()
        return response, work if response.status_code == 200 else []

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._later.shutdown(wait=True)


class _TooLarge(Exception):
    pass


async def _body(receive: Receive) -> bytes:
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise _TooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def _answer(send: Send, status: int, data: bytes, content_type: bytes) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type + b"; charset=utf-8"),
                            (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})


class HttpListener:
    """The listener, bound at construction: `serve_forever()` in the calling thread, `shutdown()` from another."""

    def __init__(self, dispatcher: lark.EventDispatcherHandler, after: AfterAnswer, host: str, port: int) -> None:
        self._socket = socket.create_server((host, port), backlog=BACKLOG)
        self._asgi = _Asgi(dispatcher, after)
        self._server = _Server(uvicorn.Config(self._asgi, ws="none", lifespan="off", access_log=False,
                                              log_config=None, backlog=BACKLOG, server_header=False))

    @property
    def port(self) -> int:
        return int(self._socket.getsockname()[1])

    def serve_forever(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        finally:
            self._asgi.close()

    def shutdown(self) -> None:
        self._server.should_exit = True


def serve_in_thread(listener: HttpListener) -> threading.Thread:
    thread = threading.Thread(target=listener.serve_forever, daemon=True, name="quantdesk-feishu-http")
    thread.start()
    return thread
