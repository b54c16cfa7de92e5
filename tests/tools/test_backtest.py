"""The vectorised backtest and its buy-and-hold benchmark against plain loops that follow the stated conventions
step by step, the labelled counts and the degeneracy warnings against hand calculations on tiny frames."""

from __future__ import annotations

import math
import statistics
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tools.data.local import LocalProvider
from tools.research.backtest import buy_and_hold, degeneracy_warnings, run_backtest, target_positions
from tools.research.performance import BARS_PER_YEAR


def reference(signal: pd.DataFrame, price: pd.DataFrame, fee: float, long_only: bool) -> dict[str, float]:
    """Each code's 1/N sleeve in cash or a fixed number of shares, traded to yesterday's target where priced."""
    dates, codes = list(signal.index), list(signal.columns)
    n = len(codes)
    target = dict.fromkeys(codes, 0.0)
    held = dict.fromkeys(codes, 0.0)
    cash, shares = dict.fromkeys(codes, 1.0 / n), dict.fromkeys(codes, 0.0)
    last: dict[str, float] = {}
    entry: dict[str, float] = {}
    equity, traded_days, invested, trades, fees = [], [], [], 0, 0.0
    buys = sells = round_trips = closed_wins = open_wins = 0
    for i, day in enumerate(dates[:-1]):
        priced = {c: bool(np.isfinite(price.at[day, c]) and price.at[day, c] > 0) for c in codes}
        last.update({c: price.at[day, c] for c in codes if priced[c]})
        new_held = {c: target[c] if priced[c] else held[c] for c in codes}
        value = {c: cash[c] + (shares[c] * last[c] if shares[c] else 0.0) for c in codes}
        traded = 0.0
        for c in codes:
            if new_held[c] != held[c]:
                trades += 1
                buys += new_held[c] > held[c]
                sells += new_held[c] < held[c]
                if held[c] != 0:
                    round_trips += 1
                    closed_wins += held[c] * (last[c] / entry[c] - 1) > 0
                entry[c] = last[c]
            if new_held[c] != held[c]:
                wanted = new_held[c] * value[c] / last[c]
                notional = abs(wanted - shares[c]) * last[c]
                cash[c] = value[c] - wanted * last[c] - fee * notional
                shares[c] = wanted
                traded += notional
        fees += fee * traded
        invested.append(sum(abs(shares[c] * last[c]) for c in codes if shares[c]) / sum(value.values()))
        traded_days.append(traded / sum(value.values()))
        held = new_held
        following = dates[i + 1]
        last.update({c: price.at[following, c] for c in codes if np.isfinite(price.at[following, c])})
        equity.append(sum(cash[c] + (shares[c] * last[c] if shares[c] else 0.0) for c in codes))
        for c in codes:
            s = signal.at[day, c]
            if s in (1, -1):
                target[c] = 0.0 if (long_only and s == -1) else float(s)
    for c in codes:
        if held[c] != 0:
            open_wins += held[c] * (last[c] / entry[c] - 1) > 0
    return {**performance(equity), "turnover": float(np.mean(traded_days)), "trades": trades,
            "win_rate": closed_wins / round_trips if round_trips else None, "open_in_profit": open_wins,
            "buys": buys, "sells": sells, "round_trips": round_trips,
            "open_positions": sum(1 for c in codes if held[c] != 0), "exposure": float(np.mean(invested)),
            "fees": fees,
            "signal_days_buy": sum(1 for d in dates for c in codes if signal.at[d, c] == 1),
            "signal_days_sell": sum(1 for d in dates for c in codes if signal.at[d, c] == -1)}


def reference_buy_and_hold(price: pd.DataFrame, fee: float) -> list[float]:
    """Each code's 1/N sleeve buys at its first valid price, pays the fee once, is valued at its last valid price."""
    dates, codes = list(price.index), list(price.columns)
    entry: dict[str, float] = {}
    last: dict[str, float] = {}
    values = []
    for i in range(len(dates) - 1):
        for c in codes:
            p = price.at[dates[i], c]
            if c not in entry and np.isfinite(p) and p > 0:
                entry[c] = last[c] = p
        total = 0.0
        for c in codes:
            p = price.at[dates[i + 1], c]
            if c in entry and np.isfinite(p) and p > 0:
                last[c] = p
            total += (1 - fee) * last[c] / entry[c] if c in entry else 1.0
        values.append(total / len(codes))
    return values


def performance(equity: list[float]) -> dict[str, float]:
    """Total, annualised, Sharpe and drawdown of an equity path starting from 1, by the module's definitions."""
    path = [1.0, *equity]
    daily = [b / a - 1 for a, b in zip(path[:-1], path[1:], strict=True)]
    peak, drawdown = 1.0, 0.0
    for value in equity:
        peak = max(peak, value)
        drawdown = min(drawdown, value / peak - 1)
    return {"total_return": equity[-1] - 1, "annual_return": equity[-1] ** (BARS_PER_YEAR / len(equity)) - 1,
            "sharpe": statistics.mean(daily) / statistics.stdev(daily) * math.sqrt(BARS_PER_YEAR),
            "max_drawdown": drawdown}


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


def test_benchmark_matches_a_plain_loop_on_real_data(panel: dict[str, pd.DataFrame]) -> None:
    price = panel["open"].copy()
    price.iloc[:60, 1] = np.nan  # lists late: enters on its first price
    price.iloc[200:210, 2] = np.nan  # suspended: valued at its last price meanwhile
    signal = pd.DataFrame(0.0, index=price.index, columns=price.columns)
    signal.iloc[5::40] = 1.0
    signal.iloc[25::40] = -1.0
    result = run_backtest(signal, price, fee_rate=0.001)
    expected = reference_buy_and_hold(price, 0.001)
    assert result.benchmark_equity.to_numpy() == pytest.approx(expected, rel=1e-12)
    assert result.benchmark_equity.index.equals(result.equity.index)
    m = result.metrics.as_dict()
    for key, value in performance(expected).items():
        assert m[f"benchmark_{key}"] == pytest.approx(value, rel=1e-9), key
    assert m["excess_return"] == pytest.approx(m["total_return"] - (expected[-1] - 1), rel=1e-12)


def test_buy_and_hold_by_hand() -> None:
    index = pd.bdate_range("2024-01-01", periods=4)
    # A is bought at 10 on the first bar and suspended on the third (valued at 11 meanwhile);
    # B lists on the second bar and is bought at its price, 20; until then its sleeve is cash.
    price = pd.DataFrame({"A": [10.0, 11.0, np.nan, 12.1], "B": [np.nan, 20.0, 22.0, 18.0]}, index=index)
    equity = buy_and_hold(price)
    assert equity.index.equals(index[:3])  # labelled like the strategy: bar t holds the value at bar t+1's price
    assert equity.tolist() == pytest.approx([(1.1 + 1.0) / 2, (1.1 + 1.1) / 2, (1.21 + 0.9) / 2], rel=1e-12)
    with_fee = buy_and_hold(price, fee_rate=0.01)  # each sleeve pays 1% once, when it buys
    assert with_fee.tolist() == pytest.approx([(0.99 * 1.1 + 1.0) / 2, 0.99 * 1.1, 0.99 * (1.21 + 0.9) / 2], rel=1e-12)

    flat = pd.DataFrame(0.0, index=index, columns=["A", "B"])  # a strategy that never trades
    m = run_backtest(flat, price, fee_rate=0.0).metrics
    daily = [0.05, 1.1 / 1.05 - 1, 1.055 / 1.1 - 1]
    assert m.total_return == 0.0 and m.exposure == 0.0
    assert m.benchmark_total_return == pytest.approx(0.055, rel=1e-12)
    assert m.benchmark_annual_return == pytest.approx(1.055 ** (252 / 3) - 1, rel=1e-12)
    assert m.benchmark_sharpe == pytest.approx(statistics.mean(daily) / statistics.stdev(daily) * math.sqrt(252),
                                               rel=1e-12)
    assert m.benchmark_max_drawdown == pytest.approx(1.055 / 1.1 - 1, rel=1e-12)
    assert m.excess_return == pytest.approx(-0.055, rel=1e-12)
    assert m.excess_annual_return == pytest.approx(-(1.055 ** 84 - 1), rel=1e-12)


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
    assert result.metrics.trades == 1  # one position, still open and up: no round trip closed
    assert (result.metrics.win_rate, result.metrics.open_in_profit, result.metrics.open_positions) == (None, 1, 1)


def test_counts_are_labelled_by_hand_long_only() -> None:
    index = pd.bdate_range("2024-01-01", periods=7)
    signal = pd.DataFrame({"A": [1, 1, 0, -1, 1, np.nan, -1], "B": [0.0] * 7}, index=index, dtype=float)
    price = pd.DataFrame({"A": [10.0, 11, 12, 13, 14, 15, 16], "B": [5.0] * 7}, index=index)
    result = run_backtest(signal, price, fee_rate=0.0)
    # targets 1 1 1 0 1 1 0 -> positions 0 1 1 1 0 1 1: bought on bars 1 and 5, sold on bar 4; the -1 on the
    # last date cannot be traded. B never trades.
    assert result.positions["A"].tolist() == [0, 1, 1, 1, 0, 1, 1]
    m = result.metrics
    assert (m.signal_days_buy, m.signal_days_sell) == (3, 2)
    assert (m.buys, m.sells, m.trades) == (2, 1, 3)
    assert (m.round_trips, m.open_positions) == (1, 1)
    # A's half of the capital drifts with its price (B's half stays cash): 0.5 bought at 11 is 6/11 at 12, ...
    invested = [0, 0.5, 6 / 11.5, 6.5 / 12, 0, 7 / 12.5]
    assert result.exposure.tolist() == pytest.approx(invested, rel=1e-12)
    assert m.exposure == pytest.approx(sum(invested) / 6, rel=1e-12)
    # holding periods: bars 1-3 closed (11 -> 14, a gain) and bar 5 open (15 -> 16, a gain)
    assert (m.win_rate, m.open_in_profit) == (1.0, 1)


def test_counts_are_labelled_by_hand_long_short() -> None:
    index = pd.bdate_range("2024-01-01", periods=6)
    signal = pd.DataFrame({"A": [1, -1, 0, 1, np.nan, 0]}, index=index, dtype=float)
    price = pd.DataFrame({"A": [10.0, 11, 12, 13, 14, 15]}, index=index)
    result = run_backtest(signal, price, fee_rate=0.0, long_only=False)
    # positions 0 1 -1 -1 1 1: buy (open long) on bar 1, sell (close long, open short) on bar 2,
    # buy (cover, open long) on bar 4; two holding periods closed, one open
    assert result.positions["A"].tolist() == [0, 1, -1, -1, 1, 1]
    m = result.metrics
    assert (m.signal_days_buy, m.signal_days_sell) == (2, 1)
    assert (m.buys, m.sells, m.trades) == (2, 1, 3)
    assert (m.round_trips, m.open_positions) == (2, 1)
    # closed: the long 11 -> 12 won, the short 12 -> 14 lost; open: the long 14 -> 15 is up
    assert (m.win_rate, m.open_in_profit) == (0.5, 1)
    # the short opened at 12 owes 1/11 share-units: at 13 it is worth 13/11 gross on equity 2*12/11 - 13/11 = 1
    assert m.exposure == pytest.approx((0 + 1 + 1 + 13 / 11 + 1) / 5, rel=1e-12)


def frame(columns: dict[str, list[float]]) -> pd.DataFrame:
    rows = len(next(iter(columns.values())))
    return pd.DataFrame(columns, index=pd.bdate_range("2024-01-01", periods=rows), dtype=float)


def warnings_for(signal: pd.DataFrame, long_only: bool = True) -> dict[str, str]:
    price = pd.DataFrame(10.0, index=signal.index, columns=signal.columns)
    return degeneracy_warnings(signal, run_backtest(signal, price, long_only=long_only))


def test_degenerate_no_bars_and_no_signal() -> None:
    assert set(warnings_for(frame({"A": [1.0]}))) == {"no_bars"}
    assert set(warnings_for(frame({"A": [np.nan] * 4, "B": [np.nan] * 4}))) == {"no_signal"}


def test_degenerate_constant_buy_signal_never_sells_and_is_always_invested() -> None:
    found = warnings_for(frame({"A": [1.0] * 5, "B": [1.0] * 5}))
    assert set(found) == {"constant_signal", "never_sells", "always_in_market"}
    assert "every value is 1" in found["constant_signal"]
    assert "2 position(s) opened and none closed" in found["never_sells"]
    assert "20240102" in found["always_in_market"]  # every code held from the second bar on


def test_degenerate_never_buys_and_never_in_market() -> None:
    found = warnings_for(frame({"A": [-1, 0, -1, 0], "B": [0, -1, 0, 0]}))
    assert set(found) == {"never_buys", "never_in_market"}


def test_degenerate_never_sells_like_momentum_on_three_codes() -> None:
    # each code comes to the top once and there is no -1: positions open one by one and stay open
    found = warnings_for(frame({"A": [np.nan, 1, 0, 0, 0, 0], "B": [np.nan, 0, 1, 0, 0, 0],
                                "C": [np.nan, 0, 0, 1, 0, 0]}))
    assert set(found) == {"never_sells"}
    assert "3 position(s) opened" in found["never_sells"] and "0 sell value(s)" in found["never_sells"]


def test_degenerate_codes_without_signal_or_trades() -> None:
    found = warnings_for(frame({"A": [1, -1, 1, -1, 0], "B": [np.nan] * 5, "C": [0.0] * 5}))
    assert set(found) == {"codes_without_signal", "codes_never_traded"}
    assert found["codes_without_signal"].endswith("1 of 3 code(s) have no signal value at all: B")
    assert found["codes_never_traded"].endswith("2 of 3 code(s) never trade: B, C")


def test_a_healthy_strategy_has_no_warnings() -> None:
    assert warnings_for(frame({"A": [1, 0, -1, 0, 1, -1], "B": [0, 1, 0, -1, 1, -1]})) == {}


def test_momentum_on_real_data_with_no_bottom_never_sells(panel: dict[str, pd.DataFrame]) -> None:
    close = panel["close"]
    ret = close.pct_change(20, fill_method=None)
    rank = ret.rank(axis=1, pct=True)  # four codes: 0.25, 0.5, 0.75, 1 -> nothing at or below 0.2
    signal = ((rank > 1 - 0.3).astype(float) - (rank <= 0.2).astype(float)).where(ret.notna())
    result = run_backtest(signal, panel["open"])
    assert result.metrics.signal_days_sell == 0 and result.metrics.sells == 0 and result.metrics.buys > 0
    assert "never_sells" in degeneracy_warnings(signal, result)


def test_a_position_held_through_a_suspension_earns_the_move_across_it(shared_data: Path) -> None:
    """000333.SZ has no price on 20190220 and 20190508-20190521 (issue 28, item 2): always long, it earns its whole
    move from the first fill to the last open, like the benchmark; none of the gaps' moves is lost."""
    provider = LocalProvider(shared_data / "cn_csi300_baostock_qfq")
    price = provider.panel(["open"], "000333.SZ,600519.SH", "20190102", "20200601")["open"][["000333.SZ"]]
    gaps = price.index[price["000333.SZ"].isna()].strftime("%Y%m%d").tolist()
    assert gaps[0] == "20190220" and gaps[1:] == [f"{d:%Y%m%d}" for d in pd.bdate_range("20190508", "20190521")]
    signal = pd.DataFrame(1.0, index=price.index, columns=price.columns)
    m = run_backtest(signal, price, fee_rate=0.0).metrics
    opens = price["000333.SZ"]
    assert m.total_return == pytest.approx(opens.iloc[-1] / opens.iloc[1] - 1, rel=1e-12)  # bought on the 2nd bar
    assert m.total_return == pytest.approx(0.6787, abs=1e-4)


def test_a_code_without_a_price_cannot_trade_and_trades_on_its_next_price() -> None:
    index = pd.bdate_range("2024-01-01", periods=6)
    price = pd.DataFrame({"A": [10.0, 11.0, np.nan, np.nan, 15.0, 16.0]}, index=index)
    signal = pd.DataFrame({"A": [1.0, -1, 0, 0, 0, 0]}, index=index)  # the sell is decided before the gap
    result = run_backtest(signal, price, fee_rate=0.0)
    assert result.positions["A"].tolist() == [0, 1, 1, 1, 0, 0]  # suspended on bar 2: sold at 15, on bar 4
    assert result.metrics.total_return == pytest.approx(15 / 11 - 1, rel=1e-12)
    assert (result.metrics.trades, result.metrics.win_rate, result.metrics.open_in_profit) == (2, 1.0, 0)


def test_equal_weights_drift_between_trades_instead_of_a_free_daily_rebalance(panel: dict[str, pd.DataFrame]) -> None:
    """Always long in three codes is each code's third of the capital bought on the second bar and held: three
    trades, three fees (paid from each sleeve's cash), the mean of the three price ratios (issue 28, item 3)."""
    price = panel["open"].iloc[:, :3]
    signal = pd.DataFrame(1.0, index=price.index, columns=price.columns)
    m = run_backtest(signal, price, fee_rate=0.001).metrics
    ratios = [price[c].dropna().iloc[-1] / price[c].iloc[1] for c in price.columns]
    assert m.total_return == pytest.approx(sum(ratios) / 3 - 0.001 - 1, rel=1e-12)
    assert (m.trades, m.buys, m.sells) == (3, 3, 0)
    assert m.fees == pytest.approx(0.001, rel=1e-12)  # 0.1% of each third, once
