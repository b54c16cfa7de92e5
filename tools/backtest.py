"""A simple next-bar backtest of a date x code signal frame.

Conventions (stated in every report):
- target position per code: a signal of 1 means long, -1 short (flat when `long_only`), 0 or NaN keep
  the previous target ("hold", as the signal seed defines 0), starting flat;
- the target decided on the close of bar t is traded at bar t+1's execution price (the open when
  given, else the close) and held until the next trade, so the position at bar t is the target of t-1;
- the return of bar t is the move from bar t's execution price to bar t+1's; a missing price
  (suspension) counts as no move;
- the portfolio holds each code with weight 1/N (N codes); fees are `fee_rate` times the traded
  notional, charged on each change of position;
- Sharpe = mean / std of daily returns x sqrt(252), risk-free rate 0; annualised return compounds
  to 252 bars a year.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

BARS_PER_YEAR = 252


@dataclass(frozen=True)
class BacktestMetrics:
    total_return: float
    annual_return: float
    sharpe: float
    max_drawdown: float
    turnover: float  # average daily traded notional as a share of capital
    trades: int  # changes of position, summed over codes
    hit_rate: float  # share of closed or open holding periods with a positive return
    bars: int
    fee_rate: float
    long_only: bool

    def as_dict(self) -> dict[str, float | int | bool]:
        return asdict(self)


@dataclass(frozen=True)
class BacktestResult:
    metrics: BacktestMetrics
    daily_returns: pd.Series
    equity: pd.Series
    positions: pd.DataFrame


def target_positions(signal: pd.DataFrame, long_only: bool = True) -> pd.DataFrame:
    """Signals to target positions: 1 long, -1 short (or flat), 0/NaN hold the previous target."""
    target = signal.where(signal.isin([1, -1]))
    target = target.ffill().fillna(0.0)
    if long_only:
        target = target.clip(lower=0.0)
    return target.astype("float64")


def run_backtest(signal: pd.DataFrame, price: pd.DataFrame, fee_rate: float = 0.0005,
                 long_only: bool = True) -> BacktestResult:
    """Backtest `signal` against execution prices `price` (same dates and codes)."""
    price = price.reindex(index=signal.index, columns=signal.columns)
    positions = target_positions(signal, long_only).shift(1).fillna(0.0)
    forward = (price.shift(-1) / price - 1.0).fillna(0.0)
    n = signal.shape[1]
    traded = positions.diff().abs()
    traded.iloc[0] = positions.iloc[0].abs()
    daily = (positions * forward).sum(axis=1) / n - fee_rate * traded.sum(axis=1) / n
    daily = daily.iloc[:-1]  # the last bar has no next price
    equity = (1.0 + daily).cumprod()
    bars = len(daily)
    total = float(equity.iloc[-1] - 1.0) if bars else 0.0
    annual = float((1.0 + total) ** (BARS_PER_YEAR / bars) - 1.0) if bars and total > -1 else -1.0
    std = float(daily.std(ddof=1)) if bars > 1 else 0.0
    sharpe = float(daily.mean() / std * np.sqrt(BARS_PER_YEAR)) if std > 0 else 0.0
    drawdown = float((equity / equity.cummax() - 1.0).min()) if bars else 0.0
    metrics = BacktestMetrics(
        total_return=total,
        annual_return=annual,
        sharpe=sharpe,
        max_drawdown=drawdown,
        turnover=float(traded.iloc[:-1].sum(axis=1).mean() / n) if bars else 0.0,
        trades=int((traded.iloc[:-1] > 0).sum().sum()),
        hit_rate=_hit_rate(positions.iloc[:-1], forward.iloc[:-1]),
        bars=bars,
        fee_rate=fee_rate,
        long_only=long_only,
    )
    return BacktestResult(metrics, daily, equity, positions)


def _hit_rate(positions: pd.DataFrame, forward: pd.DataFrame) -> float:
    """Share of holding periods (runs of one non-zero position in one code) that made money, before fees."""
    held = positions.to_numpy()
    if held.size == 0:
        return 0.0
    changed = np.vstack([np.ones((1, held.shape[1]), dtype=bool), held[1:] != held[:-1]])
    run_id = np.cumsum(changed.T.ravel()).reshape(held.shape[1], -1).T  # runs numbered column by column
    active = held != 0
    if not active.any():
        return 0.0
    growth = np.bincount(run_id[active], weights=np.log1p(held[active] * forward.to_numpy()[active]))
    present = np.bincount(run_id[active]) > 0
    return float((growth[present] > 0).sum() / present.sum())
