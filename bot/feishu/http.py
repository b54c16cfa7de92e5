"""The HTTP callback listener under uvicorn: events and card callbacks are POSTed to PATH (one address for both in
the developer console), handed to the SDK's dispatcher on a thread pool (it answers the URL check and refuses what
fails the verification token, the signature or the decryption), and the work a callback leaves for after its answer
(Callbacks.after) runs once that answer is sent. A body over MAX_BODY_BYTES is refused (413), one not all sent within
BODY_SECONDS too (408); GET /healthz answers ok."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import lark_oapi as lark
from lark_oapi.core.const import LARK_REQUEST_NONCE, LARK_REQUEST_SIGNATURE, LARK_REQUEST_TIMESTAMP
from lark_oapi.core.model import RawRequest, RawResponse

from bot.asgi import BodyTooLarge, Listener, Message, Receive, Send, answer, read_body
from bot.feishu.callbacks import AfterAnswer, run_after

log = logging.getLogger(__name__)

PATH = "/feishu/events"
MAX_BODY_BYTES = 1 << 20  # Feishu's callbacks are a few kB
BODY_SECONDS = 10  # a request whose body has not all arrived by then is answered 408
THREADS = 16
HEADERS = {name.lower(): name for name in (LARK_REQUEST_TIMESTAMP, LARK_REQUEST_NONCE, LARK_REQUEST_SIGNATURE)}

class _Asgi:
    def __init__(self, dispatcher: lark.EventDispatcherHandler, after: AfterAnswer) -> None:
        self._dispatcher, self._after = dispatcher, after
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-feishu")
        self._later = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-feishu-after")

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET" and scope["path"] == "/healthz":
            await answer(send, 200, b"ok")
        elif scope["method"] != "POST" or scope["path"] != PATH:
            await answer(send, 404, b"Not Found")
        else:
            await self._callback(scope, receive, send)

    async def _callback(self, scope: Message, receive: Receive, send: Send) -> None:
        try:
            body = await asyncio.wait_for(read_body(receive, MAX_BODY_BYTES), BODY_SECONDS)
        except BodyTooLarge:
            await answer(send, 413, b"Request body too large")
            return
        except TimeoutError:
            await answer(send, 408, b"Request body timed out")
            return
        request = RawRequest()
        request.uri = scope["path"]
        request.body = body
        for name, value in scope["headers"]:
            key = name.decode("latin-1").lower()
            request.headers[HEADERS.get(key, key)] = value.decode("latin-1")
        response, work = await asyncio.get_running_loop().run_in_executor(self._pool, self._dispatch, request)
        await answer(send, int(response.status_code or 500), response.content or b"", b"application/json")
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


class HttpListener(Listener):
    """The callback listener, bound at construction: `serve_forever()` in the calling thread, `shutdown()` from
    another."""

    thread_name = "quantdesk-feishu-http"

    def __init__(self, dispatcher: lark.EventDispatcherHandler, after: AfterAnswer, host: str, port: int) -> None:
        super().__init__(_Asgi(dispatcher, after), host, port)

