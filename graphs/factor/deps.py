"""What the factor workflow reads from the run's context, and nothing more."""

from __future__ import annotations

from typing import Protocol

from graphs.context import Market, Models, Storage
from tools.broker.config import TradingConfig
from tools.sandbox import Sandbox


class FactorDeps(Market, Models, Storage, Protocol):
    sandbox: Sandbox  # dry-runs and backfills the reviewed factor code
    holdout_fraction: float  # the last sessions of the period kept from the code's tuning
    dsr_threshold: float  # the deflated Sharpe probability the team library asks for
    research_channel: str  # where the decay monitor posts state changes ("": nowhere)
    paper: TradingConfig | None  # the clock settings: the decay monitor follows the simulated session on static data
