"""Concurrent orders on one paper account never overspend and never fill twice: a row lock on PostgreSQL,
`BEGIN IMMEDIATE` on SQLite (tools/broker/store.py). Every expected number is a hand calculation on the synthetic
market of tests/tools/test_paper_broker.py (600000.SH closes at 10.37 on 2024-06-14, limit-up 11.00; opens at 10.50 on
2024-06-17, limit-up 11.41)."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from decimal import Decimal as D
from pathlib import Path
from typing import TypeVar

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from testkit.market import (
    JUNE,
    JUNE_17,
    MONDAY_EVENING,
    MONDAY_MORNING,
    broker,
    buy,
    ledger,
    market,
)
from tools.broker.checks import RiskLimits
from tools.broker.orders import Order, OrderRejected
from tools.broker.records import PaperOrder

THREADS = 8
ORDERS_PER_THREAD = 4
LOOSE = RiskLimits(max_order_value=D("1000000"), max_position_weight=D("10"), daily_loss_limit=D("0.5"))
T = TypeVar("T")


def run_together(count: int, work: Callable[[int], T]) -> list[T | BaseException]:
    """`work(i)` on `count` threads released at once; each result, or the exception it raised."""
    barrier = threading.Barrier(count)
    results: list[T | BaseException] = [RuntimeError("did not run")] * count

    def body(i: int) -> None:
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as exc:  # noqa: BLE001 - handed to the test to judge
            results[i] = exc

    threads = [threading.Thread(target=body, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results


@pytest.fixture
def name() -> str:
    return f"c-{uuid.uuid4().hex[:10]}"


def check_ledger(engine: Engine, name: str, cash: D) -> None:
    """Each entry's balance is the one before plus its amount, and the ledger ends at the account's cash."""
    entries = ledger(engine, name)
    balance = D(0)
    for _, amount, after in entries:
        balance += amount
        assert after == balance
    assert balance == sum((amount for _, amount, _ in entries), D(0)) == cash


def test_concurrent_buys_never_overspend(engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    provider.last_date()  # load the files before the threads share the provider

    def orders(thread: int) -> list[Order | OrderRejected]:
        paper = broker(engine, provider, name, risk=LOOSE)  # one broker per thread, like one per process
        done: list[Order | OrderRejected] = []
        for n in range(ORDERS_PER_THREAD):
            try:
                done.append(paper.submit(buy(f"{name}-{thread}-{n}", "600000.SH", 1000)))
            except OrderRejected as exc:
                done.append(exc)
        return done

    results = run_together(THREADS, orders)
    outcomes = [o for r in results if isinstance(r, list) for o in r]
    assert len(outcomes) == THREADS * ORDERS_PER_THREAD, [r for r in results if not isinstance(r, list)]
    filled = [o for o in outcomes if isinstance(o, Order)]
    refused = [o for o in outcomes if isinstance(o, OrderRejected)]
    # each buy holds back 1,000 × 11.00 + 5.00 + 0.11 = 11,005.11 and costs 10,370.00 + 5.00 + 0.10 = 10,375.10:
    # after k fills 100,000 - 10,375.10 k must still cover 11,005.11, so k = 0..8 pass: 9 fills
    assert len(filled) == 9 and all(o.status == "filled" for o in filled)
    assert len(refused) == THREADS * ORDERS_PER_THREAD - 9
    assert all(str(exc).startswith("order refused by the cash check") for exc in refused)

    paper = broker(engine, provider, name, risk=LOOSE)
    account = paper.account()
    fills = paper.fills()
    assert len(fills) == 9
    spent = sum((f.value + f.fees for f in fills), D(0))
    assert spent == D("93375.90")  # 9 × 10,375.10
    assert account.cash == D("100000.00") - spent == D("6624.10")
    assert account.cash >= 0 and account.reserved == D("0.00")
    (position,) = account.positions
    assert (position.quantity, position.cost) == (9000, D("93375.90"))
    check_ledger(engine, name, account.cash)


def test_concurrent_reservations_never_exceed_cash_and_concurrent_settles_fill_once(
        engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    provider.last_date()

    def orders(thread: int) -> list[Order | OrderRejected]:
        paper = broker(engine, provider, name, now=MONDAY_MORNING, risk=LOOSE)
        done: list[Order | OrderRejected] = []
        for n in range(ORDERS_PER_THREAD):
            try:
                done.append(paper.submit(buy(f"{name}-{thread}-{n}", "600000.SH", 1000)))
            except OrderRejected as exc:
                done.append(exc)
        return done

    outcomes = [o for r in run_together(THREADS, orders) if isinstance(r, list) for o in r]
    assert len(outcomes) == THREADS * ORDERS_PER_THREAD
    # each holds back 1,000 × 11.41 + 5.00 + 0.11 = 11,415.11: 8 fit in 100,000.00 (91,320.88), a 9th does not
    placed = [o for o in outcomes if isinstance(o, Order)]
    assert len(placed) == 8 and all(o.status == "open" for o in placed)
    morning = broker(engine, provider, name, now=MONDAY_MORNING, risk=LOOSE)
    assert morning.account().reserved == D("91320.88")

    later = market(tmp_path, JUNE + JUNE_17)
    later.last_date()
    settled = run_together(4, lambda _: broker(engine, later, name, now=MONDAY_EVENING, risk=LOOSE).settle())
    assert all(isinstance(r, list) for r in settled), settled
    changed = [o for r in settled for o in r]  # type: ignore[union-attr]
    assert sorted(o.id for o in changed) == sorted(o.id for o in placed)  # each settled by exactly one settle

    evening = broker(engine, later, name, now=MONDAY_EVENING, risk=LOOSE)
    account = evening.account()
    assert len(evening.fills()) == 8
    assert account.cash == D("15959.12")  # 100,000 - 8 × (10,500.00 + 5.00 + 0.11)
    assert account.reserved == D("0.00")
    check_ledger(engine, name, account.cash)


def test_the_same_client_order_id_from_many_threads_is_one_order(
        engine: Engine, tmp_path: Path, name: str) -> None:
    provider = market(tmp_path, JUNE)
    provider.last_date()
    results = run_together(THREADS, lambda _: broker(engine, provider, name, risk=LOOSE)
                           .submit(buy(f"{name}-same", "600000.SH", 1000)))
    assert all(isinstance(r, Order) for r in results), results
    assert len({r.id for r in results}) == 1  # type: ignore[union-attr]
    with Session(engine) as session:
        assert len(session.scalars(select(PaperOrder).where(PaperOrder.account == name)).all()) == 1
    paper = broker(engine, provider, name, risk=LOOSE)
    assert len(paper.fills()) == 1
    assert paper.account().cash == D("89624.90")  # moved once: 100,000 - 10,370.00 - 5.10
    check_ledger(engine, name, D("89624.90"))
