"""A SIGKILL between approval and fill: exactly one fill after restart (issue 13). `quantdesk serve` runs as a real
process with a trader configured; an order is proposed and approved in Slack, and the process is killed at one
of four moments: right after the click was accepted (before the resume ran), in the middle of the resumed run
(when it reports placing the order), after the order filled but before the result was posted, and after the
result reached Slack but before its ts was saved. A new process on the same database (SQLite, PostgreSQL)
finishes the work: one order, one fill, one cash movement, one result post."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot.stores.records import DecisionRecord, PostRecord
from bot.stores.threads import thread_id_for
from testkit.fakes.slack_faults import FaultySlack, post_key
from testkit.fakes.slack_server import TEAM, Call, SlackServer
from testkit.slack import BotProcess, action_body, button_of, command_body, in_thread, post, text_of
from testkit.wait import wait_until
from tools.broker.records import CashEntry, OrderEvent, PaperFill, PaperOrder
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

TRADER, ALICE = "UTRADER", "UALICE"
ORDER = "order 600519.SH buy 100"
FORM = "application/x-www-form-urlencoded"
WORKING = ":hourglass_flowing_sand: working…"
# a dead process's claims lapse in 2 s, and on PostgreSQL its running job (holding the thread's queue lock) is
# retried after 3 s without a heartbeat
FAST = {"QUANTDESK_RECONCILE_INTERVAL": "0.5", "QUANTDESK_DECISION_CLAIM_SECONDS": "2",
        "QUANTDESK_JOB_STALLED_TIMEOUT": "3", "QUANTDESK_TRADERS": TRADER}
MOMENTS = ("after the click", "mid-run", "after the fill", "result posted, ts lost")

@dataclass
class HoldingSlack(FaultySlack):
    """FaultySlack that can also hold one chat.update: Slack applied it, the bot waits for the answer (and is
    killed meanwhile)."""

    hold_update_when: Callable[[dict[str, Any]], bool] | None = None

    def answer(self, method: str, args: dict[str, Any]) -> dict[str, Any]:
        response = super().answer(method, args)
        if method == "chat.update" and self.hold_update_when and self.hold_update_when(args):
            self.hold_update_when = None
            self.held.set()
            self.release.wait(timeout=120)
        return response


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    server = SlackServer(HoldingSlack())
    with server:
        yield server
        server.fake.release.set()  # type: ignore[attr-defined]  # never leave a handler thread waiting


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'q.db'}"
        return
    url = request.getfixturevalue("fresh_pg_url")
    engine = make_engine(url)
    upgrade(engine)  # `serve` on PostgreSQL expects a migrated database (`quantdesk db upgrade`)
    engine.dispose()
    yield url


@pytest.fixture
def engine(database: str) -> Iterator[Engine]:
    engine = make_engine(database)
    yield engine
    engine.dispose()


def _start(slack: SlackServer, database: str, data: Path) -> BotProcess:
    return BotProcess(slack.url, database, data, **FAST)


def _propose(slack: SlackServer, bot: BotProcess, channel: str) -> tuple[str, Call]:
    """`/quant order …` by the requester: (the thread's root ts, the approval card)."""
    status, _ = post(bot.url, command_body(ORDER, channel, ALICE, slack.url.replace("/api/", "/respond/x")), FORM)
    assert status == 200
    (root,) = slack.fake.wait_for("chat.postMessage", where=lambda c: c.args.get("channel") == channel
                                  and not c.args.get("thread_ts"))
    ts = str(root.response["ts"])
    card = slack.fake.wait_for("chat.postMessage", where=lambda c: in_thread(channel, ts)(c)
                               and text_of(c).startswith("Approval needed: "))[0]
    return ts, card


def _hold(fake: HoldingSlack, moment: str, channel: str, root: str) -> None:
    """Make Slack hold the bot's call at `moment` of the resumed run (set once the card is posted, so the
    proposal's own status message is not the one held)."""
    here = in_thread(channel, root)
    if moment == "after the click":  # the resume job posts its status message, then resumes the graph
        fake.hold_when = lambda args: args.get("channel") == channel and args.get("thread_ts") == root \
            and args.get("text") == WORKING
    elif moment == "mid-run":  # the submit node reports placing the order before it calls the broker
        fake.hold_update_when = lambda args: args.get("channel") == channel \
            and str(args.get("text", "")).startswith(":hourglass_flowing_sand: placing the order")
    elif moment == "after the fill":  # the run ended (the order filled); the status turns "done" before the result
        fake.hold_update_when = lambda args: args.get("channel") == channel \
            and args.get("text") == ":white_check_mark: done"
    else:  # Slack accepts the result; the bot never learns its ts
        fake.hold_when = lambda args: here(Call("chat.postMessage", args)) \
            and str(args.get("text", "")).startswith("Order ")


def _settled(engine: Engine, thread: str) -> bool:
    """The decision is applied and every post of the thread is complete: nothing more can be posted."""
    with Session(engine) as session:
        decisions = session.scalars(select(DecisionRecord).where(DecisionRecord.thread_id == thread)).all()
        posts = session.scalars(select(PostRecord).where(PostRecord.thread_id == thread)).all()
    return bool(decisions) and all(d.applied_at for d in decisions) and all(p.completed_at for p in posts)


def _exactly_once(slack: SlackServer, engine: Engine, channel: str, root: str) -> None:
    thread = thread_id_for(TEAM, channel, root)
    wait_until(lambda: _settled(engine, thread), "the decision applied and every post complete", 120)
    with Session(engine) as session:
        orders = session.scalars(select(PaperOrder).where(PaperOrder.account == channel)).all()
        assert [(o.status, o.quantity, o.approved_by) for o in orders] == [("filled", 100, TRADER)]
        order = orders[0]
        fills = session.scalars(select(PaperFill).where(PaperFill.account == channel)).all()
        assert [(f.order_id, f.quantity) for f in fills] == [(order.id, 100)]
        cash = session.scalars(select(CashEntry).where(CashEntry.order_id == order.id)).all()
        assert sorted(c.kind for c in cash) == ["buy", "fees"]  # the cash moved once
        events = [e.event for e in session.scalars(select(OrderEvent).where(
            OrderEvent.client_order_id == order.client_order_id).order_by(OrderEvent.id)).all()]
    assert events == ["proposed", "approved", "submitted", "filled"]  # each step audited once
    results = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c) and c.ok
               and text_of(c).startswith(f"Order {order.id} filled: BUY 100 600519.SH")]
    assert len(results) == 1 and post_key(results[0].args).startswith("result:")
    cards = [c for c in slack.fake.of("chat.postMessage") if in_thread(channel, root)(c)
             and text_of(c).startswith("Approval needed: ")]
    assert len(cards) == 1  # the approved card is not asked again


@pytest.mark.parametrize("moment", MOMENTS)
def test_sigkill_between_approval_and_fill_fills_exactly_once(slack: SlackServer, database: str, engine: Engine,
                                                              tmp_path: Path, moment: str) -> None:
    fake: HoldingSlack = slack.fake  # type: ignore[assignment]
    channel = f"C95{MOMENTS.index(moment)}"
    bot = _start(slack, database, tmp_path / "first")
    try:
        root, card = _propose(slack, bot, channel)
        _hold(fake, moment, channel, root)
        status, _ = post(bot.url, action_body(TRADER, channel, card.response["ts"], root,
                                              button_of(card, "review_approve")), FORM)
        assert status == 200  # acked: the decision row is in the database
        assert fake.held.wait(timeout=120), f"the bot never reached the held call ({moment})"
    finally:
        assert bot.kill() == -9
    fake.release.set()
    with Session(engine) as session:
        placed = session.scalars(select(PaperOrder).where(PaperOrder.account == channel)).all()
    if moment == "after the click":
        assert placed == []  # killed before the graph was resumed
    elif moment != "mid-run":
        assert [o.status for o in placed] == ["filled"]  # killed after the fill was committed

    again = _start(slack, database, tmp_path / "second")
    try:
        _exactly_once(slack, engine, channel, root)
    finally:
        again.stop()
    assert "Traceback" not in again.output(), again.output()
