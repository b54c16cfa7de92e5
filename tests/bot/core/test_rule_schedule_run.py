"""A scheduled rule runs once per tick however many processes run the scheduler pass: two cores on one
database see the same minute, one roots the run's thread in the rule's channel and queues it, and the run
reaches that thread; a scheduler killed between the root post and the enqueue leaves one root, which the next
pass finds and runs in. A run queued before its rule was paused (even if resumed since) does nothing; a run that
crashes counts toward the rule's auto-pause."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.core import Core
from bot.slack.serve import slack_core
from bot.startup import AppServices, build_context
from graphs.checkpointer import open_checkpointer
from testkit.child_process import kill_child_when
from testkit.fakes.slack_server import SlackServer
from testkit.rules import add_scheduled
from testkit.slack import in_thread, run_background_job, text_of
from testkit.wait import wait_until
from tools.broker.proposal_claims import live_claims
from tools.rules.store import RuleStore, order_tag
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
        rule = add_scheduled(store, OWNER, "C5100", "600519.SH", LANGUAGE, "30 9 * * 1-5", source="language", size=100)
        with open_checkpointer(url) as saver:
            first, second = slack_core(app, saver), slack_core(app, saver)
            worker = first.queue.start_worker(first)  # runs what either process queued
            tick = datetime(2026, 11, 23, 1, 30, 20, tzinfo=UTC)  # 09:30:20 Shanghai: the 09:30 tick is due
            run_background_job(first, "rule schedules", tick)
            run_background_job(second, "rule schedules", tick)
            next_minute = datetime(2026, 11, 23, 1, 31, 5, tzinfo=UTC)
            run_background_job(first, "rule schedules", next_minute)  # nothing new
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
            worker.stop()


SAVED = datetime(2026, 11, 23, 1, 0, tzinfo=UTC)  # a Monday, 09:00 in Shanghai
TICK = datetime(2026, 11, 23, 1, 30, 20, tzinfo=UTC)  # 09:30:20 Shanghai: the 09:30 tick is due


@contextmanager
def _front_door(tmp_path: Path, **env: Any) -> Iterator[tuple[SlackServer, AppServices, Core]]:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    with SlackServer() as slack:
        settings = Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path),
                            QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_SIGNING_SECRET="secret", SLACK_API_URL=slack.url,
                            **env)
        app = build_context(settings)
        with open_checkpointer(url) as saver:
            yield slack, app, slack_core(app, saver)


def _thread_reply(slack: SlackServer, channel: str, containing: str) -> str:
    """The text of the first post into a scheduled run's thread in `channel` that contains `containing`."""
    def found() -> str | None:
        return next((text_of(c) for c in slack.fake.of("chat.postMessage")
                     if c.args.get("channel") == channel and c.args.get("thread_ts") and containing in text_of(c)),
                    None)
    return wait_until(found, f"a post containing {containing!r}")


def test_a_run_queued_before_its_rule_was_paused_does_nothing(tmp_path: Path) -> None:
    with _front_door(tmp_path) as (slack, app, door):
        store = RuleStore(app.engine, frozenset(), clock=lambda: SAVED)
        rule = add_scheduled(store, OWNER, "C5200", "600519.SH", LANGUAGE, "30 9 * * 1-5", source="language",
                             size=100)
        run_background_job(door, "rule schedules", TICK)  # queued; no worker has taken it yet
        store.pause(rule.id, OWNER)
        worker = door.queue.start_worker(door)
        reply = _thread_reply(slack, "C5200", "nothing was run")
        assert reply == f"Rule {rule.id} was paused after this run was queued; nothing was run."
        assert store.steps(rule.id) == []
        worker.stop()


def test_a_run_queued_before_its_rule_was_paused_and_resumed_does_nothing(tmp_path: Path) -> None:
    with _front_door(tmp_path) as (slack, app, door):
        clock = [SAVED]
        store = RuleStore(app.engine, frozenset(), clock=lambda: clock[0])
        rule = add_scheduled(store, OWNER, "C5250", "600519.SH", LANGUAGE, "30 9 * * 1-5", source="language",
                             size=100)
        run_background_job(door, "rule schedules", TICK)  # queued; no worker has taken it yet
        clock[0] = TICK + timedelta(minutes=1)
        store.pause(rule.id, OWNER)
        clock[0] = TICK + timedelta(minutes=2)
        store.resume(rule.id, OWNER)
        worker = door.queue.start_worker(door)
        reply = _thread_reply(slack, "C5250", "nothing was run")
        assert reply == (f"Rule {rule.id} was paused and resumed, or its schedule was changed, after this run "
                         "(2026-11-23 01:30 UTC) was queued; nothing was run.")
        assert store.steps(rule.id) == []
        worker.stop()


def _roots(slack: SlackServer, channel: str) -> list[str]:
    """The ts of every top-level post in `channel`."""
    return [c.response["ts"] for c in slack.fake.of("chat.postMessage")
            if c.args.get("channel") == channel and "thread_ts" not in c.args and c.ok]


def test_a_scheduler_killed_between_the_root_post_and_the_enqueue_leaves_one_root(tmp_path: Path) -> None:
    """SIGKILL after the scheduled run's root reached Slack and before its run was queued: the tick stays claimed;
    a pass after LOST_CLAIM takes it over, finds the root by its metadata in the channel's history, and queues the
    run into that thread instead of posting a second root."""
    with _front_door(tmp_path) as (slack, app, door):
        store = RuleStore(app.engine, frozenset(), clock=lambda: SAVED)
        rule = add_scheduled(store, OWNER, "C5500", "600519.SH", LANGUAGE, "30 9 * * 1-5", source="language",
                             size=100)
        marker = tmp_path / "root-posted"
        kill_child_when("testkit.children.rule_root_crash", [str(app.engine.url), str(tmp_path), slack.url,
                                                        TICK.isoformat(), str(marker)], tmp_path,
                        [(marker.exists, "the root post, before the enqueue")], 120.0)
        (root,) = _roots(slack, "C5500")
        assert store.steps(rule.id) == []  # nothing ran in the killed process
        worker = door.queue.start_worker(door)
        # the claim is lost: this pass takes it over
        run_background_job(door, "rule schedules", TICK + timedelta(minutes=3))
        answered = wait_until(lambda: [c for c in slack.fake.of("chat.postMessage")
                                       if in_thread("C5500", root)(c) and "waiting" not in text_of(c)
                                       and "working" not in text_of(c)], "the run's answer in the first root's thread")
        assert answered
        assert _roots(slack, "C5500") == [root]  # no second root
        assert slack.fake.of("conversations.history")  # it looked before posting
        assert {s.execution_id for s in store.steps(rule.id)} == {f"rule{rule.id}-20261123T0130Z"}
        worker.stop()


class _CrashingBroker:
    """A paper account that fails in a way no node expects: the error escapes the graph."""

    def __init__(self, name: str, opened_by: str | None) -> None:
        raise RuntimeError("the broker blew up")


def test_a_scheduled_run_that_crashes_counts_toward_auto_pause(tmp_path: Path) -> None:
    with _front_door(tmp_path, QUANTDESK_RULE_MAX_FAILURES=1) as (slack, app, door):
        store = RuleStore(app.engine, frozenset(), clock=lambda: SAVED)
        rule = add_scheduled(store, OWNER, "C5300", "600519.SH", "buy when close > 0; sell when close < 0",
                             "30 9 * * 1-5", source="language", size=100)
        door.runner.context.broker = _CrashingBroker  # the run decides buy, then proposing the order crashes
        worker = door.queue.start_worker(door)
        run_background_job(door, "rule schedules", TICK)
        notice = _thread_reply(slack, "C5300", "is paused")
        assert notice == (f":pause_button: Rule {rule.id} is paused after repeated failures; its owner {OWNER} can "
                          f"`rule resume {rule.id}` once it is fixed.")
        paused = store.get(rule.id)
        assert paused is not None and (paused.enabled, paused.consecutive_failures) == (False, 1)
        assert paused.paused_reason == ("paused after 1 consecutive failures; last: Something went wrong in this run; "
                                        "it was logged. You can try again or start a new request.")
        assert store.steps(rule.id)[-1].action_data["action"]["action"] == "buy"  # it got as far as its decision
        assert live_claims(app.engine, order_tag(rule.id), datetime.now(UTC)) == []  # the crashed run showed no
        # order card: its claim is given back
        worker.stop()


def test_a_typed_execution_id_cannot_pose_as_a_schedule_tick(tmp_path: Path) -> None:
    """A scheduled run is a structured request only the background service queues: typed, it is no rule run."""
    from bot.jobs.inbox import Message

    with _front_door(tmp_path) as (slack, app, door):
        store = RuleStore(app.engine, frozenset(), clock=lambda: SAVED)
        rule = add_scheduled(store, OWNER, "C5400", "600519.SH", LANGUAGE, "30 9 * * 1-5", source="language",
                             size=100)
        door.run_text(Message("C5400:1.1", "T1", "C5400", "1.1", OWNER,
                              f"rule run {rule.id} execution=rule{rule.id}-20261123T0130Z"))
        reply = _thread_reply(slack, "C5400", "Usage")
        assert reply == "Usage: `rule run ID` (the IDs: `rule list`); `rule help` lists every rule command."
        assert store.steps(rule.id) == []
