"""`quantdesk serve` in Socket Mode (SLACK_APP_TOKEN set): the real Bolt app and slack_sdk's Socket Mode client
against a fake Socket Mode WebSocket server and the fake Web API, both on loopback."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from testkit.fakes.slack_server import SlackServer
from testkit.fakes.socket_mode import SocketModeServer
from testkit.slack import (
    BotProcess,
    action_payload,
    command_payload,
    event_payload,
    mention,
    message,
    new_ts,
)

ALICE = "UALICE"
@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[SlackServer, SocketModeServer]]:
    data = tmp_path_factory.mktemp("socket")
    with SlackServer() as slack, SocketModeServer() as socket:
        slack.fake.socket_url = socket.url
        bot = BotProcess(slack.url, f"sqlite:///{data / 'q.db'}", data, SLACK_APP_TOKEN="xapp-1-A1-test")
        try:
            socket.wait_connected()
            yield slack, socket
        finally:
            bot.stop()


def in_thread(channel: str, root: str):  # noqa: ANN201
    return lambda c: c.args.get("channel") == channel and c.args.get("thread_ts") == root


def test_the_app_token_opens_the_websocket(servers: tuple[SlackServer, SocketModeServer]) -> None:
    slack, socket = servers
    (opened,) = slack.fake.of("apps.connections.open")
    assert socket.connections == 1 and "xapp-1-A1-test" not in json.dumps(opened.args)  # the token goes in a header


def test_mention_question_and_thread_reply_over_the_socket(servers: tuple[SlackServer, SocketModeServer]) -> None:
    slack, socket = servers
    channel, root = "C900", new_ts()
    event = event_payload(mention(channel, ALICE, "signal rsi 600519.SH", root))
    envelope = socket.send("events_api", event)
    ack, seconds = socket.wait_ack(envelope)
    assert ack["envelope_id"] == envelope and seconds < 3  # acked before the run, not after it
    question = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                   and "date range" in str(c.args.get("text", "")))[0]
    socket.wait_ack(socket.send("events_api", event, retry_attempt=1))  # a redelivery of the same event
    socket.send("events_api", event_payload(message(channel, ALICE, "20190101 20200601", new_ts(), thread_ts=root)))
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                        and str(c.args.get("text", "")).startswith("Signal rsi"))
    slack.fake.wait_for("files.completeUploadExternal", where=lambda c: c.args.get("thread_ts") == root)
    questions = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
                 and "date range" in str(c.args.get("text", ""))]
    assert questions == [question]  # the redelivered event started nothing


def test_slash_command_and_button_over_the_socket(servers: tuple[SlackServer, SocketModeServer]) -> None:
    slack, socket = servers
    channel = "C910"
    response_url = slack.url.replace("/api/", "/respond/socket-help")
    envelope = socket.send("slash_commands", command_payload("help", channel, ALICE, response_url))
    socket.wait_ack(envelope)
    help_reply = slack.fake.wait_for("respond", where=lambda c: "signal" in str(c.args.get("text", "")))[0]
    assert help_reply.args["response_type"] == "ephemeral"

    envelope = socket.send("slash_commands", command_payload("signal 600519.SH,000001.SZ 20190101 20200601", channel,
                                                             ALICE, response_url))
    socket.wait_ack(envelope)
    root = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                               and "thread_ts" not in c.args)[0].response["ts"]
    question = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                                   and "Which strategy?" in str(c.args.get("text", "")))[0]
    blocks = question.args["blocks"]
    blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
    button = next(e for b in blocks if b["type"] == "actions" for e in b["elements"]
                  if e["text"]["text"] == "ma_cross")
    envelope = socket.send("interactive", action_payload(ALICE, channel, question.response["ts"], root, button))
    socket.wait_ack(envelope)
    slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, root)(c)
                        and str(c.args.get("text", "")).startswith("Signal ma_cross"))
    slack.fake.wait_for("chat.update", where=lambda c: c.args.get("ts") == question.response["ts"]
                        and "UALICE" in json.dumps(c.args.get("blocks")))

