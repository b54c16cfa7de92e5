"""Charts return decodable PNGs; what a chart draws (panels per horizon, or a note saying why there is nothing)
is decided by plain functions, tested here without looking at pixels."""

from __future__ import annotations

import io
from pathlib import Path

import matplotlib.image
import numpy as np
import pandas as pd
import pytest

from tools.factors.ic import evaluate_factor
from tools.research.backtest import run_backtest
from tools.research.charts import (
    account_equity,
    account_figure,
    equity_and_signal_counts,
    factor_chart,
    factor_chart_plan,
    note_chart,
    nothing_to_plot,
    price_with_trades,
    signed_percent,
    trades_and_equity,
    trades_figure,
)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def assert_png(data: bytes) -> None:
    assert data.startswith(PNG_MAGIC)
    pixels = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert pixels.ndim == 3 and pixels.shape[0] > 100 and pixels.shape[1] > 100


@pytest.fixture(scope="module")
def close(shared_data: Path) -> pd.DataFrame:
    bars = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet",
                           columns=["ts_code", "trade_date", "close"])
    bars["trade_date"] = pd.to_datetime(bars["trade_date"])
    wide = bars.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1)
    return wide.iloc[-300:, :40]


def test_nothing_to_plot_names_what_is_missing() -> None:
    index = pd.bdate_range("2024-01-01", periods=3)
    assert nothing_to_plot(pd.DataFrame(columns=["A"], dtype=float), "signal") == "no signal to plot: no dates"
    assert nothing_to_plot(pd.DataFrame(index=index), "signal") == "no signal to plot: no codes"
    assert nothing_to_plot(pd.Series(np.nan, index=index), "prices") == "no prices to plot: every value is missing"
    assert nothing_to_plot(pd.Series([1.0, np.nan, 2.0], index=index), "prices") is None


def test_signal_charts_with_benchmark_are_pngs(close: pd.DataFrame) -> None:
    fast, slow = close.rolling(5).mean(), close.rolling(20).mean()
    signal = ((fast > slow).astype(float) - (fast < slow).astype(float)).where(slow.notna())
    result = run_backtest(signal, close)
    assert_png(equity_and_signal_counts(result.equity, signal, "ma_cross", benchmark=result.benchmark_equity,
                                        exposure=result.exposure))
    assert_png(equity_and_signal_counts(result.equity, signal, "ma_cross"))  # without the optional panels
    code = close.columns[0]
    single = run_backtest(signal[[code]], close[[code]])
    assert_png(price_with_trades(close[code], single.positions[code], code, equity=single.equity,
                                 benchmark=single.benchmark_equity))
    assert_png(price_with_trades(close[code], single.positions[code], code))


def test_empty_signal_charts_draw_a_note() -> None:
    empty = pd.DataFrame(columns=["A"], dtype=float, index=pd.DatetimeIndex([]))
    result = run_backtest(empty, empty)
    assert nothing_to_plot(empty, "signal") == "no signal to plot: no dates"
    assert_png(equity_and_signal_counts(result.equity, empty, "empty", benchmark=result.benchmark_equity,
                                        exposure=result.exposure))
    assert_png(price_with_trades(empty["A"], result.positions["A"], "empty"))
    assert_png(note_chart("a title", "no signal to plot: no dates"))


def test_factor_chart_plots_every_horizon(close: pd.DataFrame) -> None:
    evaluation = evaluate_factor(-close.pct_change(20), close, periods=(1, 5, 20))
    plan = factor_chart_plan(evaluation)
    assert plan.horizons == (1, 5, 20) and plan.skipped == {} and plan.note is None
    assert_png(factor_chart(evaluation, "reversal"))


def test_factor_chart_without_evaluable_dates_draws_the_reason(close: pd.DataFrame) -> None:
    evaluation = evaluate_factor(close.pct_change(5).iloc[-16:], close, periods=(1, 5, 20))  # the data ends first
    plan = factor_chart_plan(evaluation)
    assert plan.horizons == () and set(plan.skipped) == {1, 5, 20}
    assert plan.note is not None and plan.note.startswith(
        "no evaluable dates for any horizon: no date has a forward return for every horizon evaluated together "
        "(1d, 5d, 20d), because no forward 20d return: the data ends 20200824")
    assert plan.note.count("no forward 20d return") == 1  # the reason the shorter horizons quote is given once
    assert_png(factor_chart(evaluation, "too late"))


def test_factor_chart_leaves_out_a_horizon_without_rank_ic() -> None:
    # prices repeat every 5 rows: every 5-day return is 0, so no date has a 5d Rank IC while 1d returns vary
    index = pd.bdate_range("2024-01-01", periods=60)
    codes = [f"{i:06d}.SZ" for i in range(12)]
    rows, cols = np.meshgrid(np.arange(len(index)), np.arange(len(codes)), indexing="ij")
    prices = pd.DataFrame(10.0 + (rows + cols) % 5, index=index, columns=codes)
    factor = pd.DataFrame(np.random.default_rng(3).normal(size=prices.shape), index=index, columns=codes)
    evaluation = evaluate_factor(factor, prices, periods=(1, 5))
    plan = factor_chart_plan(evaluation)
    assert plan.horizons == (1,) and plan.note is None
    assert plan.skipped == {5: "no date has 2 or more evaluated codes whose factor values and 5d returns both vary"}
    assert_png(factor_chart(evaluation, "half"))


def _labels(fig, axis: str = "x", panel: int = -1) -> list[str]:
    """The tick labels a reader sees on one panel, once the figure is drawn."""
    fig.canvas.draw()
    ax = fig.axes[panel]
    ticks = ax.get_xticklabels() if axis == "x" else ax.get_yticklabels()
    return [t.get_text() for t in ticks if t.get_text()]


def test_a_change_that_rounds_to_nothing_reads_plus_zero() -> None:
    assert signed_percent(-0.00001) == "+0.00%"
    assert signed_percent(0.0) == "+0.00%"
    assert signed_percent(-0.0123) == "-1.23%"
    assert signed_percent(0.5) == "+50.00%"


def test_the_account_chart_of_one_mark_shows_its_day_in_yuan_without_an_offset() -> None:
    """Issue 39, item 12: one mark is one dated point, not hours or four years; money in whole yuan, no 1e6; a
    flat account is +0.00%."""
    fig = account_figure(["20200821"], [999_999.99], 1_000_000.0, "acct")
    ax = fig.axes[0]
    assert _labels(fig) == ["2020-08-21"]
    low, high = ax.get_xlim()
    assert 5 <= high - low <= 7  # a week around the day (matplotlib dates are in days)
    assert ax.yaxis.get_major_formatter().format_ticks([1_000_000.0]) == ["1,000,000"]
    assert all("e" not in label and "1e6" not in label for label in _labels(fig, "y"))
    assert ax.yaxis.get_offset_text().get_text() == ""
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["equity (+0.00%)", "starting cash"]


def test_the_account_chart_over_a_few_sessions_ticks_each_session_never_an_hour() -> None:
    dates = ["20200817", "20200818", "20200819", "20200820", "20200821"]
    fig = account_figure(dates, [1e6, 1.01e6, 1.02e6, 1.0e6, 1.03e6], 1e6, "acct", [1e6, 1e6, 0.99e6, 0.98e6, 1.01e6],
                         "buy-and-hold 600519.SH")
    assert _labels(fig) == ["2020-08-17", "2020-08-18", "2020-08-19", "2020-08-20", "2020-08-21"]
    legend = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert legend == ["equity (+3.00%)", "buy-and-hold 600519.SH (+1.00%)", "starting cash"]


def test_a_long_chart_ticks_days_months_or_years(close: pd.DataFrame) -> None:
    dates = [d.strftime("%Y%m%d") for d in close.index]
    fig = account_figure(dates, list(np.linspace(1e6, 1.2e6, len(dates))), 1e6, "acct")
    labels = _labels(fig)
    assert 3 <= len(labels) <= 9
    assert not [label for label in labels if ":" in label]  # no hours on daily data
    assert_png(account_equity(dates, list(np.linspace(1e6, 1.2e6, len(dates))), 1e6, "acct"))


def test_the_rule_backtest_chart_marks_its_fills_and_compares_with_buy_and_hold() -> None:
    days = ["20200803", "20200804", "20200805", "20200806", "20200807", "20200810"]
    closes = pd.Series([10.0, 10.5, 11.0, 10.8, 11.2, 11.5], index=days)
    equity = pd.Series([1e6, 1e6, 1.02e6, 1.01e6, 1.01e6, 1.01e6], index=days)
    held = pd.Series([1e6, 1.05e6, 1.1e6, 1.08e6, 1.12e6, 1.15e6], index=days)
    fig = trades_figure(closes, ["20200804"], ["20200807"], equity, held, 1e6, "Rule 1 backtest")
    top, bottom = fig.axes
    assert [t.get_text() for t in top.get_legend().get_texts()] == ["close", "buy (1)", "sell (1)"]
    assert [t.get_text() for t in bottom.get_legend().get_texts()] == ["strategy (+1.00%)", "buy-and-hold (+15.00%)"]
    buys, sells = top.collections
    assert buys.get_offsets().tolist()[0][1] == 10.5 and sells.get_offsets().tolist()[0][1] == 11.2
    assert _labels(fig) == ["2020-08-03", "2020-08-04", "2020-08-05", "2020-08-06", "2020-08-07", "2020-08-10"]
    assert bottom.get_ylabel() == "equity (CNY)"
    assert_png(trades_and_equity(closes, ["20200804"], ["20200807"], equity, held, 1e6, "Rule 1 backtest"))
