"""Stored factor values against the same factors computed here, independently, from the source files.

Each test runs the factor workflow the way a user does (the main graph: `factor KIND CODES START END ...`,
approve at code review), then reads the values back through the FactorStore and compares them, cell by cell,
with a computation written here from the raw Parquet files of the bundled sample (read with pandas, not
through the data provider): the library's documented definitions, per code on the trading calendar
(a code's suspended day is a date without its row, so its value there is missing):

- momentum(N)   = close_t / close_{t-N} - 1                 ("return over the last N trading days")
- reversal(N)   = -(close_t / close_{t-N} - 1)
- volatility(N) = sample std (ddof 1) of the last N daily returns close_t / close_{t-1} - 1
- turnover(N)   = mean turnover_rate (%) of the last N days
- value         = 1 / pe_ttm where pe_ttm > 0, else missing

Only finite values are stored, so the comparison is of the set of stored (date, code) cells as well as of
their values; the warm-up (the first N dates of the data have no value; a later start uses the history
before it) and suspended days are asserted on explicitly.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from numpy.lib.stride_tricks import sliding_window_view

from graphs.context import WorkflowContext
from testkit.graph_thread import GraphThread
from tools.data.local import LocalProvider, SampleProvider, sample_dir
from tools.data.provider import MarketDataProvider
from tools.factors.store import FactorStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

# 600489.SH has no row on 20191128, 002236.SZ none on 20191008-20191009 (suspended); the others trade daily
CODES = ("000001.SZ", "600519.SH", "600036.SH", "600489.SH", "002236.SZ")


@pytest.fixture(scope="module")
def raw() -> dict[str, pd.DataFrame]:
    """The sample's source files, long, for CODES only."""
    return {name: pd.read_parquet(sample_dir() / f"{name}.parquet").query("ts_code in @CODES")
            for name in ("daily", "daily_basic")}


def wide(raw_long: pd.DataFrame, field: str) -> pd.DataFrame:
    """dates x CODES on the calendar of the dates any of CODES trades (the frames a factor sees)."""
    out = raw_long.pivot(index="trade_date", columns="ts_code", values=field).reindex(columns=list(CODES))
    out.index = pd.to_datetime(out.index, format="%Y%m%d")
    return out.sort_index().astype(float)


def n_day_return(close: pd.DataFrame, n: int) -> pd.DataFrame:
    values = close.to_numpy()
    out = np.full_like(values, np.nan)
    out[n:] = values[n:] / values[:-n] - 1  # NaN when either end has no price
    return pd.DataFrame(out, index=close.index, columns=close.columns)


def trailing(frame: pd.DataFrame, n: int, stat: Callable[[np.ndarray], np.ndarray]) -> pd.DataFrame:
    """stat over each trailing window of n rows (axis -1 of the windows), NaN when any value is missing."""
    values = frame.to_numpy()
    out = np.full_like(values, np.nan)
    windows = sliding_window_view(values, n, axis=0)  # (dates - n + 1, codes, n)
    with np.errstate(invalid="ignore"):
        out[n - 1:] = np.where(np.isnan(windows).any(axis=-1), np.nan, stat(windows))
    return pd.DataFrame(out, index=frame.index, columns=frame.columns)


def momentum(raw: dict[str, pd.DataFrame], n: int) -> pd.DataFrame:
    return n_day_return(wide(raw["daily"], "close"), n)


def reversal(raw: dict[str, pd.DataFrame], n: int) -> pd.DataFrame:
    return -n_day_return(wide(raw["daily"], "close"), n)


def volatility(raw: dict[str, pd.DataFrame], n: int) -> pd.DataFrame:
    daily_returns = n_day_return(wide(raw["daily"], "close"), 1)
    return trailing(daily_returns, n, lambda w: np.std(w, axis=-1, ddof=1))


def turnover(raw: dict[str, pd.DataFrame], n: int) -> pd.DataFrame:
    return trailing(wide(raw["daily_basic"], "turnover_rate"), n, lambda w: w.mean(axis=-1))


@pytest.fixture
def run_factor(sqlite_url: str, sandbox: Sandbox) -> Iterator[Callable[..., pd.DataFrame]]:
    """Run `factor REQUEST name=NAME` through the main graph on SQLite, approving the code review and the save
    approval that a factor on fewer than 20 codes asks for (and nothing else); returns the stored values of NAME
    read back from the factor library."""
    engine = make_engine(sqlite_url)
    upgrade(engine)

    def run(request: str, name: str, provider: MarketDataProvider | None = None) -> pd.DataFrame:
        ctx = WorkflowContext(provider=provider or SampleProvider(), engine=engine, sandbox=sandbox,
                              artifacts=ArtifactStore(engine))
        thread = GraphThread(sqlite_url, ctx)
        out: dict[str, Any] = thread.say(f"factor {request} name={name}")
        assert "__interrupt__" in out, out.get("final_reply")
        (pending,) = out["__interrupt__"]
        assert pending.value["type"] == "code_review", pending.value
        assert pending.value["failure"] is None, pending.value["failure"]
        out = thread.decide(out, {"type": "approve"})
        (save,) = out["__interrupt__"]  # these tests use up to 5 codes: saving asks, for that reason alone
        assert save.value["action"] == "save_factor", save.value
        assert "too few codes" in save.value["description"] and "nearly repeat" not in save.value["description"]
        out = thread.decide(out, {"type": "approve"})
        assert "__interrupt__" not in out, out["__interrupt__"][0].value
        store = FactorStore(engine)
        info = store.latest(name)
        assert info is not None, out.get("final_reply")
        values = store.values(info.id)
        assert store.count_values(info.id) == int(values.notna().sum().sum())
        return values

    yield run
    engine.dispose()


def assert_stored(stored: pd.DataFrame, expected: pd.DataFrame, start: str, end: str) -> pd.Series:
    """The stored cells are exactly the finite expected cells in [start, end], with the same values."""
    expected = expected.loc[pd.Timestamp(start): pd.Timestamp(end)]
    want = expected.stack(future_stack=True)
    want = want[np.isfinite(want)]
    got = stored.stack(future_stack=True).dropna()
    missing, extra = want.index.difference(got.index), got.index.difference(want.index)
    assert missing.empty and extra.empty, f"not stored: {list(missing)[:10]}; stored but not expected: " \
                                          f"{list(extra)[:10]}"
    np.testing.assert_allclose(got.reindex(want.index).to_numpy(), want.to_numpy(), rtol=1e-9, atol=1e-12)
    return got


def calendar(raw: dict[str, pd.DataFrame]) -> pd.DatetimeIndex:
    return wide(raw["daily"], "close").index


def test_momentum_from_the_first_date_of_the_data(run_factor, raw: dict[str, pd.DataFrame]) -> None:
    """The sample starts on 20190102: the first 5 dates have no 5-day return and are not stored."""
    start, end = "20190102", "20190430"
    stored = run_factor(f"momentum {' '.join(CODES)} {start} {end} window=5", "mom5")
    assert_stored(stored, momentum(raw, 5), start, end)
    dates = calendar(raw)
    assert dates[0] == pd.Timestamp(start) and stored.index[0] == dates[5]  # warm-up: dates[0..4] excluded
    in_range = dates[(dates >= pd.Timestamp(start)) & (dates <= pd.Timestamp(end))]
    assert stored.notna().sum().to_dict() == dict.fromkeys(CODES, len(in_range) - 5)
    # one cell straight from the raw rows: 000001.SZ on the 6th trading date against the 1st
    rows = raw["daily"].set_index(["ts_code", "trade_date"])["close"]
    assert stored.loc[pd.Timestamp("20190109"), "000001.SZ"] == pytest.approx(
        rows["000001.SZ", "20190109"] / rows["000001.SZ", "20190102"] - 1, rel=1e-12)


def test_reversal_mid_range_uses_history_before_start(run_factor, raw: dict[str, pd.DataFrame]) -> None:
    """A start inside the data: its first date already has values (from the warm-up history), nothing earlier is
    stored; a suspended day is missing, and so is the day whose 5-day-ago price is that suspended day."""
    start, end = "20191008", "20191231"
    stored = run_factor(f"reversal {' '.join(CODES)} {start} {end}", "rev5")  # default window 5
    assert_stored(stored, reversal(raw, 5), start, end)
    assert stored.index.min() == pd.Timestamp(start) and stored.index.max() == pd.Timestamp(end)
    first_day = stored.loc[pd.Timestamp(start)]
    assert first_day.drop("002236.SZ").notna().all()  # values on the start date, from pre-start prices
    assert np.isnan(first_day["002236.SZ"])  # suspended on 20191008-09
    dates = calendar(raw)
    suspended = dates.get_loc(pd.Timestamp("20191128"))
    gaps = stored["600489.SH"].loc[lambda s: s.isna()].index
    assert list(gaps) == [dates[suspended], dates[suspended + 5]]


def test_momentum_mid_range_default_window(run_factor, raw: dict[str, pd.DataFrame]) -> None:
    """Window 20 across the National Day holiday: the warm-up must reach 20 trading days back."""
    start, end = "20191008", "20191231"
    stored = run_factor(f"momentum {' '.join(CODES)} {start} {end}", "mom20")
    assert_stored(stored, momentum(raw, 20), start, end)
    assert stored.loc[pd.Timestamp(start)].drop("002236.SZ").notna().all()


def test_volatility_window_and_suspension(run_factor, raw: dict[str, pd.DataFrame]) -> None:
    """A missing price removes two daily returns (into and out of the gap): every 10-return window holding either
    has no value, i.e. the suspended day and the 10 dates after it."""
    start, end = "20191008", "20191231"
    stored = run_factor(f"volatility {' '.join(CODES)} {start} {end} window=10", "vol10")
    got = assert_stored(stored, volatility(raw, 10), start, end)
    assert (got > 0).all() and got.max() < 0.2  # a daily-return std, not annualised or in percent
    dates = calendar(raw)
    suspended = dates.get_loc(pd.Timestamp("20191128"))
    gaps = stored["600489.SH"].loc[lambda s: s.isna()].index
    assert list(gaps) == list(dates[suspended: suspended + 11])
    # 002236.SZ: no price on 20191008-09, so the first value is 10 returns after the gap closes
    first = stored["002236.SZ"].first_valid_index()
    assert first == dates[dates.get_loc(pd.Timestamp("20191010")) + 10]


def test_turnover_from_daily_basic(run_factor, raw: dict[str, pd.DataFrame]) -> None:
    """turnover_rate comes from daily_basic; 20-day mean, warm-up across the Spring Festival before 20190301."""
    start, end = "20190301", "20190628"
    stored = run_factor(f"turnover {' '.join(CODES)} {start} {end}", "turn20")  # default window 20
    assert_stored(stored, turnover(raw, 20), start, end)
    assert stored.index.min() == pd.Timestamp(start) and stored.loc[pd.Timestamp(start)].notna().all()


def test_value_from_pe_ttm(run_factor, raw: dict[str, pd.DataFrame], tmp_path: Path) -> None:
    """value = 1 / pe_ttm for positive PE only. The sample has no pe_ttm, so a local data folder gets the sample's
    bars and a daily_basic file written here with loss-makers (PE < 0), a zero PE and missing rows."""
    codes = CODES[:3]
    daily = raw["daily"].query("ts_code in @codes and trade_date <= '20190430'")
    basic = daily[["ts_code", "trade_date"]].reset_index(drop=True)
    day = basic.groupby("ts_code").cumcount().to_numpy()
    pe = np.where(basic.ts_code == codes[0], 8.0 + day * 0.25,  # always positive
                  np.where(basic.ts_code == codes[1], np.where(day % 6 == 0, -12.5, 30.0 - day * 0.1),
                           np.where(day % 5 == 1, 0.0, 15.0 + day)))  # negative every 6th day; zero every 5th
    basic = basic.assign(pe_ttm=pe)
    basic = basic[~((basic.ts_code == codes[2]) & (day % 7 == 3))]  # no row at all on some days
    # (sparse enough that the dry run's coverage check passes: at most 10% of dates with one code of three)
    folder = tmp_path / "local"
    folder.mkdir()
    daily.to_parquet(folder / "daily.parquet")
    basic.to_parquet(folder / "daily_basic.parquet")

    start, end = "20190201", "20190430"
    stored = run_factor(f"value {' '.join(codes)} {start} {end}", "ep", LocalProvider(folder))
    pe_wide = basic.pivot(index="trade_date", columns="ts_code", values="pe_ttm").reindex(columns=list(codes))
    pe_wide.index = pd.to_datetime(pe_wide.index, format="%Y%m%d")
    expected = pd.DataFrame(np.where(pe_wide > 0, 1.0 / pe_wide.where(pe_wide != 0), np.nan),
                            index=pe_wide.index, columns=pe_wide.columns)
    got = assert_stored(stored, expected, start, end)
    assert (got > 0).all()  # no loss-maker, zero or infinite value was stored
    assert stored[codes[1]].isna().sum() >= 8 and stored[codes[2]].isna().sum() >= 15  # those are left out
    assert stored[codes[0]].notna().all()  # no warm-up: the first date has a value
