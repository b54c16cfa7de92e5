"""What the signal workflow reads from the run's context, and nothing more."""

from __future__ import annotations

from typing import Protocol

from graphs.context import Market, Models, Storage
from tools.sandbox import Sandbox


class SignalDeps(Market, Models, Storage, Protocol):
    sandbox: Sandbox  # runs generated strategy code
    fee_rate: float  # the backtest's cost per side
    long_only: bool
    holdout_fraction: float  # the last sessions of the period backtested apart (tools/research/holdout.py)
