"""Where an order fills on its session's bar, or why it does not: suspension, a locked price limit, a limit
price the bar never reached. Pure; uses nothing after the session's bar."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tools.broker.market import Bar
from tools.broker.notes import (
    BLOCKED,
    FILLED_AT,
    HIGH_NOT_REACHED,
    LIMIT_FILLED,
    LOW_NOT_REACHED,
    SUSPENDED,
)
from tools.broker.rules import PriceLimits, fill_blocked_by_limit


@dataclass(frozen=True)
class FillPrice:
    price: Decimal | None  # None: no fill
    reason: str  # how it filled, or why not


def fill_price(side: str, price_type: str, limit_price: Decimal | None, fill_at: str, bar: Bar | None,
               session: str, limits: PriceLimits) -> FillPrice:
    """Market orders take the bar's open (or close); a limit buy fills at min(reference, limit) when the low
    reached the limit, a limit sell at max(reference, limit) when the high did."""
    if bar is None or bar.suspended:
        return FillPrice(None, SUSPENDED.format(day=session))
    blocked = fill_blocked_by_limit(side, bar.low, bar.high, limits)
    if blocked:
        return FillPrice(None, BLOCKED.format(day=session, why=blocked))
    reference = bar.open if fill_at == "open" else bar.close
    if price_type == "market":
        return FillPrice(reference, FILLED_AT[fill_at].format(day=session))
    assert limit_price is not None
    if side == "buy":
        if bar.low > limit_price:
            return FillPrice(None, LOW_NOT_REACHED.format(day=session, low=bar.low, limit=limit_price))
        return FillPrice(min(reference, limit_price), LIMIT_FILLED["buy"].format(day=session))
    if bar.high < limit_price:
        return FillPrice(None, HIGH_NOT_REACHED.format(day=session, high=bar.high, limit=limit_price))
    return FillPrice(max(reference, limit_price), LIMIT_FILLED["sell"].format(day=session))
