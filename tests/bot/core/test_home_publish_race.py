"""Two processes publishing one person's Home at once (issue 26): process A's views.publish reached Slack but its
answer is held; meanwhile a change lands and process B, asked to publish, finds A's claim and leaves it to A; once A
hears back it publishes again, so the last Home Slack shows is the newer one, and B never laid a view over it."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from slack_sdk import WebClient

from bot.core.home import Homes
from bot.core.wiring import build_core
from bot.slack.app import SLACK_SCOPE
from bot.slack.surface import SlackSurface
from bot.startup import build_context
from bot.stores.homes import HomeStore
from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from testkit.fakes.slack_faults import FaultySlack
from testkit.fakes.slack_server import SlackServer
from testkit.wait import wait_until
from tools.broker.paper import PaperConfig
from tools.broker.store import ensure_account
from tools.settings import Settings

USER = "URACE"


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    fake = FaultySlack(hold_method="views.publish")
    with SlackServer(fake) as server:
        yield server
        fake.release.set()


@dataclass
class Race:
    """Two cores (A and B, as two processes would be) on one database, and A's first publish of USER's Home under
    way: Slack took it and holds its answer until `finish`."""

    settings: Settings
    ctx: WorkflowContext
    fake: FaultySlack
    b: Homes  # B's homes: asked to publish while A holds the claim
    opened: threading.Thread

    def finish(self) -> None:
        """Let Slack answer A, and wait for A to finish publishing (again, when a change came meanwhile)."""
        self.fake.release.set()
        self.opened.join(timeout=60)
        assert not self.opened.is_alive()


@contextmanager
def publish_under_way(slack: SlackServer, tmp_path: Path) -> Iterator[Race]:
    settings = Settings(_env_file=None, DATABASE_URL=f"sqlite:///{tmp_path / 'q.db'}", QUANTDESK_DATA_DIR=str(tmp_path),
                        QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                        SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=slack.url)
    ctx = build_context(settings)
    fake = slack.fake
    assert isinstance(fake, FaultySlack)
    with open_checkpointer(settings.database_url_value) as saver_a, \
            open_checkpointer(settings.database_url_value) as saver_b:
        a, b = (build_core(ctx, saver, SlackSurface(WebClient(token="xoxb-test", base_url=slack.url)), SLACK_SCOPE)
                for saver in (saver_a, saver_b))
        assert a.homes is not None and b.homes is not None
        HomeStore(ctx.engine).opened(USER)
        fake.hold_when = lambda args: args.get("user_id") == USER  # A's first publish: taken, its answer held
        opened = threading.Thread(target=a.homes.publish, args=(USER,))
        opened.start()
        wait_until(fake.held.is_set, "A's publish held")
        yield Race(settings, ctx, fake, b.homes, opened)


def test_a_publish_under_way_is_not_overtaken_by_an_older_view(slack: SlackServer, tmp_path: Path) -> None:
    with publish_under_way(slack, tmp_path) as race:
        ensure_account(race.ctx.engine, "CNEWER", PaperConfig.from_settings(race.settings).starting_cash, USER)
        race.b.changed([USER])  # a change concerns USER; B is asked to publish it: A holds the claim
        assert len(race.fake.of("views.publish")) == 1
        race.finish()
    fake, ctx = race.fake, race.ctx
    views = [json.dumps(c.args["view"]) if not isinstance(c.args["view"], str) else c.args["view"]
             for c in fake.of("views.publish")]
    assert len(views) == 2 and "Account CNEWER" not in views[0] and "Account CNEWER" in views[1]
    assert "Account CNEWER" in json.dumps(fake.home(USER))  # the newer view is the one shown
    state = HomeStore(ctx.engine).get(USER)
    assert state is not None and state.published_version == state.version


def test_a_notice_said_while_another_process_publishes_is_shown_once(slack: SlackServer, tmp_path: Path) -> None:
    """A click's notice (a refusal, say) handled by B while A's publish is under way: A's next publish shows it, and
    the publish after that no longer does."""
    notice = "Refused: that card is no longer open."
    with publish_under_way(slack, tmp_path) as race:
        race.b.opened(USER, notice=notice)  # the click B answers: A holds the claim
        assert len(race.fake.of("views.publish")) == 1
        race.finish()
        views = [json.dumps(c.args["view"], ensure_ascii=False) for c in race.fake.of("views.publish")]
        assert len(views) == 2 and notice not in views[0] and notice in views[1]
        race.b.opened(USER)  # the next publish: the notice was said
        views = [json.dumps(c.args["view"], ensure_ascii=False) for c in race.fake.of("views.publish")]
        assert len(views) == 3 and notice not in views[2]
