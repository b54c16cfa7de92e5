"""Bolt's HTTP mode under waitress, a maintained threaded WSGI server, in one process (several pre-forked workers
would each start their own background service and worker child, and the embedded SQLite queue cannot span
processes): Bolt's WSGI adapter checks signatures; waitress refuses a body over the cap unread (HTTP 413), drops
idle connections and caps their number; GET /healthz answers ok."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from slack_bolt import App
from slack_bolt.adapter.wsgi import SlackRequestHandler
from waitress.server import create_server

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # Slack's payloads are a few kB
THREADS = 16  # requests handled at once: an ack is a few ms of database work, so bursts queue only briefly
CONNECTION_LIMIT = 1000
IDLE_SECONDS = 60  # an idle keep-alive connection is closed after this
BACKLOG = 512  # a small backlog resets connections when Slack sends bursts


class HttpListener:
    """The listener: `serve_forever()` in the calling thread, `shutdown()` from any other."""

    def __init__(self, app: App, host: str, port: int, path: str = "/slack/events",
                 max_body: int = MAX_BODY_BYTES) -> None:
        bolt = SlackRequestHandler(app, path)

        def wsgi(environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
            if environ.get("REQUEST_METHOD") == "GET" and environ.get("PATH_INFO") == "/healthz":
                start_response("200 OK", [("Content-Type", "text/plain"), ("Content-Length", "2")])
                return [b"ok"]
            return bolt(environ, start_response)

        self._server = create_server(wsgi, host=host, port=port, threads=THREADS,
                                     max_request_body_size=max_body + 1,  # waitress refuses at >=
                                     connection_limit=CONNECTION_LIMIT, channel_timeout=IDLE_SECONDS,
                                     backlog=BACKLOG, ident="quantdesk")

    @property
    def port(self) -> int:
        return int(self._server.effective_port)

    def serve_forever(self) -> None:
        self._server.run()

    def shutdown(self) -> None:
        self._server.close()


def make_server(app: App, host: str, port: int, path: str = "/slack/events",
                max_body: int = MAX_BODY_BYTES) -> HttpListener:
    return HttpListener(app, host, port, path, max_body)


def serve_in_thread(listener: HttpListener) -> threading.Thread:
    thread = threading.Thread(target=listener.serve_forever, daemon=True, name="quantdesk-http")
    thread.start()
    return thread
