"""The Feishu surface on PostgreSQL: `serve --surface feishu` runs its jobs in a `quantdesk worker` child process,
which is started with `--surface feishu` (its parent's queue) (only FEISHU_APP_ID configured); a mention's clarify
question is answered in its thread and the result is posted there once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.fakes.feishu_server import FeishuServer
from testkit.feishu import FeishuBot, card_text, deliver, message_event, new_id
from testkit.pg import migrated_pg_database
from testkit.wait import wait_until


@pytest.fixture
def own_pg() -> Iterator[str]:
    """A migrated PostgreSQL database of this test's own."""
    with migrated_pg_database() as url:
        yield url


def test_a_clarify_flow_runs_on_the_worker_child(feishu: FeishuServer, own_pg: str, tmp_path: Path) -> None:
    bot = FeishuBot(feishu.url, own_pg, tmp_path)
    chat, root = "oc_pg", new_id()
    try:
        assert deliver(bot.url, message_event(chat, "ou_alice", "signal rsi 600519.SH", root))[0] == 200
        wait_until(lambda: [c for c in feishu.fake.thread(root) if "date range" in card_text(c.card or {})],
                   "the question")
        assert deliver(bot.url, message_event(chat, "ou_alice", "20190101 20200601", new_id(), root,
                                              mention_bot=False))[0] == 200
        wait_until(lambda: [c for c in feishu.fake.thread(root) if "Signal rsi" in card_text(c.card or {})],
                   "the result")
    finally:
        bot.stop()
    results = [c for c in feishu.fake.thread(root) if "Signal rsi" in card_text(c.card or {})]
    assert len({c.message_id for c in results}) == 1
