"""A scheduled rule runs once per tick however many processes run the scheduler pass: two front doors on one
database see the same minute, one roots the run's thread in the rule's channel and queues it, and the run
reaches that thread."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from bot.context import build_context
from bot.jobs import start_in_process_worker
from bot.slack.serve import build_front_door
from graphs.checkpointer import open_checkpointer
from tests.fakes.slack_server import SlackServer
from tests.slack_harness import in_thread, text_of, wait_until
from tools.rule_store import RuleStore
from tools.settings import Settings

OWNER = "UOWNER"
LANGUAGE = "buy when close > ma(30); sell when close < ma(30)"


def test_two_processes_start_a_ticks_run_once_in_a_new_thread(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    with SlackServer() as slack:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path),
                            QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack.url)
        app = build_context(settings)
        saved = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)  # a Monday, 09:00 in Shanghai
        store = RuleStore(app.engine, frozenset(), clock=lambda: saved)
        rule = store.add(OWNER, "C5100", "600519.SH", LANGUAGE, source="language", schedule="30 9 * * 1-5", size=100)
        with open_checkpointer(url) as saver:
            (_a, first), (_b, second) = build_front_door(app, saver), build_front_door(app, saver)
            worker = start_in_process_worker(first.queue, first)  # runs what either process queued
            tick = datetime(2026, 11, 23, 1, 30, 20, tzinfo=UTC)  # 09:30:20 Shanghai: the 09:30 tick is due
            first.schedule_rules(tick)
            second.schedule_rules(tick)
            first.schedule_rules(datetime(2026, 11, 23, 1, 31, 5, tzinfo=UTC))  # the next minute: nothing new
            roots = [c for c in slack.fake.of("chat.postMessage")
                     if c.args.get("channel") == "C5100" and "thread_ts" not in c.args]
            assert [text_of(c) for c in roots] == [
                f"Rule {rule.id} (600519.SH): scheduled run for 2026-11-23 01:30 UTC, owner <@{OWNER}>"]
            root = roots[0].response["ts"]
            ran = wait_until(lambda: [c for c in slack.fake.of("chat.postMessage")
                                      if in_thread("C5100", root)(c) and "waiting" not in text_of(c)
                                      and "working" not in text_of(c)], "the scheduled run's answer")
            assert ran
            steps = store.steps(rule.id)
            assert steps[0].execution_id == f"rule{rule.id}-20261123T0130Z"
            assert steps[-1].action_type == "decision"
            if worker is not None:
                worker.stop()
