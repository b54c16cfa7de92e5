"""The truncation test (tools/research/lookahead.py) on real prices from the bundled sample: code that reads the
future is caught and the first changed date is named; code that only reads the past passes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

from tools.data.local import SampleProvider
from tools.research.lookahead import CutRunError, cut_date, lookahead_problem

CODES = "000001.SZ,600519.SH,600036.SH"


@pytest.fixture(scope="module")
def close() -> pd.DataFrame:
    return SampleProvider().wide("close", CODES, "20190102", "20190329")  # 58 trade dates, no gaps


def truncated(code: Callable[[pd.DataFrame], pd.DataFrame | pd.Series], data: pd.DataFrame,
              cuts: list[pd.Timestamp]) -> Callable[[pd.Timestamp], pd.DataFrame | pd.Series]:
    """`code` run on `data` cut at the date it is given; the dates asked for are recorded in `cuts`."""
    def run(cut: pd.Timestamp) -> pd.DataFrame | pd.Series:
        cuts.append(cut)
        return code(data.loc[:cut])
    return run


def test_next_day_price_is_caught_at_the_cut(close: pd.DataFrame) -> None:
    assert len(close) == 58 and close.notna().all().all()
    cuts: list[pd.Timestamp] = []
    problem = lookahead_problem(truncated(lambda c: c.shift(-1), close, cuts), close.shift(-1), "the factor")
    # 57 dates have a value (the last has no next day); the cut leaves 60% of them before it: int(57 * .6) = 34
    assert cuts == [close.index[34]]
    # the value on the cut date is the next day's price in the full run and missing in the cut run
    assert problem is not None and problem.startswith(f"look-ahead: the factor on {close.index[34]:%Y%m%d} changes "
                                                      f"when the data after {close.index[34]:%Y%m%d} is removed")


def test_a_series_using_shift_minus_one_is_caught(close: pd.DataFrame) -> None:
    series = close["600519.SH"]
    problem = lookahead_problem(lambda cut: (series.loc[:cut] < series.loc[:cut].shift(-1)).astype(float),
                                (series < series.shift(-1)).astype(float))
    assert problem is not None and problem.startswith("look-ahead: the output on ")


def test_rolling_mean_is_not_caught(close: pd.DataFrame) -> None:
    cuts: list[pd.Timestamp] = []
    assert lookahead_problem(truncated(lambda c: c.rolling(5).mean(), close, cuts), close.rolling(5).mean()) is None
    assert len(cuts) == 1  # it really ran on cut data
    series = close["000001.SZ"]
    assert lookahead_problem(lambda cut: series.loc[:cut].rolling(5).mean(), series.rolling(5).mean()) is None


def test_full_sample_statistics_change_every_date(close: pd.DataFrame) -> None:
    def demeaned(c: pd.DataFrame) -> pd.DataFrame:
        return c - c.mean()
    problem = lookahead_problem(truncated(demeaned, close, []), demeaned(close), "the signal")
    assert problem is not None and f"the signal on {close.index[0]:%Y%m%d} changes" in problem


def test_the_cut_lies_among_the_dates_with_values() -> None:
    index = pd.bdate_range("2024-01-01", periods=50)
    frame = pd.DataFrame({"a": np.r_[np.full(20, np.nan), np.arange(30.0)]}, index=index)  # 20 warm-up rows
    assert cut_date(frame) == index[20 + 18]  # 60% of the 30 dates with values before the cut
    assert cut_date(frame.iloc[:29]) is None  # 9 dates with values: too short to test
    assert lookahead_problem(lambda cut: pytest.fail("ran on a frame too short to test"), frame.iloc[:29]) is None


def test_failures_and_other_outputs_on_cut_data_are_problems(close: pd.DataFrame) -> None:
    def fails(cut: pd.Timestamp) -> pd.DataFrame:
        raise CutRunError("NameError: name 'x' is not defined")
    cut = close.index[int(58 * 0.6)]
    problem = lookahead_problem(fails, close, "the signal")
    assert problem == f"the signal fails on the data cut at {cut:%Y%m%d}: NameError: name 'x' is not defined"
    problem = lookahead_problem(lambda cut: close.loc[:cut, "000001.SZ"], close)
    assert problem == f"on the data cut at {cut:%Y%m%d}, the output is a Series, not a DataFrame"
