"""The long connection (Feishu's WebSocket delivery, like Slack's Socket Mode: no public URL): the SDK's
`lark_oapi.ws.Client` opens it with the app's credentials and hands each event and card callback to the same
handlers as the HTTP callbacks; the work a callback leaves for after its answer starts once the answer frame is on
its way."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import lark_oapi as lark

from bot.feishu.callbacks import AfterAnswer, run_after

THREADS = 16


class LongConnectionHandler:
    """The dispatcher as the long connection calls it (`_do_without_validation`, the SDK's name: the connection
    itself is authenticated, so no token or signature is checked)."""

    def __init__(self, dispatcher: lark.EventDispatcherHandler, after: AfterAnswer) -> None:
        self._dispatcher, self._after = dispatcher, after
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="quantdesk-feishu-after")

    def _do_without_validation(self, payload: bytes) -> Any:
        self._after.take()
        result = self._dispatcher._do_without_validation(payload)
        work = self._after.take()
        if work:  # the SDK writes the answer frame when this returns: the work starts at the loop's next turn
            asyncio.get_running_loop().call_soon(lambda: [self._pool.submit(run_after, job) for job in work])
        return result


def long_connection(app_id: str, secret: str, domain: str, handler: LongConnectionHandler) -> Any:
    """The SDK's long-connection client (`start()` connects, reconnects on its own, and never returns)."""
    return lark.ws.Client(app_id, secret, event_handler=handler, domain=domain, log_level=lark.LogLevel.WARNING)
