"""A request is acknowledged whatever the load (issue 39, item 1): `quantdesk serve` (real Bolt app, signed
requests, the fake Slack Web API) with every job slot busy on slow runs (each held in its first Slack call); a new
mention in another thread gets its :eyes: within 1 s and, after 2 s in the queue, a line saying so; the host is
killed and started again in between; once slots free the queued line becomes the run's status and the answer
comes. Nothing is posted twice: one acknowledgement, one status line and one result per thread. On SQLite (the
in-process executor) and PostgreSQL (serve's worker child)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from testkit.fakes.slack_faults import GatedSlack
from testkit.fakes.slack_server import Call, SlackServer
from testkit.pg import migrated_pg_database
from testkit.slack import BotProcess, event_body, in_thread, mention, new_ts, post, text_of
from testkit.wait import wait_until

ALICE, BOB = "UALICE", "UBOB"
SLOW, FREE = "C3901", "C3902"
SLOTS = "2"
WORKING = ":hourglass_flowing_sand: working…"
QUEUED = ":hourglass: queued"
REQUEST = "signal ma_cross 000001.SZ,600000.SH 20200101 20200630"
RESULT = "Signal ma_cross"
# a killed host's claims lapse after 2 s, its stalled jobs (PostgreSQL) are retried after 3 s
FAST = {"QUANTDESK_JOB_CONCURRENCY": SLOTS, "QUANTDESK_RECONCILE_INTERVAL": "0.5",
        "QUANTDESK_DECISION_CLAIM_SECONDS": "2", "QUANTDESK_JOB_STALLED_TIMEOUT": "3"}


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    fake = GatedSlack()
    # a slow run's status line, posted, or made of its queued line (the worker child may start after 2 s)
    fake.gate_when = lambda method, args: (method in ("chat.postMessage", "chat.update")
                                           and args.get("channel") == SLOW and args.get("text") == WORKING)
    with SlackServer(fake) as server:
        yield server
    fake.gate.set()


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'q.db'}"
        return
    with migrated_pg_database() as url:
        yield url


def _mention(bot: BotProcess, channel: str, root: str) -> None:
    status, _ = post(bot.url, event_body(mention(channel, ALICE if channel == SLOW else BOB, REQUEST, root)),
                     "application/json")
    assert status == 200


def _posts(slack: SlackServer, channel: str, root: str, start: str) -> list[Call]:
    return [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
            and text_of(c).startswith(start)]


def _reactions(slack: SlackServer, ts: str) -> list[Call]:
    return [c for c in slack.fake.of("reactions.add") if c.args.get("timestamp") == ts]


def test_a_mention_is_acknowledged_at_once_while_every_slot_is_busy(slack: SlackServer, database: str,
                                                                    tmp_path: Path) -> None:
    fake = slack.fake
    assert isinstance(fake, GatedSlack)
    bot = BotProcess(slack.url, database, tmp_path, **FAST)
    slow = [new_ts() for _ in range(int(SLOTS))]
    for root in slow:
        _mention(bot, SLOW, root)
    wait_until(lambda: fake.gated() == len(slow), "every job slot held by a slow run", 60)

    root = new_ts()
    sent = time.monotonic()
    _mention(bot, FREE, root)
    (seen,) = wait_until(lambda: _reactions(slack, root), "the mention's acknowledgement", 1.0)
    assert seen.args["name"] == "eyes" and seen.args["channel"] == FREE and seen.at - sent < 1.0
    (queued,) = wait_until(lambda: _posts(slack, FREE, root, QUEUED), "the queued line", 10)
    assert queued.at - sent >= 2.0 and "this request is next" in text_of(queued), text_of(queued)
    assert not _posts(slack, FREE, root, WORKING) and not _posts(slack, FREE, root, RESULT)  # no slot was free

    assert bot.kill_host() == -9  # with two runs held and the mention queued
    fake.gate.set()  # the held posts reached Slack; the killed host never learnt their ts
    again = BotProcess(slack.url, database, tmp_path, **FAST)
    try:
        for channel, thread in [(SLOW, r) for r in slow] + [(FREE, root)]:
            wait_until(lambda c=channel, t=thread: _posts(slack, c, t, RESULT), f"the answer in {thread}", 180)
    finally:
        again.stop()

    status_ts = queued.response["ts"]
    becomes = [text_of(c) for c in fake.of("chat.update") if c.args.get("ts") == status_ts]
    assert becomes and becomes[0] == WORKING and becomes[-1] == ":white_check_mark: done", becomes
    assert not _posts(slack, FREE, root, WORKING)  # the queued line became the status line
    assert len(_reactions(slack, root)) == 1
    for channel, thread in [(SLOW, r) for r in slow] + [(FREE, root)]:
        assert len(_posts(slack, channel, thread, RESULT)) == 1, thread
        assert len(_posts(slack, channel, thread, WORKING) + _posts(slack, channel, thread, QUEUED)) == 1, thread
