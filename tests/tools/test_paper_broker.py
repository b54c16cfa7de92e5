"""The paper broker (tools/broker/paper.py) on small synthetic markets written to tmp_path: every expected number
is a hand calculation (prices, fees, cash, cost, ledger, marks), on SQLite and on PostgreSQL.

Fee arithmetic used below (DEFAULT_RATES): commission 0.025 %, at least 5.00 per order; transfer fee 0.001 % (from
2022-04-29); stamp duty on sells 0.1 % before 2023-08-28, 0.05 % from then; each rounded half-up to the fen."""

from __future__ import annotations

import uuid
from decimal import Decimal as D
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from testkit.market import (
    JUNE,
    JUNE_17,
    JUNE_18,
    MONDAY_EVENING,
    MONDAY_MORNING,
    TUESDAY_EVENING,
    Bar,
    broker,
    buy,
    failed,
    ledger,
    market,
    sell,
)
from tools.broker.checks import RiskLimits
from tools.broker.notes import SIMULATED
from tools.broker.orders import Account, OrderRejected, Position
from tools.broker.paper import reset_account
from tools.broker.records import OrderEvent, PaperMark
from tools.broker.reports import account_report, max_drawdown
from tools.broker.store import AccountError, set_trading
from tools.data.local import LocalProvider


@pytest.fixture
def name() -> str:
    """A fresh account name (the PostgreSQL test database is shared by the whole session); client order ids
    start with it, so they are unique too."""
    return f"t-{uuid.uuid4().hex[:10]}"


# --- simulated clock --------------------------------------------------------------------------------------


def test_simulated_market_buy_fills_at_the_last_close_to_the_fen(engine: Engine, tmp_path: Path, name: str) -> None:
    paper = broker(engine, market(tmp_path, JUNE), name)
    assert paper.clock().mode == "simulated" and paper.clock().today == "20240614"

    preview = paper.preview(buy(f"{name}-1", "600000.SH", 1000))
    assert preview.passed and preview.name == "浦发银行"
    assert preview.session_date == "20240614" and preview.fill_at == "close"
    assert preview.fill_label == "simulated fill at the last available close (20240614)"
    assert (preview.limit_up, preview.limit_down) == (D("11.00"), D("9.00"))  # 10.00 ± 10 %
    assert preview.reference_price == D("10.37")
    assert preview.estimated_value == D("10370.00")
    assert preview.estimated_fees == D("5.10")  # commission 2.5925 -> minimum 5.00; transfer 0.1037 -> 0.10
    assert preview.cash_after == D("89624.90")
    assert preview.position_after == 1000

    first = paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert first.status == "filled" and first.reserved == D("0.00")
    (fill,) = first.fills
    assert (fill.price, fill.value, fill.trade_date) == (D("10.37"), D("10370.00"), "20240614")
    assert fill.basis == SIMULATED == "simulated fill at the last available close"
    assert (fill.commission, fill.transfer_fee, fill.stamp_duty) == (D("5.00"), D("0.10"), D("0.00"))
    assert (fill.handling_fee, fill.regulator_fee, fill.fees) == (D("0.00"), D("0.00"), D("5.10"))

    # 3,000 × 10.37 = 31,110.00: commission 7.7775 -> 7.78 (above the minimum), transfer 0.3111 -> 0.31
    second = paper.submit(buy(f"{name}-2", "600000.SH", 3000))
    assert (second.fills[0].commission, second.fills[0].transfer_fee) == (D("7.78"), D("0.31"))

    account = paper.account()
    assert account.cash == D("58506.81")  # 100,000 - 10,375.10 - 31,118.09
    assert account.reserved == D("0.00")
    (position,) = account.positions
    assert (position.quantity, position.sellable) == (4000, 0)  # bought today: T+1
    assert position.cost == D("41493.19")  # 10,375.10 + 31,118.09
    assert (position.price, position.price_date, position.value) == (D("10.37"), "20240614", D("41480.00"))
    assert position.unrealised == D("-13.19")
    assert account.market_value == D("41480.00")
    assert account.equity == D("99986.81")
    assert ledger(engine, name) == [
        ("deposit", D("100000"), D("100000")),
        ("buy", D("-10370"), D("89630")),
        ("fees", D("-5.10"), D("89624.90")),
        ("buy", D("-31110"), D("58514.90")),
        ("fees", D("-8.09"), D("58506.81")),
    ]
    assert paper.marks() == [("20240614", D("58506.81"), D("41480.00"), D("99986.81"))]


def test_stamp_duty_on_sells_changes_on_2023_08_28(engine: Engine, tmp_path: Path, name: str) -> None:
    august: list[Bar] = [
        ("600000.SH", "20230823", "10.00", "10.10", "9.90", "10.00", "10.00"),
        ("600000.SH", "20230824", "10.00", "10.10", "9.95", "10.00", "10.00"),
        ("600000.SH", "20230825", "10.20", "10.60", "10.10", "10.50", "10.00"),  # Friday: stamp duty 0.1 %
        ("600000.SH", "20230828", "10.50", "10.70", "10.40", "10.60", "10.50"),  # Monday: 0.05 %
    ]
    # 2,000 × 10.00 = 20,000.00: commission exactly 5.00, transfer 0.20
    bought = broker(engine, market(tmp_path / "a", august[:2]), name).submit(buy(f"{name}-b", "600000.SH", 2000))
    assert bought.fills[0].fees == D("5.20")

    # 1,000 × 10.50 = 10,500.00: commission 2.625 -> 5.00, stamp duty 0.1 % 10.50, transfer 0.105 -> 0.11
    paper = broker(engine, market(tmp_path / "b", august[:3]), name)
    (fill,) = paper.submit(sell(f"{name}-s1", "600000.SH", 1000)).fills
    assert (fill.price, fill.commission, fill.stamp_duty, fill.transfer_fee) == (
        D("10.50"), D("5.00"), D("10.50"), D("0.11"))
    (position,) = paper.positions()
    assert position.cost == D("10002.60")  # half of 20,005.20
    assert position.realised == D("481.79")  # 10,500 - 15.61 - 10,002.60
    assert paper.account().cash == D("90479.19")  # 79,994.80 + 10,500 - 15.61

    # 1,000 × 10.60 = 10,600.00: commission 5.00, stamp duty 0.05 % 5.30, transfer 0.106 -> 0.11
    paper = broker(engine, market(tmp_path / "c", august), name)
    (fill,) = paper.submit(sell(f"{name}-s2", "600000.SH", 1000)).fills
    assert (fill.price, fill.commission, fill.stamp_duty, fill.transfer_fee) == (
        D("10.60"), D("5.00"), D("5.30"), D("0.11"))
    account = paper.account()
    assert account.cash == D("101068.78")  # 90,479.19 + 10,600 - 10.41
    assert account.positions == ()
    assert paper.realised() == D("1068.78")  # 481.79 + (10,600 - 10.41 - 10,002.60)
    assert [(kind, balance) for kind, _, balance in ledger(engine, name)] == [
        ("deposit", D("100000")), ("buy", D("80000")), ("fees", D("79994.80")), ("sell", D("90494.80")),
        ("fees", D("90479.19")), ("sell", D("101079.19")), ("fees", D("101068.78"))]
    assert paper.marks() == [
        ("20230824", D("79994.80"), D("20000.00"), D("99994.80")),
        ("20230825", D("90479.19"), D("10500.00"), D("100979.19")),
        ("20230828", D("101068.78"), D("0.00"), D("101068.78")),
    ]


def test_submit_is_idempotent_on_the_client_order_id(engine: Engine, tmp_path: Path, name: str) -> None:
    paper = broker(engine, market(tmp_path, JUNE), name)
    first = paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    again = paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert again.id == first.id and again.status == "filled"
    assert len(paper.fills()) == 1
    assert len(paper.orders("all")) == 1
    assert paper.account().cash == D("89624.90")  # moved once: 100,000 - 10,370 - 5.10
    assert len(ledger(engine, name)) == 3


# --- live clock -------------------------------------------------------------------------------------------


def test_live_order_waits_for_its_session_and_fills_at_the_open(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    assert morning.clock().mode == "live" and morning.clock().today == "20240617"

    order = morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert (order.status, order.session_date, order.fill_at) == ("open", "20240617", "open")
    assert order.note == "fills at the open of 20240617 (Asia/Shanghai)"
    # held back: 1,000 × limit-up 11.41 = 11,410.00, commission 2.8525 -> 5.00, transfer 0.1141 -> 0.11
    assert order.reserved == D("11415.11")
    account = morning.account()
    assert (account.cash, account.reserved, account.available) == (D("100000.00"), D("11415.11"), D("88584.89"))

    assert morning.settle() == []  # the session's bar does not exist yet
    assert morning.orders("open")[0].status == "open"

    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    (filled,) = evening.settle()
    assert filled.status == "filled" and filled.reserved == D("0.00")
    (fill,) = filled.fills
    assert (fill.price, fill.value, fill.trade_date) == (D("10.50"), D("10500.00"), "20240617")
    assert fill.basis == "filled at the open of 20240617"
    assert fill.fees == D("5.11")  # commission 2.625 -> 5.00, transfer 0.105 -> 0.11
    account = evening.account()
    assert (account.cash, account.reserved) == (D("89494.89"), D("0.00"))
    assert account.equity == D("100094.89")  # 89,494.89 + 1,000 × 10.60
    assert evening.marks() == [("20240617", D("89494.89"), D("10600.00"), D("100094.89"))]
    assert evening.settle() == []  # nothing fills twice


class Reloading(LocalProvider):
    """A LocalProvider that can read its files again: a provider whose data grows while one broker lives."""

    def reload(self) -> None:
        self.__init__(self.root, self.name, self.price_basis)  # type: ignore[misc]


def test_one_broker_sees_the_bar_that_appears_while_it_lives(engine: Engine, tmp_path: Path, name: str) -> None:
    market(tmp_path, JUNE)
    provider = Reloading(tmp_path, price_basis="unadjusted")
    paper = broker(engine, provider, name, now=MONDAY_MORNING)
    paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert paper.settle() == [] and paper.account().equity == D("100000.00")
    market(tmp_path, JUNE + JUNE_17)
    provider.reload()
    (filled,) = paper.settle()  # the same broker: what it read before the 17th's bar must not hide it
    assert filled.fills[0].price == D("10.50")
    account = paper.account()
    assert account.positions[0].price == D("10.60")
    assert account.equity == D("100094.89")


def test_live_limit_buys_fill_at_min_open_limit_or_expire(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    below_open = morning.submit(buy(f"{name}-1", "600000.SH", 1000, limit="10.30"))
    above_open = morning.submit(buy(f"{name}-2", "600000.SH", 1000, limit="10.60"))
    too_low = morning.submit(buy(f"{name}-3", "600000.SH", 1000, limit="10.10"))
    # held back at the limit price: 10,300 + 5.00 + 0.10; 10,600 + 5.00 + 0.11; 10,100 + 5.00 + 0.10
    assert [o.reserved for o in (below_open, above_open, too_low)] == [D("10305.10"), D("10605.11"), D("10105.10")]
    assert morning.account().reserved == D("31015.31")

    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    changed = {o.client_order_id: o for o in evening.settle()}
    assert changed[f"{name}-1"].fills[0].price == D("10.30")  # low 10.20 reached 10.30; open 10.50 above it
    assert changed[f"{name}-2"].fills[0].price == D("10.50")  # the open is below the limit
    assert changed[f"{name}-3"].status == "expired"
    assert changed[f"{name}-3"].note == "not filled: the low of 20240617 (10.20) never reached the limit 10.10"
    account = evening.account()
    assert account.reserved == D("0.00")
    assert account.cash == D("79189.79")  # 100,000 - (10,300 + 5.10) - (10,500 + 5.11)
    assert account.positions[0].quantity == 2000


def test_live_limit_sells_mirror_the_buys(engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    # 3,000 × 10.37 = 31,110.00 on Friday's close: fees 7.78 + 0.31
    broker(engine, provider, name).submit(buy(f"{name}-b", "600000.SH", 3000))
    morning = broker(engine, provider, name, now=MONDAY_MORNING)
    assert morning.positions()[0].sellable == 3000  # bought on Friday, sold on Monday
    morning.submit(sell(f"{name}-1", "600000.SH", 1000, limit="10.70"))
    morning.submit(sell(f"{name}-2", "600000.SH", 1000, limit="10.40"))
    morning.submit(sell(f"{name}-3", "600000.SH", 1000, limit="10.90"))
    assert morning.positions()[0].sellable == 0  # open sells hold the shares
    assert morning.account().reserved == D("0.00")  # sells hold no cash

    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    changed = {o.client_order_id: o for o in evening.settle()}
    first, second = changed[f"{name}-1"].fills[0], changed[f"{name}-2"].fills[0]
    assert first.price == D("10.70")  # high 10.80 reached 10.70; the open 10.50 is below it
    assert first.fees == D("10.46")  # commission 5.00, stamp duty 5.35, transfer 0.107 -> 0.11
    assert second.price == D("10.50")  # the open is above the limit 10.40
    assert second.fees == D("10.36")  # 5.00 + 5.25 + 0.105 -> 0.11
    assert changed[f"{name}-3"].status == "expired"
    assert changed[f"{name}-3"].note == "not filled: the high of 20240617 (10.80) never reached the limit 10.90"
    account = evening.account()
    assert account.cash == D("90061.09")  # 68,881.91 + 10,689.54 + 10,489.64
    (position,) = account.positions
    # cost 31,118.09 less 1/3 (10,372.6966.. -> 10,372.70), then half of 20,745.39 (10,372.695 -> 10,372.70)
    assert (position.quantity, position.cost, position.realised) == (1000, D("10372.69"), D("433.78"))


def test_live_buy_at_a_locked_limit_up_does_not_fill(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    order = morning.submit(buy(f"{name}-1", "600036.SH", 100))
    assert order.reserved == D("2205.02")  # 100 × 22.00 = 2,200.00, commission 5.00, transfer 0.022 -> 0.02
    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    (expired,) = evening.settle()
    assert expired.status == "expired" and expired.fills == ()
    assert "locked at limit-up 22.00 (low 22.00)" in expired.note
    account = evening.account()
    assert (account.cash, account.reserved, account.positions) == (D("100000.00"), D("0.00"), ())


def test_live_sell_at_a_locked_limit_down_does_not_fill(engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    broker(engine, provider, name).submit(buy(f"{name}-b", "600036.SH", 100))  # Friday's close 20.00
    morning = broker(engine, provider, name, now=MONDAY_MORNING)
    morning.submit(sell(f"{name}-1", "600036.SH", 100))
    locked_down: list[Bar] = [("600036.SH", "20240617", "18.00", "18.00", "18.00", "18.00", "20.00")]  # 20.00 - 10 %
    evening = broker(engine, market(tmp_path, JUNE + locked_down), name, now=MONDAY_EVENING)
    (expired,) = evening.settle()
    assert expired.status == "expired" and expired.fills == ()
    assert "locked at limit-down 18.00 (high 18.00)" in expired.note
    (position,) = evening.positions()
    assert (position.quantity, position.sellable) == (100, 100)  # no longer held by an open sell


def test_live_order_on_a_suspended_day_expires(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    morning.submit(buy(f"{name}-1", "000001.SZ", 100))
    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    (expired,) = evening.settle()  # the market traded on the 17th, 000001.SZ did not
    assert expired.status == "expired"
    assert expired.note == "not filled: the stock did not trade on 20240617 (suspended)"
    assert evening.account().reserved == D("0.00")


def test_live_order_on_a_holiday_rolls_to_the_next_session(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    # no bar of any code on the 17th: it was no trading day; the 18th's bar exists
    later = broker(engine, market(tmp_path, JUNE + JUNE_18), name, now=TUESDAY_EVENING)
    (order,) = later.settle()
    assert order.session_date == "20240618"
    assert order.status == "filled"
    (fill,) = order.fills
    assert (fill.price, fill.trade_date, fill.fees) == (D("10.40"), "20240618", D("5.10"))  # 10,400: 5.00 + 0.104
    assert later.account().cash == D("89594.90")
    with Session(engine) as session:
        rolled = session.scalars(select(OrderEvent).where(OrderEvent.client_order_id == f"{name}-1",
                                                          OrderEvent.event == "rolled")).one()
        assert rolled.detail == {"from": "20240617", "to": "20240618"}


def test_a_rolled_order_expires_when_its_new_session_cannot_fill_it(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    # the 17th has no bars at all; on the 18th 600036.SH traded and 600000.SH did not
    rolled_only = [b for b in JUNE_18 if b[0] == "600036.SH"]
    later = broker(engine, market(tmp_path, JUNE + rolled_only), name, now=TUESDAY_EVENING)
    (order,) = later.settle()
    assert (order.status, order.session_date, order.reserved) == ("expired", "20240618", D("0.00"))
    assert order.note == "not filled: the stock did not trade on 20240618 (suspended)"
    assert later.account().reserved == D("0.00")
    (event,) = [e for e in _events(engine, f"{name}-1") if e.event == "rolled"]
    assert event.detail == {"from": "20240617", "to": "20240618"}


def _events(engine: Engine, cid: str) -> list[OrderEvent]:
    with Session(engine) as session:
        return list(session.scalars(select(OrderEvent).where(OrderEvent.client_order_id == cid)
                                    .order_by(OrderEvent.id)).all())


def test_live_fill_uses_no_data_after_its_session(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    morning.submit(buy(f"{name}-2", "600000.SH", 1000, limit="10.30"))
    morning.submit(buy(f"{name}-3", "600000.SH", 1000, limit="10.10"))
    wild: list[Bar] = [("600000.SH", "20240618", "30.00", "40.00", "1.00", "35.00", "10.60")]
    later = broker(engine, market(tmp_path, JUNE + JUNE_17 + wild), name, now=TUESDAY_EVENING)
    changed = {o.client_order_id: o for o in later.settle()}
    assert changed[f"{name}-1"].fills[0].price == D("10.50")  # the 17th's open
    assert changed[f"{name}-2"].fills[0].price == D("10.30")
    assert changed[f"{name}-3"].status == "expired"  # the 18th's low 1.00 must not count
    assert "(10.20) never reached the limit 10.10" in changed[f"{name}-3"].note
    # the mark of the 17th uses the 17th's close: 2,000 × 10.60
    assert later.marks()[0][:3] == ("20240617", D("79189.79"), D("21200.00"))


# --- T+1 ----------------------------------------------------------------------------------------------------


def test_shares_bought_today_are_sellable_the_next_trading_day(engine: Engine, tmp_path: Path, name: str) -> None:
    friday = broker(engine, market(tmp_path, JUNE), name)
    friday.submit(buy(f"{name}-b", "600000.SH", 1000))
    assert friday.positions()[0].sellable == 0
    with pytest.raises(OrderRejected, match="sellable") as exc:
        friday.submit(sell(f"{name}-s1", "600000.SH", 1000))
    assert failed(exc) == ["sellable (T+1)"]
    assert "0 of 1,000 shares sellable today" in next(c.detail for c in exc.value.checks if not c.passed)

    monday = broker(engine, market(tmp_path, JUNE + JUNE_17), name)
    assert monday.clock().today == "20240617"
    assert monday.positions()[0].sellable == 1000
    order = monday.submit(sell(f"{name}-s2", "600000.SH", 1000))
    assert order.status == "filled"
    assert order.fills[0].price == D("10.60")
    assert order.fills[0].fees == D("10.41")  # 10,600: commission 5.00, stamp duty 5.30, transfer 0.106 -> 0.11
    assert monday.account().cash == D("100214.49")  # 89,624.90 + 10,600 - 10.41


# --- checks -------------------------------------------------------------------------------------------------


def test_a_buy_that_would_overdraw_cash_is_rejected_by_the_cash_check(
        engine: Engine, tmp_path: Path, name: str) -> None:
    risk = RiskLimits(max_order_value=D("1000000"), max_position_weight=D("10"), daily_loss_limit=D("0.05"))
    paper = broker(engine, market(tmp_path, JUNE), name, cash="10000.00", risk=risk)
    # holds back 1,000 × limit-up 11.00 = 11,000.00 + 5.00 + 0.11 = 11,005.11 > 10,000.00
    with pytest.raises(OrderRejected, match="order refused by the cash check") as exc:
        paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert failed(exc) == ["cash"]
    assert "holds back 11,005.11 of 10,000.00 available" in str(exc.value)
    assert paper.orders("all") == () and paper.account().cash == D("10000.00")
    assert [e.event for e in _events(engine, f"{name}-1")] == ["refused"]
    # 900 shares hold back 9,900.00 + 5.00 + 0.099 -> 0.10 = 9,905.10: allowed; filled at 10.37: 9,333.00 + 5.09
    assert paper.submit(buy(f"{name}-2", "600000.SH", 900)).status == "filled"
    assert paper.account().cash == D("661.91")


def test_selling_more_than_is_sellable_is_rejected(engine: Engine, tmp_path: Path, name: str) -> None:
    broker(engine, market(tmp_path, JUNE), name).submit(buy(f"{name}-b", "600000.SH", 1000))
    monday = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    monday.submit(sell(f"{name}-s1", "600000.SH", 600))
    with pytest.raises(OrderRejected) as exc:
        monday.submit(sell(f"{name}-s2", "600000.SH", 500))  # 400 left sellable: 600 are in an open sell
    assert failed(exc) == ["sellable (T+1)"]
    with pytest.raises(OrderRejected) as exc:
        monday.submit(sell(f"{name}-s3", "600000.SH", 1100))
    assert "sellable (T+1)" in failed(exc)


def test_short_selling_is_rejected(engine: Engine, tmp_path: Path, name: str) -> None:
    paper = broker(engine, market(tmp_path, JUNE), name)
    with pytest.raises(OrderRejected, match="order refused by the no short selling check") as exc:
        paper.submit(sell(f"{name}-1", "600036.SH", 100))
    assert failed(exc) == ["no short selling", "sellable (T+1)"]
    assert paper.orders("all") == ()


def test_order_value_limit(engine: Engine, tmp_path: Path, name: str) -> None:
    risk = RiskLimits(max_order_value=D("10000"), max_position_weight=D("1"), daily_loss_limit=D("0.05"))
    paper = broker(engine, market(tmp_path, JUNE), name, risk=risk)
    with pytest.raises(OrderRejected) as exc:
        paper.submit(buy(f"{name}-1", "600000.SH", 1000))  # 10,370.00 at the last close
    assert failed(exc) == ["order value limit"]
    assert paper.submit(buy(f"{name}-2", "600000.SH", 900)).status == "filled"  # 9,333.00


def test_position_weight_limit(engine: Engine, tmp_path: Path, name: str) -> None:
    risk = RiskLimits(max_order_value=D("1000000"), max_position_weight=D("0.10"), daily_loss_limit=D("0.05"))
    paper = broker(engine, market(tmp_path, JUNE), name, risk=risk)
    with pytest.raises(OrderRejected) as exc:
        paper.submit(buy(f"{name}-1", "600000.SH", 1000))  # 10,370 / 100,000 = 10.37 % of equity
    assert failed(exc) == ["position weight limit"]
    assert "10.4% of equity after the order, limit 10%" in str(exc.value)
    assert paper.submit(buy(f"{name}-2", "600000.SH", 900)).status == "filled"  # 9.333 %
    with pytest.raises(OrderRejected) as exc:  # (9,333.00 + 1,037.00) / 99,994.91 = 10.37 %
        paper.submit(buy(f"{name}-3", "600000.SH", 100))
    assert failed(exc) == ["position weight limit"]


def test_daily_loss_limit_stops_buys_after_a_losing_day(engine: Engine, tmp_path: Path, name: str) -> None:
    thursday = [b for b in JUNE if b[1] == "20240613"]
    # 5,000 × 10.00 = 50,000.00: commission 12.50, transfer 0.50; marked on the 13th at 99,987.00
    broker(engine, market(tmp_path, thursday), name).submit(buy(f"{name}-b", "600000.SH", 5000))
    falling = [*thursday, ("600000.SH", "20240614", "9.50", "9.60", "9.00", "9.00", "10.00"),
               ("000001.SZ", "20240614", "12.00", "12.10", "11.90", "12.00", "12.00")]
    paper = broker(engine, market(tmp_path, falling), name)
    account = paper.account()
    assert account.equity == D("94987.00")  # 49,987.00 + 5,000 × 9.00: a 5,000 loss, 5.0007 % of 99,987.00
    with pytest.raises(OrderRejected) as exc:
        paper.submit(buy(f"{name}-1", "000001.SZ", 100))
    assert failed(exc) == ["daily loss limit"]
    assert "today's loss 5.00%, buys stop at 5%" in str(exc.value)
    assert paper.submit(sell(f"{name}-2", "600000.SH", 1000)).status == "filled"  # sells stay allowed


def test_trading_switched_off_refuses_submits_and_settles_nothing(
        engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    set_trading(engine, False, "U1")
    try:
        with pytest.raises(OrderRejected, match="order refused by the trading switch check") as exc:
            morning.submit(buy(f"{name}-2", "600000.SH", 100))
        assert failed(exc) == ["trading switch"]
        evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
        assert evening.settle() == []
        assert [o.status for o in evening.orders("all")] == ["open"]
    finally:
        set_trading(engine, True, "U1")
    (filled,) = evening.settle()
    assert filled.status == "filled"


def test_an_odd_lot_is_sold_whole(engine: Engine, tmp_path: Path, name: str) -> None:
    star: list[Bar] = [
        ("688001.SH", "20240613", "50.00", "50.50", "49.50", "50.00", "50.00"),
        ("688001.SH", "20240614", "50.00", "52.00", "49.00", "51.00", "50.00"),
    ]
    # STAR: buys at least 200 shares, then steps of 1; 300 × 50.00 = 15,000.00: 5.00 + 0.15
    broker(engine, market(tmp_path, star[:1]), name).submit(buy(f"{name}-b", "688001.SH", 300))
    paper = broker(engine, market(tmp_path, star), name)
    with pytest.raises(OrderRejected) as exc:
        paper.submit(sell(f"{name}-s0", "688001.SH", 150))  # fewer than 200 and not everything held
    assert failed(exc) == ["lot size"]
    assert paper.submit(sell(f"{name}-s1", "688001.SH", 200)).status == "filled"
    last = paper.submit(sell(f"{name}-s2", "688001.SH", 100))  # the whole remainder, an odd lot
    assert last.status == "filled"
    assert last.fills[0].fees == D("7.60")  # 5,100: commission 5.00, stamp duty 2.55, transfer 0.051 -> 0.05
    account = paper.account()
    assert account.positions == ()
    assert account.cash == D("100277.05")  # 84,994.85 + (10,200 - 10.20) + (5,100 - 7.60)


# --- cancel -------------------------------------------------------------------------------------------------


def test_cancelling_an_open_buy_releases_its_reservation(engine: Engine, tmp_path: Path, name: str) -> None:
    morning = broker(engine, market(tmp_path, JUNE), name, now=MONDAY_MORNING)
    order = morning.submit(buy(f"{name}-1", "600000.SH", 1000))
    assert morning.account().reserved == D("11415.11")
    cancelled = morning.cancel(order.id, "U1")
    assert (cancelled.status, cancelled.reserved, cancelled.note) == ("cancelled", D("0.00"), "cancelled by U1")
    assert morning.account().reserved == D("0.00")
    evening = broker(engine, market(tmp_path, JUNE + JUNE_17), name, now=MONDAY_EVENING)
    assert evening.settle() == [] and evening.fills() == ()


def test_a_filled_order_cannot_be_cancelled(engine: Engine, tmp_path: Path, name: str) -> None:
    paper = broker(engine, market(tmp_path, JUNE), name)
    order = paper.submit(buy(f"{name}-1", "600000.SH", 1000))
    with pytest.raises(AccountError, match=f"order {order.id} is filled: only an open order can be cancelled"):
        paper.cancel(order.id, "U1")
    assert paper.account().cash == D("89624.90")


def test_an_order_of_another_account_cannot_be_cancelled(engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    mine = broker(engine, provider, name, now=MONDAY_MORNING)
    other = broker(engine, provider, f"{name}-other", now=MONDAY_MORNING)
    order = mine.submit(buy(f"{name}-1", "600000.SH", 1000))
    with pytest.raises(AccountError, match=f"there is no order {order.id} in account {name}-other"):
        other.cancel(order.id, "U2")
    assert mine.order(order.id).status == "open"  # type: ignore[union-attr]
    assert other.order(order.id) is None


# --- marks and reports --------------------------------------------------------------------------------------


def test_max_drawdown_on_a_hand_made_equity_path() -> None:
    assert max_drawdown([D(100), D(120), D(90), D(130), D(104)]) == D("0.25")  # 120 -> 90
    assert max_drawdown([D(100), D(110), D(120)]) == D(0)
    assert max_drawdown([]) == D(0)


def test_account_report_from_hand_made_numbers() -> None:
    position = Position("600000.SH", "浦发银行", 1000, 1000, D("10005.00"), D("40.00"), D("12.00"), "20240614")
    account = Account("desk", D("80000.00"), D("88000.00"), D("0.00"), "20240614", "simulated", "unadjusted",
                      (position,))
    assert account.equity == D("100000.00")  # 88,000 + 1,000 × 12.00
    report = account_report(account, D("40.00"), [D("104000"), D("91000"), D("110000")])
    assert report.equity == D("100000.00")
    assert report.total_pnl == D("20000.00")
    assert (report.realised, report.unrealised) == (D("40.00"), D("1995.00"))  # 12,000 - 10,005
    assert report.max_drawdown == D("0.125")  # 104,000 -> 91,000; 110,000 -> 100,000 is only 9.1 %
    assert report.exposure == D("0.12")
    assert report.marks == 3


def test_account_equity_is_cash_plus_marked_value(engine: Engine, tmp_path: Path, name: str) -> None:
    broker(engine, market(tmp_path, JUNE), name).submit(buy(f"{name}-1", "600000.SH", 1000))
    paper = broker(engine, market(tmp_path, JUNE + JUNE_17), name)
    paper.mark("20240617")
    account = paper.account()
    assert account.positions[0].price == D("10.60")
    assert account.equity == D("100224.90")  # 89,624.90 + 1,000 × 10.60
    assert paper.marks() == [("20240614", D("89624.90"), D("10370.00"), D("99994.90")),
                             ("20240617", D("89624.90"), D("10600.00"), D("100224.90"))]
    report = account_report(account, paper.realised(), [m[3] for m in paper.marks()])
    assert (report.total_pnl, report.unrealised, report.realised) == (D("224.90"), D("224.90"), D("0.00"))
    assert report.max_drawdown == D("0.000051")  # 100,000 -> 99,994.90


# --- reset and price basis ----------------------------------------------------------------------------------


def test_reset_account_starts_over(engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    broker(engine, provider, name).submit(buy(f"{name}-1", "600000.SH", 1000))
    broker(engine, provider, name, now=MONDAY_MORNING).submit(buy(f"{name}-2", "600036.SH", 100))
    reset_account(engine, name, D("50000.00"), "U1")
    paper = broker(engine, provider, name)
    account = paper.account()
    assert (account.starting_cash, account.cash, account.reserved, account.positions) == (
        D("50000.00"), D("50000.00"), D("0.00"), ())
    assert paper.orders("all") == () and paper.fills() == () and paper.marks() == []
    assert ledger(engine, name) == [("deposit", D("50000"), D("50000"))]
    with Session(engine) as session:
        assert session.scalars(select(PaperMark).where(PaperMark.account == name)).all() == []
    with pytest.raises(AccountError, match="there is no paper account named nobody-"):
        reset_account(engine, f"nobody-{name}", D("1"), "U1")


def test_forward_adjusted_prices_are_said_plainly(engine: Engine, tmp_path: Path, name: str) -> None:
    adjusted = broker(engine, market(tmp_path / "qfq", JUNE, basis="forward-adjusted"), name)
    notes = adjusted.preview(buy(f"{name}-1", "600000.SH", 100)).notes
    assert "fills are simulated on forward-adjusted prices, not the prices that traded that day" in notes
    assert "dividends and bonus shares are not modelled: positions and cash ignore them" in notes
    assert adjusted.account().price_basis == "forward-adjusted"
    plain = broker(engine, market(tmp_path / "raw", JUNE), name)
    assert not any("adjusted" in n for n in plain.preview(buy(f"{name}-1", "600000.SH", 100)).notes)
