"""The desk's trading configuration every broker reads: fee rates, risk limits, the starting cash of a new paper
account, when live orders fill, how old data may be and still count as live, and how long a proposal lasts."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from tools.broker.checks import RiskLimits
from tools.broker.fees import FeeRates


@dataclass(frozen=True)
class TradingConfig:
    rates: FeeRates
    risk: RiskLimits
    starting_cash: Decimal
    live_fill_at: str
    live_data_days: int
    order_ttl: timedelta

    @classmethod
    def from_settings(cls, settings: Any) -> TradingConfig:
        return cls(FeeRates.from_settings(settings),
                   RiskLimits(settings.max_order_value, settings.max_position_weight, settings.daily_loss_limit),
                   settings.paper_cash, settings.live_fill_at, settings.live_data_days,
                   timedelta(minutes=settings.order_ttl_minutes))
