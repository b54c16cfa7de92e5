"""Paper broker throughput: 10,000 orders submitted and filled (the simulated clock fills each at once at the
bundled sample's last close), alternating buys and sells of 100 shares of four codes, on SQLite and on a fresh
PostgreSQL database (QUANTDESK_TEST_PG_URL's server), in one run. Each order is one write transaction: checks,
order, fill, fees, position, ledger, mark. The sells come from positions bought the day before on a copy of the
sample that ends then (T+1), and are not timed. Afterwards the ledger must add up to the cash.

`python -m bench broker`; `main(quick=True)`: QUICK_ORDERS orders (tests call it)."""

from __future__ import annotations

import shutil
import tempfile
import time
from datetime import timedelta
from decimal import Decimal
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session

from bench.pg import PostgresUnavailable, scratch_database
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRequest
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.records import CashEntry
from tools.data.local import LocalProvider, SampleProvider, sample_dir
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

ORDERS, QUICK_ORDERS = 10_000, 200
CODES = ("600519.SH", "000001.SZ", "601318.SH", "000333.SZ")
LOT = 100
SEED = 200_000  # shares of each code bought the day before: more than the timed sells take
ACCOUNT = "bench"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("1e12"), Decimal(1000), Decimal(1)), Decimal("1e10"),
                     "open", 7, timedelta(minutes=30))


def _day_before(root: Path) -> LocalProvider:
    """The sample without its last day, in `root`."""
    daily = pd.read_parquet(sample_dir() / "daily.parquet")
    last = str(daily["trade_date"].astype(str).max())
    daily[daily["trade_date"].astype(str) < last].to_parquet(root / "daily.parquet")
    shutil.copy(sample_dir() / "stock_basic.csv", root / "stock_basic.csv")
    return LocalProvider(root, price_basis="forward-adjusted")


def _request(i: int) -> OrderRequest:
    code = CODES[(i // 2) % len(CODES)]
    return OrderRequest(f"bench-{i}", code, "buy" if i % 2 == 0 else "sell", LOT, reason="bench")


def run(label: str, engine: Engine, before: LocalProvider, orders: int) -> None:
    upgrade(engine)
    seeding = PaperBroker(engine, before, ACCOUNT, CONFIG)
    for code in CODES:
        seeding.submit(OrderRequest(f"seed-{code}", code, "buy", SEED, reason="bench seed"))
    paper = PaperBroker(engine, SampleProvider(), ACCOUNT, CONFIG)
    assert paper.clock().simulated
    tenth = orders // 10
    laps: list[float] = []
    start = lap = time.perf_counter()
    for i in range(orders):
        order = paper.submit(_request(i))
        if order.status != "filled":
            raise RuntimeError(f"order {i} did not fill: {order.summary()}")
        if (i + 1) % tenth == 0:
            now = time.perf_counter()
            laps.append((now - lap) / tenth * 1000)
            lap = now
    seconds = time.perf_counter() - start
    with Session(engine) as session:
        ledger = session.scalar(select(func.sum(CashEntry.amount_fen)).where(CashEntry.account == ACCOUNT))
    cash = paper.account().cash
    if Decimal(ledger) / 100 != cash or len(paper.fills()) != orders + len(CODES):
        raise RuntimeError(f"{label}: the ledger ({ledger} fen) or the fills do not match the cash {cash}")
    print(f"  {label:<10} {orders:,} orders in {seconds:.1f} s: {orders / seconds:,.0f} orders/s, "
          f"{seconds / orders * 1000:.2f} ms/order (first {tenth:,}: {laps[0]:.2f} ms, last {tenth:,}: "
          f"{laps[-1]:.2f} ms); ledger adds up to the cash")


def main(quick: bool = False) -> None:
    orders = QUICK_ORDERS if quick else ORDERS
    print(f"  submit + fill of {orders:,} paper orders (simulated clock, bundled sample, {len(CODES)} codes)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "data").mkdir()
        before = _day_before(root / "data")
        sqlite = make_engine(f"sqlite:///{root / 'broker.db'}")
        run("SQLite", sqlite, before, orders)
        sqlite.dispose()
        try:
            with scratch_database() as url:
                pg = make_engine(url)
                run("PostgreSQL", pg, before, orders)
                pg.dispose()
        except PostgresUnavailable as exc:
            print(f"  PostgreSQL skipped: unavailable ({exc})")


if __name__ == "__main__":
    main()
