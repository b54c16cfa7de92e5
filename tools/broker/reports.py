"""Account reports from marks: total, realised and unrealised P&L, max drawdown and exposure."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tools.broker.orders import Account


@dataclass(frozen=True)
class AccountReport:
    equity: Decimal
    total_pnl: Decimal  # equity less starting cash
    realised: Decimal
    unrealised: Decimal
    max_drawdown: Decimal  # the largest fall from a peak of the equity curve, as a fraction
    exposure: Decimal  # market value / equity
    marks: int  # points on the equity curve


def account_report(account: Account, realised: Decimal, curve: list[Decimal]) -> AccountReport:
    """`curve` is the marked equity, oldest first; the account's equity now closes it."""
    unrealised = sum((p.unrealised for p in account.positions if p.unrealised is not None), Decimal("0.00"))
    return AccountReport(account.equity, account.equity - account.starting_cash, realised, unrealised,
                         max_drawdown([account.starting_cash, *curve, account.equity]),
                         account.market_value / account.equity if account.equity > 0 else Decimal(0), len(curve))


def max_drawdown(equity: list[Decimal]) -> Decimal:
    """The largest peak-to-trough fall, as a fraction of the peak (0 when the curve never fell)."""
    peak, worst = Decimal(0), Decimal(0)
    for value in equity:
        peak = max(peak, value)
        if peak > 0:
            worst = max(worst, (peak - value) / peak)
    return worst
