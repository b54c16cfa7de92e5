"""evaluate_factor against alphalens-reloaded on real CSI 300 data and on edge cases."""

from __future__ import annotations

import warnings
from pathlib import Path

import alphalens as al
import numpy as np
import pandas as pd
import pytest

from tools.factors.ic import MIN_EVALUATED_DATES, EvaluationError, evaluate_factor

PERIODS = (1, 5, 20)
TOL = 1e-9


@pytest.fixture(scope="module")
def baostock(shared_data: Path) -> pd.DataFrame:
    bars = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet")
    bars["trade_date"] = pd.to_datetime(bars["trade_date"])
    return bars


def alphalens_run(factor: pd.DataFrame, prices: pd.DataFrame, periods=PERIODS, quantiles=5) -> dict:
    long = factor.stack().rename("factor")
    long.index.names = ["date", "asset"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = al.utils.get_clean_factor_and_forward_returns(long, prices, quantiles=quantiles, periods=periods,
                                                             filter_zscore=None, max_loss=1.0)
        mean, se = al.performance.mean_return_by_quantile(data)
        return {
            "data": data,
            "ic": al.performance.factor_information_coefficient(data),
            "mean": mean, "se": se,
            "returns": al.performance.factor_returns(data),
            "turnover": {(q, p): al.performance.quantile_turnover(data["factor_quantile"], q, p)
                         for q in range(1, quantiles + 1) for p in periods},
            "autocorr": {p: al.performance.factor_rank_autocorrelation(data, p) for p in periods},
        }


def max_diff(a: pd.Series, b: pd.Series) -> float:
    a, b = a.dropna(), b.dropna()
    assert a.index.equals(b.index), "the two define the statistic on different dates"
    return float(np.max(np.abs(a.to_numpy() - b.to_numpy()))) if len(a) else 0.0


def assert_same_as_alphalens(factor: pd.DataFrame, prices: pd.DataFrame, periods=PERIODS, quantiles=5) -> None:
    ours = evaluate_factor(factor, prices, periods, quantiles)
    theirs = alphalens_run(factor, prices, periods, quantiles)
    assert int(np.isfinite(ours.factor_quantile.to_numpy()).sum()) == len(theirs["data"])
    for i, p in enumerate(periods):
        column = theirs["ic"].columns[i]
        assert max_diff(ours.rank_ic[p], theirs["ic"][column]) < TOL
        assert np.nanmax(np.abs(ours.quantile_mean[p].to_numpy() - theirs["mean"][column].to_numpy())) < TOL
        assert np.nanmax(np.abs(ours.quantile_std_err[p].to_numpy() - theirs["se"][column].to_numpy())) < TOL
        assert max_diff(ours.factor_returns[p], theirs["returns"][column]) < TOL
        assert max_diff(ours.rank_autocorrelation[p], theirs["autocorr"][p]) < TOL
        for q in range(1, quantiles + 1):
            assert max_diff(ours.turnover[p][q], theirs["turnover"][(q, p)]) < TOL
        # alphalens halves the spread (compute_mean_returns_spread); ours is top minus bottom
        spread, _ = al.performance.compute_mean_returns_spread(
            al.performance.mean_return_by_quantile(theirs["data"], by_date=True)[0], quantiles, 1)
        assert max_diff(ours.spread[p], 2 * spread[column]) < TOL


def test_reversal_factor_on_real_csi300_matches_alphalens(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1)
    factor = -(close / close.shift(20) - 1).iloc[25:]
    assert_same_as_alphalens(factor, close)


def test_turnover_factor_with_ties_and_late_listings_matches_alphalens(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close")
    turnover = baostock.pivot(index="trade_date", columns="ts_code", values="turnover_rate")
    close = close.loc["2019-01-01":]
    late = close.columns[:5]
    close.loc[:"2019-06-30", late] = np.nan  # listed mid-year: no prices before
    complete = close.columns[close.loc["2019-07-01":].notna().all()]
    close = close[complete]
    factor = turnover.reindex_like(close).rolling(5).mean().round(1)  # rounding makes many ties
    assert_same_as_alphalens(factor.iloc[5:], close)


def test_weekly_factor_with_tied_forward_returns_matches_alphalens(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:400]
    weekly = (-(close / close.shift(10) - 1)).iloc[15::5]  # every fifth price date; periods count price rows
    assert (weekly.index.to_series().diff().dropna().dt.days > 1).all()
    whole_yuan = close.round(0)  # many codes share a forward return of exactly 0: ties in the returns' ranks
    assert (whole_yuan.pct_change(fill_method=None).iloc[1:] == 0).sum(axis=1).min() > 10
    assert_same_as_alphalens(weekly, whole_yuan)


def test_lags_count_factor_dates_even_when_a_date_drops_out(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:400]
    weekly = (-(close / close.shift(10) - 1)).iloc[15::5]
    weekly.iloc[20] = 0.0  # a constant date drops out of the evaluation
    ours = evaluate_factor(weekly, close)
    after = weekly.index[21]
    assert ours.coverage.iloc[20] == 0 and ours.coverage.iloc[21] > 0
    assert np.isnan(ours.rank_autocorrelation.loc[after, 1]) and np.isnan(ours.turnover[1].loc[after, 1])
    # a weekly index has no frequency, so alphalens lags over the dates left after cleaning instead
    theirs = alphalens_run(weekly, close)
    assert np.isfinite(theirs["autocorr"][1].loc[after]) and np.isfinite(theirs["turnover"][(1, 1)].loc[after])


def test_constant_dates_drop_out_like_alphalens(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:200]
    factor = close.pct_change(10)
    factor.iloc[50] = 1.0  # a constant date: no unique quantile edges
    factor.iloc[60, : len(factor.columns) * 3 // 4] = 0.0  # mostly tied: edges collapse
    ours = evaluate_factor(factor, close)
    assert ours.coverage.iloc[50] == 0 and ours.coverage.iloc[60] == 0
    assert np.isnan(ours.rank_ic.iloc[50, 0])
    assert_same_as_alphalens(factor, close)


def test_suspended_days_mask_forward_returns_instead_of_forward_filling(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:120]
    tradable = pd.DataFrame(True, index=close.index, columns=close.columns)
    code = close.columns[0]
    tradable.iloc[40:45, 0] = False  # a five-day suspension
    factor = close.pct_change(5)
    ours = evaluate_factor(factor, close, periods=(1, 5), tradable=tradable)
    fwd1 = ours.forward_returns[1][code]
    assert fwd1.iloc[39:45].isna().all()  # exit or entry on a suspended day: no return, not a zero return
    # where both ends trade, the forward return is the plain close-to-close move
    expected = close[code].iloc[50] / close[code].iloc[45] - 1
    assert abs(ours.forward_returns[5][code].iloc[45] - expected) < TOL
    # alphalens forward-fills a gap in prices into a zero return; ours leaves it out
    gapped = close.copy()
    gapped.iloc[40:45, 0] = np.nan
    theirs = al.utils.compute_forward_returns(factor.stack().rename_axis(["date", "asset"]), gapped, periods=(1,))
    assert (theirs.xs(code, level="asset").iloc[40:44, 0] == 0).all()
    assert evaluate_factor(factor, gapped, periods=(1,)).forward_returns[1][code].iloc[39:45].isna().all()


def test_pearson_ic_and_summary_are_textbook_figures(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:300]
    factor = close.pct_change(20)
    ours = evaluate_factor(factor, close, periods=(5,))
    date = ours.ic[5].dropna().index[10]
    mask = ours.factor_quantile.loc[date].notna()
    x, y = factor.loc[date][mask], ours.forward_returns[5].loc[date][mask]
    assert abs(ours.ic.loc[date, 5] - np.corrcoef(x, y)[0, 1]) < TOL
    s = ours.ic[5].dropna()
    row = ours.ic_summary.loc[("ic", 5)]
    assert abs(row["t_stat"] - s.mean() / (s.std() / np.sqrt(len(s)))) < TOL
    assert abs(row["icir"] - s.mean() / s.std()) < TOL
    metrics = ours.metrics()
    assert metrics.loc[5, "dates"] == len(s)
    assert abs(metrics.loc[5, "spread_mean"] - (metrics.loc[5, "top_mean"] - metrics.loc[5, "bottom_mean"])) < 1e-12


def test_nothing_in_common_is_a_clear_error() -> None:
    factor = pd.DataFrame({"A": [1.0, 2.0]}, index=pd.to_datetime(["2020-01-01", "2020-01-02"]))
    prices = pd.DataFrame({"B": [1.0, 2.0]}, index=factor.index)
    with pytest.raises(EvaluationError, match="share no"):
        evaluate_factor(factor, prices)


def test_a_window_at_the_end_of_the_data_says_why_nothing_is_evaluated(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1)
    assert f"{close.index[-1]:%Y%m%d}" == "20200824"
    factor = close.pct_change(5).iloc[-16:]  # the last 16 price dates: t + p exists for 16 - p of them
    ours = evaluate_factor(factor, close)
    c = ours.counts
    assert (c.dates, c.with_values, c.with_all_forward, c.evaluated) == (16, 16, 0, 0)
    assert c.in_calendar == c.with_forward == {1: 15, 5: 11, 20: 0}
    horizons = ours.horizons()
    assert [(h.forward_dates, h.evaluated_dates, h.ic_dates, h.rank_ic_dates) for h in horizons.values()] == [
        (15, 0, 0, 0), (11, 0, 0, 0), (0, 0, 0, 0)]
    assert horizons[20].reason == (f"no forward 20d return: the data ends 20200824, fewer than 20 trading day(s) "
                                   f"after the first factor date {factor.index[0]:%Y%m%d}")
    assert horizons[1].reason.startswith("no date has a forward return for every horizon evaluated together "
                                         "(1d, 5d, 20d), because no forward 20d return")
    assert horizons[1].reason.endswith("evaluate without 20d to use the others")
    missing = ours.missing_reasons()
    assert set(missing) == {1, 5, 20}
    assert all(len(reasons) == len(ours.metrics().columns) - 1 for reasons in missing.values())  # all but "dates"
    assert missing[20]["rank_ic_mean"] == horizons[20].reason
    assert ours.reasons() == [horizons[1].reason]  # the 20d reason is quoted inside the others
    shortfall = ours.shortfall()
    assert shortfall is not None and shortfall.startswith(f"fewer than {MIN_EVALUATED_DATES} evaluable dates "
                                                          "(1d: 0, 5d: 0, 20d: 0): no date has")
    assert "15 with a forward 1d return, 11 with a forward 5d return, 0 with a forward 20d return" in shortfall

    short = evaluate_factor(factor, close, periods=(1,))  # the 1d figures alone are there
    h = short.horizons()[1]
    assert (h.forward_dates, h.evaluated_dates, h.ic_dates, h.rank_ic_dates, h.reason) == (15, 15, 15, 15, None)
    assert short.missing_reasons() == {}
    assert short.shortfall(minimum=15) is None
    assert short.shortfall(minimum=16).startswith("fewer than 16 evaluable dates (1d: 15). dates: 16 in the factor")


def test_one_evaluated_date_explains_each_missing_figure(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:100]
    factor = close.pct_change(5).iloc[[50]]
    ours = evaluate_factor(factor, close, periods=(1, 5))
    assert ours.counts.evaluated == 1 and ours.horizons()[5].ic_dates == 1
    missing = ours.missing_reasons()[5]
    assert set(missing) == {"ic_std", "icir", "ic_t", "rank_ic_std", "rank_icir", "rank_ic_t", "spread_se",
                            "turnover_top", "turnover_bottom", "rank_autocorr"}
    assert missing["ic_std"] == "only 1 date(s) with a defined IC: a standard deviation needs 2"
    assert missing["rank_icir"] == "only 1 date(s) with a defined Rank IC: a standard deviation needs 2"
    assert missing["turnover_top"].startswith("needs an evaluated date 5 date(s) after another")
    assert ours.horizons()[5].reason is None


def test_reasons_for_no_values_no_tradable_prices_and_ties(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:60]
    empty = evaluate_factor(close * np.nan, close, periods=(1,))
    assert empty.horizons()[1].reason == "the factor has no finite value on any of its 60 price date(s)"
    halted = pd.DataFrame(False, index=close.index, columns=close.columns)
    suspended = evaluate_factor(close.pct_change(5), close, periods=(1,), tradable=halted)
    assert suspended.horizons()[1].reason.startswith("no forward 1d return: no code with a factor value trades")
    constant = evaluate_factor(close * 0 + 1.0, close, periods=(1,))
    assert constant.counts.with_all_forward == 59 and constant.counts.evaluated == 0
    assert constant.horizons()[1].reason.startswith("no date has 5 distinct quantile edges")


def test_a_full_evaluation_has_no_shortfall(baostock: pd.DataFrame) -> None:
    close = baostock.pivot(index="trade_date", columns="ts_code", values="close").dropna(axis=1).iloc[:200]
    ours = evaluate_factor(close.pct_change(20), close)
    assert ours.shortfall() is None and ours.reasons() == []
    assert all(h.reason is None and h.ic_dates == ours.metrics().loc[p, "dates"] for p, h in ours.horizons().items())


def test_untied_returns_with_factor_gaps_match_alphalens() -> None:
    """Continuous prices give forward returns without ties, the case whose Rank IC reuses one sort of the returns made
    before the evaluated set is known: dates where every code is evaluated, and dates where codes with a return but
    no factor value (or in a dropped date) must not count in the returns' ranks."""
    rng = np.random.default_rng(11)
    index = pd.bdate_range("2021-01-04", periods=140)
    columns = [f"{i:06d}.SZ" for i in range(60)]
    prices = pd.DataFrame(50 * np.exp(np.cumsum(rng.normal(0, 0.02, (len(index), 60)), axis=0)), index=index,
                          columns=columns)
    factor = pd.DataFrame(rng.normal(size=(110, 60)), index=index[:110], columns=columns)
    assert (prices.pct_change(fill_method=None).iloc[1:].nunique(axis=1) == 60).all()  # no tied returns
    factor.iloc[30:60] = factor.iloc[30:60].mask(rng.random((30, 60)) < 0.2)  # codes missing on some dates
    factor.iloc[70, :] = 1.0  # a constant date drops out
    ours = evaluate_factor(factor, prices)
    assert ours.coverage.iloc[0] == 60 and 0 < ours.coverage.iloc[40] < 60 and ours.coverage.iloc[70] == 0
    assert_same_as_alphalens(factor, prices)


def pandas_rank_ic_and_quantiles(factor: pd.DataFrame, forward: pd.DataFrame,
                                 evaluated: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame]:
    """Per date, over the evaluated cells: pandas' Spearman correlation and `pd.qcut(..., labels=False) + 1`."""
    rank_ic, labels = {}, pd.DataFrame(np.nan, index=factor.index, columns=factor.columns)
    for date in factor.index:
        cells = evaluated.loc[date]
        if not cells.any():
            continue
        f, y = factor.loc[date, cells], forward.loc[date, cells]
        rank_ic[date] = f.corr(y, method="spearman")
        labels.loc[date, cells] = pd.qcut(f, 5, labels=False) + 1
    return pd.Series(rank_ic, dtype=float), labels


def test_sort_kernel_edge_cases_match_pandas_and_alphalens() -> None:
    """Rows the 32-bit sort keys cannot order alone: distinct values sharing a key (a pair, put in order by its
    values; three, sorted exactly), ties, all-NaN and half-NaN dates, a constant date and one whose quantile edges
    collapse; returns of two codes that share a key on every date."""
    rng = np.random.default_rng(5)
    index = pd.bdate_range("2021-01-04", periods=150)
    columns = [f"{i:06d}.SZ" for i in range(80)]
    walk = np.cumsum(rng.normal(0, 0.02, (len(index), 80)), axis=0)
    prices = pd.DataFrame(40 * np.exp(walk), index=index, columns=columns)
    prices.iloc[:, 1] = prices.iloc[:, 0] * (1 + 1e-10 * np.arange(len(index)))  # returns 1e-10 apart
    factor = pd.DataFrame(rng.normal(size=(120, 80)), index=index[:120], columns=columns)
    factor.iloc[10] = factor.iloc[10].round(1)  # ties
    factor.iloc[20] = np.nan  # no values
    factor.iloc[30] = 2.5  # constant: drops out
    factor.iloc[40, :60] = 0.0  # most values tied: the edges collapse, the date drops out
    factor.iloc[50, 3] = factor.iloc[50, 7] + 1e-12  # a pair sharing a key, the larger in the lower column
    factor.iloc[60, [2, 9, 5]] = factor.iloc[60, 4] + np.array([3e-12, 2e-12, 1e-12])  # three sharing a key
    factor.iloc[70, 11] = factor.iloc[70, 12]  # a single tie
    factor.iloc[80, ::2] = np.nan  # half the codes
    ours = evaluate_factor(factor, prices)
    assert ours.coverage.iloc[20] == 0 and ours.coverage.iloc[30] == 0 and ours.coverage.iloc[40] == 0
    assert ours.coverage.iloc[80] == 40 and ours.coverage.iloc[50] == 80
    evaluated = ours.factor_quantile.notna()
    for p in PERIODS:
        rank_ic, labels = pandas_rank_ic_and_quantiles(factor, ours.forward_returns[p], evaluated)
        assert max_diff(ours.rank_ic[p], rank_ic.reindex(ours.rank_ic.index)) < TOL
        assert ours.factor_quantile.equals(labels)
    assert_same_as_alphalens(factor, prices)


def test_a_single_code_has_no_quantile_edges_like_pandas() -> None:
    rng = np.random.default_rng(3)
    index = pd.bdate_range("2021-01-04", periods=60)
    prices = pd.DataFrame(10 * np.exp(np.cumsum(rng.normal(0, 0.02, (60, 1)), axis=0)), index=index,
                          columns=["000001.SZ"])
    factor = pd.DataFrame(rng.normal(size=(40, 1)), index=index[:40], columns=prices.columns)
    with pytest.raises(ValueError, match="Bin edges must be unique"):
        pd.qcut(factor.iloc[0], 5, labels=False)
    ours = evaluate_factor(factor, prices)
    assert ours.counts.with_all_forward == 40 and ours.counts.evaluated == 0
    assert ours.factor_quantile.isna().all().all() and ours.rank_ic.isna().all().all()
