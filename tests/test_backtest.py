"""The vectorised backtest against a plain loop that follows the stated conventions step by step."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tools.backtest import BARS_PER_YEAR, run_backtest, target_positions
from tools.data.local import LocalProvider


def reference(signal: pd.DataFrame, price: pd.DataFrame, fee: float, long_only: bool) -> dict[str, float]:
    dates, codes = list(signal.index), list(signal.columns)
    n = len(codes)
    target = dict.fromkeys(codes, 0.0)
    held = dict.fromkeys(codes, 0.0)
    daily, traded_days, trades = [], [], 0
    runs: dict[str, list[float]] = {c: [] for c in codes}
    wins = total_runs = 0
    for i, day in enumerate(dates[:-1]):
        new_held = {c: target[c] for c in codes}  # yesterday's target is traded today
        traded = sum(abs(new_held[c] - held[c]) for c in codes)
        trades += sum(1 for c in codes if new_held[c] != held[c])
        ret = 0.0
        for c in codes:
            if new_held[c] != held[c] and runs[c]:
                growth = math.prod(runs[c])
                wins += growth > 1
                total_runs += 1
                runs[c] = []
            p0, p1 = price.at[day, c], price.at[dates[i + 1], c]
            move = 0.0 if (np.isnan(p0) or np.isnan(p1)) else p1 / p0 - 1
            ret += new_held[c] * move
            if new_held[c] != 0:
                runs[c].append(1 + new_held[c] * move)
        daily.append(ret / n - fee * traded / n)
        traded_days.append(traded / n)
        held = new_held
        for c in codes:
            s = signal.at[day, c]
            if s in (1, -1):
                target[c] = 0.0 if (long_only and s == -1) else float(s)
    for c in codes:
        if runs[c]:
            wins += math.prod(runs[c]) > 1
            total_runs += 1
    equity = np.cumprod(1 + np.array(daily))
    peak = np.maximum.accumulate(equity)
    mean, std = np.mean(daily), np.std(daily, ddof=1)
    return {"total_return": equity[-1] - 1, "annual_return": equity[-1] ** (BARS_PER_YEAR / len(daily)) - 1,
            "sharpe": mean / std * math.sqrt(BARS_PER_YEAR), "max_drawdown": float(np.min(equity / peak - 1)),
            "turnover": float(np.mean(traded_days)), "trades": trades, "hit_rate": wins / total_runs}


@pytest.fixture(scope="module")
def panel(shared_data: Path) -> dict[str, pd.DataFrame]:
    provider = LocalProvider(shared_data / "cn_csi300_baostock_qfq")
    return provider.panel(["open", "close"], "000001.SZ,600519.SH,000002.SZ,601318.SH", "20180101", "20191231")


@pytest.mark.parametrize("long_only", [True, False])
def test_matches_a_plain_loop_on_real_data(panel: dict[str, pd.DataFrame], long_only: bool) -> None:
    close = panel["close"]
    fast, slow = close.rolling(5).mean(), close.rolling(20).mean()
    signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())
    signal.iloc[::7] = 0.0  # some explicit holds
    result = run_backtest(signal, panel["open"], fee_rate=0.001, long_only=long_only)
    expected = reference(signal, panel["open"], 0.001, long_only)
    got = result.metrics.as_dict()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
    assert result.metrics.bars == len(close) - 1


def test_hold_and_nan_keep_the_previous_target() -> None:
    signal = pd.DataFrame({"a": [1, 0, np.nan, -1, 0, 1]}, dtype=float)
    assert target_positions(signal, long_only=False)["a"].tolist() == [1, 1, 1, -1, -1, 1]
    assert target_positions(signal, long_only=True)["a"].tolist() == [1, 1, 1, 0, 0, 1]


def test_trades_on_the_next_bar() -> None:
    index = pd.bdate_range("2024-01-01", periods=5)
    price = pd.DataFrame({"a": [10.0, 11.0, 12.1, 13.31, 14.641]}, index=index)
    signal = pd.DataFrame({"a": [1.0, 0, 0, 0, 0]}, index=index)
    result = run_backtest(signal, price, fee_rate=0.0)
    assert result.positions["a"].tolist() == [0, 1, 1, 1, 1]
    assert result.daily_returns.round(12).tolist() == [0.0, 0.1, 0.1, 0.1]
    assert result.metrics.trades == 1 and result.metrics.hit_rate == 1.0
