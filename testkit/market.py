"""Small synthetic A-share markets written to a folder (daily bars, names, no ST) and the paper broker over
them, as the paper-account tests build them: every price in them is chosen for a hand calculation."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.broker.checks import RiskLimits
from tools.broker.clock import SHANGHAI
from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRejected, OrderRequest
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.records import CashEntry
from tools.data.local import LocalProvider
from tools.data.provider import PriceBasis

Bar = tuple[str, str, str, str, str, str, str]  # ts_code, trade_date, open, high, low, close, pre_close

NAMES = {"600000.SH": "浦发银行", "600036.SH": "招商银行", "000001.SZ": "平安银行", "688001.SH": "华兴源创"}

# Thursday 2024-06-13 and Friday 2024-06-14
JUNE: list[Bar] = [
    ("600000.SH", "20240613", "10.00", "10.20", "9.90", "10.00", "10.00"),
    ("600000.SH", "20240614", "10.05", "10.50", "10.00", "10.37", "10.00"),  # limits 9.00 / 11.00
    ("600036.SH", "20240613", "20.00", "20.30", "19.80", "20.00", "20.00"),
    ("600036.SH", "20240614", "20.00", "20.20", "19.90", "20.00", "20.00"),
    ("000001.SZ", "20240613", "12.00", "12.10", "11.90", "12.00", "12.00"),
    ("000001.SZ", "20240614", "12.00", "12.10", "11.90", "12.00", "12.00"),
]
# Monday 2024-06-17: 600000.SH limits 9.33 / 11.41 (10.37 × 0.9 = 9.333, × 1.1 = 11.407); 600036.SH locked at its
# limit-up 22.00; 000001.SZ suspended (no row)
JUNE_17: list[Bar] = [
    ("600000.SH", "20240617", "10.50", "10.80", "10.20", "10.60", "10.37"),
    ("600036.SH", "20240617", "22.00", "22.00", "22.00", "22.00", "20.00"),
]
# Tuesday 2024-06-18, after a Monday without bars (a holiday)
JUNE_18: list[Bar] = [
    ("600000.SH", "20240618", "10.40", "10.70", "10.30", "10.50", "10.37"),
    ("600036.SH", "20240618", "21.00", "22.00", "20.50", "21.50", "20.00"),
]

SIMULATED_NOW = datetime(2024, 9, 2, 10, 0, tzinfo=SHANGHAI)  # long after every market's last bar
MONDAY_MORNING = datetime(2024, 6, 17, 9, 0, tzinfo=SHANGHAI)  # before 09:15: orders fill at today's open
MONDAY_EVENING = datetime(2024, 6, 17, 17, 0, tzinfo=SHANGHAI)
TUESDAY_EVENING = datetime(2024, 6, 18, 17, 0, tzinfo=SHANGHAI)

RISK = RiskLimits(max_order_value=D("1000000"), max_position_weight=D("1"), daily_loss_limit=D("0.05"))


def market(root: Path, bars: Iterable[Bar], basis: PriceBasis = "unadjusted") -> LocalProvider:
    """A LocalProvider over `bars`, not ST, listed long ago; each call rewrites the files, so a new provider sees
    a day's bar appear."""
    root.mkdir(parents=True, exist_ok=True)
    lines = ["ts_code,trade_date,open,high,low,close,pre_close,vol,amount,is_st"]
    lines += [f"{code},{day},{o},{h},{lo},{c},{pre},100000,1000000,0" for code, day, o, h, lo, c, pre in bars]
    (root / "daily.csv").write_text("\n".join(lines) + "\n")
    basics = ["ts_code,name,list_date", *(f"{code},{name},20000104" for code, name in NAMES.items())]
    (root / "stock_basic.csv").write_text("\n".join(basics) + "\n", encoding="utf-8")
    return LocalProvider(root, price_basis=basis)


def config(cash: str = "100000.00", risk: RiskLimits = RISK) -> PaperConfig:
    return PaperConfig(DEFAULT_RATES, risk, D(cash), "open", 7, timedelta(minutes=30))


def broker(engine: Engine, provider: LocalProvider, name: str, now: datetime = SIMULATED_NOW,
           cash: str = "100000.00", risk: RiskLimits = RISK) -> PaperBroker:
    return PaperBroker(engine, provider, name, config(cash, risk), now=lambda: now)


def buy(cid: str, code: str, qty: int, limit: str | None = None) -> OrderRequest:
    return OrderRequest(cid, code, "buy", qty, "limit" if limit else "market", D(limit) if limit else None,
                        reason="test", approved_by="U1")


def sell(cid: str, code: str, qty: int, limit: str | None = None) -> OrderRequest:
    return OrderRequest(cid, code, "sell", qty, "limit" if limit else "market", D(limit) if limit else None,
                        reason="test", approved_by="U1")


def ledger(engine: Engine, name: str) -> list[tuple[str, D, D]]:
    """(kind, amount, balance after) of every cash entry, oldest first."""
    with Session(engine) as session:
        rows = session.scalars(select(CashEntry).where(CashEntry.account == name).order_by(CashEntry.id)).all()
        return [(r.kind, D(r.amount_fen) / 100, D(r.balance_fen) / 100) for r in rows]


def failed(exc: pytest.ExceptionInfo[OrderRejected]) -> list[str]:
    return [c.name for c in exc.value.checks if not c.passed]
