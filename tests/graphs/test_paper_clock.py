"""The simulated session clock (issue 28, item 12): `clock`, `clock next`, `clock set DATE` on the bundled sample
(bars through Monday 2020-08-24, Friday 2020-08-21 before it). A new clock starts 20 sessions before the data's last
day (issue 39, item 8): Monday 2020-07-27, the weekdays from it to 2020-08-21 being 20 sessions without a holiday.
Moving it settles, marks and lets T+1 pass; only traders move it, never on live data; every move is recorded; a card
made before a move lapses with its session; each dead end names its way out."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from graphs.order.clock import clock_command
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from testkit.graph_thread import GraphThread
from testkit.market import JUNE, market
from testkit.paper import paper_context
from tools.broker.checks import RiskLimits
from tools.broker.clock import SHANGHAI
from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRejected, OrderRequest
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.records import OrderEvent, PaperOrder
from tools.broker.sim_clock import paper_clock
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base

TRADER, OTHER = "UTRADER", "UALICE"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.3"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))
SIMULATED_NOW = datetime(2026, 1, 5, 10, 0, tzinfo=SHANGHAI)  # years after the sample's last bar
LIVE_NOW = datetime(2020, 8, 25, 10, 0, tzinfo=SHANGHAI)  # the morning after it: the data is live


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _ctx(engine: Engine, sandbox: Sandbox, provider: SampleProvider, now: datetime = SIMULATED_NOW) -> WorkflowContext:
    return paper_context(engine, sandbox, provider, traders={TRADER}, admins={OTHER}, now=now)


def _clock(ctx: WorkflowContext, line: str, user: str = TRADER) -> View:
    return clock_command(CommandCall(ctx, line.split()[1:], user, "c1"))


def _order(cid: str, side: str, quantity: int = 100) -> OrderRequest:
    return OrderRequest(cid, "000001.SZ", side, quantity, "market", None, reason="test",  # type: ignore[arg-type]
                        approved_by=TRADER)


def _moves(engine: Engine) -> list[tuple[str | None, dict]]:
    with Session(engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.event == "clock moved").order_by(OrderEvent.id))
        return [(r.actor, {k: r.detail[k] for k in ("from", "to")}) for r in rows]


def test_clock_next_lets_yesterdays_buy_be_sold_at_the_next_session(own_engine: Engine, sandbox: Sandbox,
                                                                     provider: SampleProvider) -> None:
    ctx = _ctx(own_engine, sandbox, provider)
    shown = _clock(ctx, "clock")
    assert shown.summary.startswith("Simulated clock: the session is 20200727")
    assert shown.lines[0].startswith("`clock next` moves it to 20200728")
    assert "Never moved: a new clock starts 20 of the data's sessions before its last day" in shown.lines[1]
    broker = PaperBroker(own_engine, provider, "a1", CONFIG, now=lambda: SIMULATED_NOW)
    bought = broker.submit(_order("a1-buy", "buy"))
    assert (bought.status, bought.session_date, bought.fills[0].price) == ("filled", "20200727", Decimal("13.24"))
    assert broker.positions()[0].sellable == 0
    with pytest.raises(OrderRejected, match=r"sellable.*become sellable when the simulated clock moves to the next "
                                            r"session: `clock next`, then propose the sell again"):
        broker.submit(_order("a1-sell-early", "sell"))

    moved = _clock(ctx, "clock next")
    assert moved.summary.startswith("The simulated clock moved from 20200727 to 20200728 (by UTRADER")
    assert broker.clock().today == "20200728"
    (position,) = broker.positions()
    assert (position.sellable, position.price, position.price_date) == (100, Decimal("13.34"), "20200728")
    assert broker.marks()[-1][0] == "20200728"  # the move marked the account at the new session's closes
    sold = broker.submit(_order("a1-sell", "sell"))
    assert (sold.status, sold.fills[0].trade_date, sold.fills[0].price) == ("filled", "20200728", Decimal("13.34"))
    assert broker.positions() == ()
    back = _clock(ctx, "clock set 20200824")
    assert back.summary.startswith("The simulated clock moved from 20200728 to 20200824 (by UTRADER")
    assert _moves(own_engine) == [(TRADER, {"from": "20200727", "to": "20200728"}),
                                  (TRADER, {"from": "20200728", "to": "20200824"})]
    shown = _clock(ctx, "clock", user=OTHER)
    assert f"Last moved by {TRADER} at " in "\n".join(shown.lines)


def test_the_clock_moves_back_over_days_no_order_is_dated_on(sqlite_engine: Engine, sandbox: Sandbox,
                                                             provider: SampleProvider) -> None:
    ctx = _ctx(sqlite_engine, sandbox, provider)
    _clock(ctx, "clock set 20200824")
    back = _clock(ctx, "clock set 2020-08-21")
    assert back.summary.startswith("The simulated clock moved back from 20200824 to 20200821 (by UTRADER")
    assert paper_clock(sqlite_engine, provider, 7, SIMULATED_NOW).today == "20200821"


def test_only_traders_move_the_clock_and_anyone_may_look(sqlite_engine: Engine, sandbox: Sandbox,
                                                         provider: SampleProvider) -> None:
    ctx = _ctx(sqlite_engine, sandbox, provider)
    for line in ("clock next", "clock set 20200821"):
        with pytest.raises(CommandError, match=r"Only traders \(`roles` lists them\) can move the clock"):
            _clock(ctx, line, user=OTHER)
    shown = _clock(ctx, "clock", user=OTHER)
    assert shown.summary.startswith("Simulated clock: the session is 20200727")
    assert _moves(sqlite_engine) == []
    _clock(ctx, "clock set 20200824")
    assert "`clock next` cannot move it: the data ends at 20200824" in _clock(ctx, "clock", user=OTHER).lines[0]


def test_on_live_data_the_clock_is_the_real_one(sqlite_engine: Engine, sandbox: Sandbox,
                                                provider: SampleProvider) -> None:
    ctx = _ctx(sqlite_engine, sandbox, provider, now=LIVE_NOW)
    assert _clock(ctx, "clock").summary.startswith("Live clock: today is 20200825")
    for line in ("clock next", "clock set 20200821"):
        with pytest.raises(CommandError, match=r"the clock is the real one on live data \(the bundled sample data "
                                               r"has bars through 20200824; today is 20200825"):
            _clock(ctx, line)
    assert _moves(sqlite_engine) == []


@pytest.mark.parametrize("line, message", [
    ("clock next", "the data ends at 20200824, so the simulated clock cannot move to 20200825: it moves only over "
                   "days the data has bars for, since fills need bars. `clock set DATE` moves it back to an earlier "
                   "session no order is dated after (`account reset NAME` clears an account's orders)"),
    ("clock set 20200825", "the data ends at 20200824, so the simulated clock cannot move to 20200825"),
    ("clock set 20200822", "20200822 is not a trading day of the exchange calendar"),
    ("clock set 20200824", "the simulated clock is already at 20200824"),
    ("clock set 19990104", "the bundled sample data has no bars on 19990104"),
    ("clock set someday", "usage: clock, clock next, or clock set YYYYMMDD"),
    ("clock later", "usage: clock, clock next, or clock set YYYYMMDD"),
])
def test_moves_the_data_cannot_fill_are_refused(sqlite_engine: Engine, sandbox: Sandbox, provider: SampleProvider,
                                                line: str, message: str) -> None:
    """At the data's last day (the clock moved there first): refused, and nothing more recorded."""
    ctx = _ctx(sqlite_engine, sandbox, provider)
    _clock(ctx, "clock set 20200824")
    with pytest.raises(CommandError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        _clock(ctx, line)
    assert _moves(sqlite_engine) == [(TRADER, {"from": "20200727", "to": "20200824"})]


def test_the_clock_goes_back_only_over_days_no_order_is_dated_on(sqlite_engine: Engine, sandbox: Sandbox,
                                                                 provider: SampleProvider) -> None:
    ctx = _ctx(sqlite_engine, sandbox, provider)
    _clock(ctx, "clock set 20200820")
    _clock(ctx, "clock next")  # to Friday 20200821
    PaperBroker(sqlite_engine, provider, "a2", CONFIG, now=lambda: SIMULATED_NOW).submit(_order("a2-buy", "buy"))
    with pytest.raises(CommandError, match="the clock cannot go back to 20200820: order 1 of account a2 is dated "
                                           "20200821"):
        _clock(ctx, "clock set 20200820")
    assert _moves(sqlite_engine)[-1] == (TRADER, {"from": "20200820", "to": "20200821"})


def test_the_clock_belongs_to_the_data_it_was_moved_on(sqlite_engine: Engine, sandbox: Sandbox,
                                                       provider: SampleProvider, tmp_path: Path) -> None:
    _clock(_ctx(sqlite_engine, sandbox, provider), "clock set 20200821")
    assert paper_clock(sqlite_engine, provider, 7, SIMULATED_NOW).today == "20200821"
    other = market(tmp_path / "june", JUNE)  # another data set, two sessions (no month): it starts at its last day
    assert paper_clock(sqlite_engine, other, 7, SIMULATED_NOW).today == "20240614"


def test_a_card_made_before_a_move_expires_by_the_simulated_clock(own_url: str, own_engine: Engine,
                                                                  sandbox: Sandbox,
                                                                  provider: SampleProvider) -> None:
    ctx = _ctx(own_engine, sandbox, provider)
    _clock(ctx, "clock set 20200821")
    thread = GraphThread(own_url, ctx, requester=OTHER)
    out = thread.say("order 000001.SZ buy 100 account=g1")
    (pending,) = out["__interrupt__"]
    assert "fills" in pending.value["args"] and "(20200821)" in pending.value["args"]["fills"]
    assert "this proposal lapses when the clock moves" in pending.value["description"]
    _clock(ctx, "clock next")
    within_ttl = (SIMULATED_NOW + timedelta(minutes=1)).isoformat()  # only the clock's move ends the card
    result = thread.decide(out, {"type": "approve"}, user=TRADER, decided_at=within_ttl)["result"]
    assert result["status"] == "expired"
    assert "was for the simulated session 20200821, and the simulated clock has moved to 20200824" in result["message"]
    with Session(own_engine) as session:
        assert session.scalars(select(PaperOrder).where(PaperOrder.account == "g1")).all() == []
        events = session.scalars(select(OrderEvent.event).where(OrderEvent.account == "g1")).all()
    assert events[-1] == "expired" and "approved" not in events


def test_the_model_and_migration_0014_agree_and_it_goes_down_and_up(own_engine: Engine) -> None:
    with own_engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "compare_server_default": True})
        differences = compare_metadata(context, Base.metadata)
    assert [d for d in differences if "simulated_clock" in repr(d)] == []
    downgrade(own_engine, "0013")
    assert current_revision(own_engine) == "0013" and "simulated_clock" not in inspect(own_engine).get_table_names()
    upgrade(own_engine)
    assert {c["name"] for c in inspect(own_engine).get_columns("simulated_clock")} == {
        "id", "session_date", "data_end", "moved_by", "moved_at"}
