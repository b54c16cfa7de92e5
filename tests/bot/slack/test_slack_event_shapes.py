"""Event shapes the bot does not act on, sent signed over HTTP to the real Bolt app (in process, on SQLite, behind
serve's HTTP listener) with the fake Slack Web API: acked, ignored with a debug line, no error, nothing posted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.slack.app import build_app
from bot.slack.http import make_server
from bot.slack.serve import slack_core
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.fakes.slack_server import SlackServer
from testkit.slack import SECRET, event_body, in_thread, mention, new_ts, post
from testkit.wait import wait_until
from tools.settings import Settings

EVENTS = "bot.slack.listeners.events"


@pytest.fixture
def slack_url(tmp_path: Path) -> Iterator[tuple[SlackServer, str]]:
    """The fake Slack API and the URL of QuantDesk's Bolt app listening for events."""
    with SlackServer() as slack:
        settings = Settings(SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET=SECRET, SLACK_API_URL=slack.url,
                            QUANTDESK_DATA_DIR=str(tmp_path), DATABASE_URL=f"sqlite:///{tmp_path / 'q.db'}")
        ctx = build_context(settings)
        with open_checkpointer(settings.database_url_value) as checkpointer:
            core = slack_core(ctx, checkpointer)
            server = make_server(build_app(settings, core.surface.client, core),  # type: ignore[attr-defined]
                                 "127.0.0.1", 0)
            server.serve_in_thread()
            try:
                yield slack, f"http://127.0.0.1:{server.port}/slack/events"
            finally:
                server.shutdown()


def test_a_mention_without_a_user_is_ignored_with_a_debug_line(slack_url: tuple[SlackServer, str],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    slack, url = slack_url
    caplog.set_level(logging.DEBUG, logger=EVENTS)
    event = mention("CNOUSER", "UNOBODY", "help", new_ts())
    del event["user"]
    event.update(subtype="bot_message", bot_id="BOTHER")
    assert post(url, event_body(event), "application/json")[0] == 200
    wait_until(lambda: [r for r in caplog.records if r.name == EVENTS and "without a user" in r.getMessage()],
               "the listener's debug line")
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "a listener failed"
    assert not [c for c in slack.fake.of("chat.postMessage") if c.args.get("channel") == "CNOUSER"]
    # the same mention from a person is answered
    root = new_ts()
    assert post(url, event_body(mention("CPERSON", "UALICE", "help", root)), "application/json")[0] == 200
    slack.fake.wait_for("chat.postMessage", where=in_thread("CPERSON", root))
