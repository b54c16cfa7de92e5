"""Bolt's HTTP mode on a threaded server: each request becomes a BoltRequest; Bolt verifies the signature."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlparse

from slack_bolt import App, BoltRequest

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # Slack's payloads are a few kB; a larger body is refused unread (HTTP 413)


def make_server(app: App, host: str, port: int, path: str = "/slack/events",
                max_body: int = MAX_BODY_BYTES) -> ThreadingHTTPServer:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            if url.path != path:
                self._refuse(404, "not found")
                return
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = -1
            if length < 0:
                self._refuse(400, "bad Content-Length")
                return
            if length > max_body:
                log.warning("refused a %d-byte request body (limit %d)", length, max_body)
                self._refuse(413, f"request body over {max_body} bytes")
                return
            try:
                body = self.rfile.read(length).decode("utf-8")
            except UnicodeDecodeError:
                self._refuse(400, "request body is not UTF-8")
                return
            headers = {k.lower(): [v] for k, v in self.headers.items()}
            response = app.dispatch(BoltRequest(body=body, query=url.query, headers=headers))
            self._send(response.status, response.body.encode("utf-8"),
                       {k: v[0] for k, v in response.headers.items() if v})

        def do_GET(self) -> None:  # noqa: N802
            self._send(200 if urlparse(self.path).path == "/healthz" else 404, b"ok", {})

        def _refuse(self, status: int, reason: str) -> None:
            """Answer an error and close: a body left unread must not be parsed as the next request."""
            self.close_connection = True
            self._send(status, reason.encode(), {"Connection": "close"})

        def _send(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, fmt: str, *args: object) -> None:
            log.debug("http: " + fmt, *args)

    server = _Server((host, port), Handler)
    server.daemon_threads = True
    return server


class _Server(ThreadingHTTPServer):
    request_queue_size = 512  # the default backlog of 5 resets connections when Slack sends bursts


def serve_in_thread(server: ThreadingHTTPServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, daemon=True, name="quantdesk-http")
    thread.start()
    return thread
