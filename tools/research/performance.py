"""The one vocabulary both backtests (tools.research.backtest, tools.rules.backtest) report a run in: total and
annualised return, Sharpe, maximum drawdown, exposure, trades and fees, each on the run's starting capital.

Definitions: Sharpe = mean / std (ddof 1) of daily returns x sqrt(252), risk-free rate 0; the annualised return
compounds the total return to 252 bars a year; the maximum drawdown is the deepest fall of equity below its
running peak, the starting capital being the first peak."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

BARS_PER_YEAR = 252


@dataclass(frozen=True)
class Figures:
    """One run's figures; returns and fees are fractions of the starting capital."""

    total_return: float
    annual_return: float
    sharpe: float
    max_drawdown: float
    exposure: float  # mean fraction of equity invested (gross: long plus short) over the bars
    trades: int
    fees: float  # fees paid, as a fraction of the starting capital
    bars: int  # bars with a return

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def figures(equity: pd.Series, exposure: float, trades: int, fees: float) -> Figures:
    """The figures of an equity path in units of its starting capital (the value after each bar, start = 1)."""
    bars = len(equity)
    if not bars:
        return Figures(0.0, 0.0, 0.0, 0.0, exposure, trades, fees, 0)
    daily = equity / equity.shift(1, fill_value=1.0) - 1.0
    total = float(equity.iloc[-1] - 1.0)
    annual = float((1.0 + total) ** (BARS_PER_YEAR / bars) - 1.0) if total > -1 else -1.0
    std = float(daily.std(ddof=1)) if bars > 1 else 0.0
    sharpe = float(daily.mean() / std * np.sqrt(BARS_PER_YEAR)) if std > 0 else 0.0
    drawdown = float(min((equity / equity.cummax().clip(lower=1.0) - 1.0).min(), 0.0))
    return Figures(total, annual, sharpe, drawdown, exposure, trades, fees, bars)
