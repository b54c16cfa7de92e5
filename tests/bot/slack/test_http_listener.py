"""The HTTP listener of `quantdesk serve` (Bolt under uvicorn) over real sockets: body size cap, malformed lengths,
health check, deadlines for idle, stalled and slow connections, the open-file limit."""

from __future__ import annotations

import http.client
import logging
import resource
import socket
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from slack_bolt import App
from slack_sdk import WebClient
from slack_sdk.signature import SignatureVerifier

from bot.slack.http import MAX_BODY_BYTES, make_server, raise_file_limit
from testkit.fakes.slack_server import SlackServer

SECRET = "listener-secret"


def _listen(slack: SlackServer, **deadlines: int) -> Iterator[tuple[int, list[str]]]:
    """A listener on an ephemeral port whose Bolt app records the text of every `/quant` command."""
    app = App(name="bare", client=WebClient(token="xoxb-test", base_url=slack.url), signing_secret=SECRET)
    seen: list[str] = []

    @app.command("/quant")
    def on_command(ack: Any, command: dict[str, Any]) -> None:
        seen.append(command["text"])
        ack()

    server = make_server(app, "127.0.0.1", 0, **deadlines)
    server.serve_in_thread()
    yield server.port, seen
    server.shutdown()


@pytest.fixture
def listener(slack: SlackServer) -> Iterator[tuple[int, list[str]]]:
    yield from _listen(slack)


@pytest.fixture
def hasty(slack: SlackServer) -> Iterator[tuple[int, list[str]]]:
    """A listener whose deadlines for a request's head and for its body are one second."""
    yield from _listen(slack, head_seconds=1, body_seconds=1)


def _signed_command(text: str) -> tuple[bytes, dict[str, str]]:
    body = urlencode({"command": "/quant", "text": text, "team_id": "T1", "user_id": "U1", "channel_id": "C1",
                      "response_url": "http://127.0.0.1:9/respond", "trigger_id": "1"})
    timestamp = str(int(time.time()))
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=timestamp, body=body)
    return body.encode(), {"Content-Type": "application/x-www-form-urlencoded",
                           "X-Slack-Request-Timestamp": timestamp, "X-Slack-Signature": signature}


def _post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request("POST", "/slack/events", body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def _raw(port: int, request: bytes) -> bytes:
    """Send `request` as it is and read until the server closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def test_a_signed_slack_request_reaches_bolt(listener: tuple[int, list[str]]) -> None:
    port, seen = listener
    body, headers = _signed_command("help")
    status, _data = _post(port, body, headers)
    assert status == 200 and seen == ["help"]


def test_a_body_at_the_limit_is_read_and_one_over_is_refused(listener: tuple[int, list[str]]) -> None:
    port, seen = listener
    body, headers = _signed_command("x")
    padded = body + b"&pad=" + b"a" * (MAX_BODY_BYTES - len(body) - 5)
    assert len(padded) == MAX_BODY_BYTES
    unsigned, _data = _post(port, padded, headers)
    assert unsigned == 401  # read in full and handed to Bolt, whose signature check refuses it
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:  # the headers announce one byte more; the answer comes before any of the body is sent
        connection.putrequest("POST", "/slack/events")
        for key, value in {**headers, "Content-Length": str(MAX_BODY_BYTES + 1)}.items():
            connection.putheader(key, value)
        connection.endheaders()
        response = connection.getresponse()
        assert (response.status, response.getheader("Connection")) == (413, "close")
        assert b"exceeds max_body" in response.read()
    finally:
        connection.close()
    assert seen == []


def test_a_body_that_is_not_utf8_fails_the_signature_check(listener: tuple[int, list[str]]) -> None:
    port, seen = listener
    _body, headers = _signed_command("help")
    assert _post(port, b"\xff\xfecommand=%2Fquant&text=help", headers)[0] == 401 and seen == []


@pytest.mark.parametrize("length", [b"-5", b"lots"])
def test_a_malformed_length_is_a_bad_request(listener: tuple[int, list[str]], length: bytes) -> None:
    port, _seen = listener
    answer = _raw(port, b"POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Length: " + length + b"\r\n\r\n")
    assert answer.split(b"\r\n", 1)[0].endswith(b" 400 Bad Request")


def test_the_health_check_answers_and_other_paths_do_not(listener: tuple[int, list[str]]) -> None:
    port, seen = listener
    assert _raw(port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").split(b"\r\n")[0].endswith(
        b" 200 OK")
    assert b" 404 " in _raw(port, b"POST /elsewhere HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                  b"Connection: close\r\n\r\n").split(b"\r\n")[0]
    assert seen == []


def _closed_by_server(sock: socket.socket) -> bytes:
    """What the server sent before closing this connection (the socket's 10 s timeout fails the test first)."""
    sock.settimeout(10)
    chunks = []
    while chunk := sock.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def test_a_connection_without_a_complete_head_is_closed_at_its_deadline(hasty: tuple[int, list[str]]) -> None:
    port, seen = hasty
    silent = socket.create_connection(("127.0.0.1", port))
    stalled = socket.create_connection(("127.0.0.1", port))
    stalled.sendall(b"POST /slack/events HTTP/1.1\r\nHost: x\r\n")
    kept = socket.create_connection(("127.0.0.1", port))
    kept.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\nGET /heal")  # one request, then half of the next
    with silent, stalled, kept:
        assert _closed_by_server(silent) == b"" and _closed_by_server(stalled) == b""
        assert _closed_by_server(kept).split(b"\r\n")[0].endswith(b" 200 OK")
    body, headers = _signed_command("help")
    assert _post(port, body, headers)[0] == 200 and seen == ["help"]


def test_a_body_that_does_not_arrive_in_time_is_answered_408(hasty: tuple[int, list[str]]) -> None:
    port, seen = hasty
    body, headers = _signed_command("help")
    head = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(f"POST /slack/events HTTP/1.1\r\nHost: x\r\n{head}Content-Length: {len(body)}\r\n\r\n"
                     .encode() + body[:5])
        assert _closed_by_server(sock).split(b"\r\n")[0].endswith(b" 408 Request Timeout")
    assert seen == []


def test_the_open_file_limit_is_raised_to_the_hard_limit_and_a_low_one_is_named(
        caplog: pytest.LogCaptureFixture) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on open files here")
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    try:
        with caplog.at_level(logging.WARNING, logger="bot.slack.http"):
            assert raise_file_limit(wanted=hard) == hard and not caplog.records  # enough: nothing said
            assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == hard
            raise_file_limit(wanted=hard + 1)
        assert [r.getMessage() for r in caplog.records] == [
            f"open-file limit {hard} (its hard limit): the HTTP listener holds fewer than {hard + 1} connections; "
            "raise the hard limit (ulimit -Hn, systemd LimitNOFILE=) for more"]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
