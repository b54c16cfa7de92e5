"""What the chat surfaces' HTTP listeners share: uvicorn (asyncio) on a socket bound at construction, without its
signal handlers (`serve` installs its own: bot/stopping.py), a request body read up to a cap, and a plain
answer. Each surface brings its ASGI application (its routes, its thread pool) and any uvicorn options of its own."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, Protocol

import uvicorn

BACKLOG = 2048  # a small backlog resets connections when a platform sends bursts

Message = dict[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class AsgiApp(Protocol):
    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None: ...

    def close(self) -> None:
        """Release its threads once the server has stopped."""


class BodyTooLarge(Exception):
    """A request body passed the listener's cap."""


async def read_body(receive: Receive, max_bytes: int) -> bytes:
    """The whole request body; BodyTooLarge as soon as it passes `max_bytes`."""
    chunks, size = [], 0
    while True:
        message = await receive()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > max_bytes:
            raise BodyTooLarge
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


async def answer(send: Send, status: int, data: bytes, content_type: bytes = b"text/plain",
                 close: bool = False) -> None:
    """A complete response; `close` asks the client to drop the connection (after a refused body)."""
    headers = [(b"content-type", content_type + b"; charset=utf-8"), (b"content-length", str(len(data)).encode())]
    await send({"type": "http.response.start", "status": status,
                "headers": headers + ([(b"connection", b"close")] if close else [])})
    await send({"type": "http.response.body", "body": data})


class _Server(uvicorn.Server):
    """uvicorn's server without its signal handlers."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Listener:
    """An ASGI application served on (host, port), bound at construction: `serve_forever()` in the calling thread,
    `shutdown()` from any other. `config`: uvicorn options of the surface's own."""

    thread_name = "quantdesk-http"

    def __init__(self, asgi: AsgiApp, host: str, port: int, **config: Any) -> None:
        self._socket = socket.create_server((host, port), backlog=BACKLOG)
        self._asgi = asgi
        self._server = _Server(uvicorn.Config(asgi, ws="none", lifespan="off", access_log=False, log_config=None,
                                              backlog=BACKLOG, server_header=False, **config))

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

    def serve_in_thread(self) -> threading.Thread:
        """`serve_forever()` in a daemon thread of its own, started."""
        thread = threading.Thread(target=self.serve_forever, daemon=True, name=self.thread_name)
        thread.start()
        return thread
