"""A run's status in the assistant pane against the fake Slack Web API: set again before Slack drops it, with the
same text, until cleared; refused (not an assistant thread) it says so, so the surface posts a status message."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from slack_sdk import WebClient

from bot.core.surface import Place, Status
from bot.slack.assistant_status import AssistantStatuses
from bot.slack.surface import SlackSurface
from testkit.fakes.slack_server import Fault, SlackServer


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer() as server:
        yield server


def _sets(slack: SlackServer, thread_ts: str) -> list[str]:
    return [c.args["status"] for c in slack.fake.of("assistant.threads.setStatus") if c.ok
            and c.args.get("thread_ts") == thread_ts]


def test_a_live_status_is_set_again_until_cleared(slack: SlackServer) -> None:
    statuses = AssistantStatuses(WebClient(token="xoxb-t", base_url=slack.url), refresh_seconds=0.2)
    assert statuses.set("D1", "1.1", "is working: loading prices")
    slack.fake.wait_for("assistant.threads.setStatus", 2, timeout=10, where=lambda c: c.args.get("thread_ts") == "1.1")
    assert _sets(slack, "1.1")[:2] == ["is working: loading prices"] * 2  # the same status, set again
    statuses.clear("D1", "1.1")
    cleared = len(_sets(slack, "1.1"))
    assert _sets(slack, "1.1")[-1] == ""
    # another thread's status is refreshed twice: by then a cleared status would have been set again too
    assert statuses.set("D1", "2.2", "is working")
    slack.fake.wait_for("assistant.threads.setStatus", 3, timeout=10, where=lambda c: c.args.get("thread_ts") == "2.2")
    assert len(_sets(slack, "1.1")) == cleared
    statuses.clear("D1", "2.2")  # nothing left refreshing against a server that is about to stop


def test_a_refused_status_says_so(slack: SlackServer) -> None:
    slack.fake.inject("assistant.threads.setStatus", Fault.slack_error("channel_not_found"))
    statuses = AssistantStatuses(WebClient(token="xoxb-t", base_url=slack.url), refresh_seconds=0.2)
    assert not statuses.set("D1", "3.3", "is working")


def test_a_direct_message_thread_without_the_pane_gets_a_status_message(slack: SlackServer) -> None:
    slack.fake.inject("assistant.threads.setStatus", Fault.slack_error("channel_not_found"))
    surface = SlackSurface(WebClient(token="xoxb-t", base_url=slack.url), status_refresh_seconds=0.2)
    place = Place("T", "D1", "4.4", "UALICE")
    ref = surface.post(place, Status("slack-T-D1-4.4", ":hourglass_flowing_sand: working…"))
    (posted,) = slack.fake.of("chat.postMessage")
    assert posted.response["ts"] == ref and "working" in posted.args["text"]
    assert surface.post(place, Status("slack-T-D1-4.4", "working", step="loading")).startswith("assistant-status:")
