"""Long prose streamed by the Slack surface against the fake Slack Web API: chat.startStream to the human (with their
team in a channel, not in a direct message), the message's ts handed over before any more is sent, appendStream in
chunks, stopStream with the post's key; where Slack refuses to stream, a keyed message updated as it goes."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from bot.core.surface import Place, Prose
from bot.slack.surface import STREAM_CHUNK, SlackSurface
from testkit.fakes.slack_server import Fault, SlackServer

REPORT = "\n".join(f"Line {n}: the close held above its 20-day average." for n in range(80))  # a few chunks
WHOLE = f"*Market analyst's report*\n{REPORT}"


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer() as server:
        yield server


def _surface(slack: SlackServer) -> SlackSurface:
    return SlackSurface(WebClient(token="xoxb-t", base_url=slack.url))


def test_a_report_streams_in_chunks_to_the_human(slack: SlackServer) -> None:
    started: list[tuple[str, int]] = []
    place = Place("T1", "C1", "100.1", "UALICE")
    ts = _surface(slack).stream(place, Prose("Market analyst's report", REPORT), "prose:k1",
                                lambda ref: started.append((ref, len(slack.fake.calls))))
    (start,) = slack.fake.of("chat.startStream")
    assert start.args["recipient_user_id"] == "UALICE" and start.args["recipient_team_id"] == "T1"
    assert started == [(ts, slack.fake.calls.index(start) + 1)]  # handed over before the first append
    appends = slack.fake.of("chat.appendStream")
    assert len(appends) == -(-len(WHOLE) // STREAM_CHUNK) - 1 and all(a.args["ts"] == ts for a in appends)
    (stop,) = slack.fake.of("chat.stopStream")
    assert stop.args["metadata"]["event_payload"]["key"] == "prose:k1"
    (message,) = slack.fake.replies("C1", "100.1")
    assert message["text"] == WHOLE


def test_in_a_direct_message_the_stream_names_no_team(slack: SlackServer) -> None:
    _surface(slack).stream(Place("T1", "D1", "100.2", "UALICE"), Prose("t", "x"), "prose:k2", lambda ref: None)
    (start,) = slack.fake.of("chat.startStream")
    assert start.args["recipient_user_id"] == "UALICE" and "recipient_team_id" not in start.args


def test_where_streaming_is_refused_a_message_is_updated_as_it_goes(slack: SlackServer) -> None:
    slack.fake.inject("chat.startStream", Fault.slack_error("not_allowed"))
    started: list[str] = []
    ts = _surface(slack).stream(Place("T1", "C1", "100.3", "UALICE"), Prose("Market analyst's report", REPORT),
                                "prose:k3", started.append)
    (posted,) = slack.fake.of("chat.postMessage")
    assert started == [ts] == [posted.response["ts"]] and len(posted.args["text"]) == STREAM_CHUNK
    updates = slack.fake.of("chat.update")
    assert updates and updates[-1].args["text"] == WHOLE
    (message,) = slack.fake.replies("C1", "100.3")
    assert message["text"] == WHOLE
