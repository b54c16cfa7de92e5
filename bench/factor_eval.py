"""evaluate_factor against alphalens-reloaded (same run, same inputs) on the real CSI 300 panel and a seeded
synthetic 3,000 x 1,250 panel: wall time (best of 3 for ours, one run for alphalens; both untraced), the ratio,
peak memory (a separate run under tracemalloc), max |difference| of Rank IC and quantile means.
Then factor values written to PostgreSQL (COPY) in rows per second for 300 x 1,250 and 3,000 x 1,250."""

from __future__ import annotations

import time
import tracemalloc
import uuid
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from bench.pg import PostgresUnavailable, scratch_database
from tools.evaluation import evaluate_factor
from tools.factor_store import FactorStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PERIODS = (1, 5, 20)


def _measure(fn: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """(result, best wall seconds of `repeat` untraced calls, peak MiB of one more call under tracemalloc)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    tracemalloc.start()
    fn()
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return result, best, peak


def _alphalens(factor: pd.DataFrame, prices: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    import alphalens as al

    long = factor.stack().rename("factor")
    long.index.names = ["date", "asset"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = al.utils.get_clean_factor_and_forward_returns(long, prices, quantiles=5, periods=PERIODS,
                                                             filter_zscore=None, max_loss=1.0)
        ic = al.performance.factor_information_coefficient(data)
        mean, _ = al.performance.mean_return_by_quantile(data)
    return ic, mean


def _ours(factor: pd.DataFrame, prices: pd.DataFrame) -> Any:
    return evaluate_factor(factor, prices, PERIODS, 5)


def compare(label: str, factor: pd.DataFrame, prices: pd.DataFrame) -> None:
    ours, t_ours, m_ours = _measure(lambda: _ours(factor, prices), repeat=3)
    (ic, mean), t_al, m_al = _measure(lambda: _alphalens(factor, prices), repeat=1)
    ic_diff = max(float(np.nanmax(np.abs(ours.rank_ic[p].reindex(ic.index).to_numpy() - ic[c].to_numpy())))
                  for p, c in zip(PERIODS, ic.columns, strict=True))
    q_diff = max(float(np.nanmax(np.abs(ours.quantile_mean[p].to_numpy() - mean[c].to_numpy())))
                 for p, c in zip(PERIODS, mean.columns, strict=True))
    print(f"{label}: evaluate_factor {t_ours:.2f} s (peak {m_ours:.0f} MiB) | alphalens-reloaded {t_al:.2f} s "
          f"(peak {m_al:.0f} MiB) | {t_al / t_ours:.1f}x faster | max |diff| Rank IC {ic_diff:.1e}, "
          f"quantile means {q_diff:.1e}")


def csi300() -> tuple[pd.DataFrame, pd.DataFrame]:
    bars = pd.read_parquet(SHARED / "cn_csi300_tushare" / "daily.parquet", columns=["ts_code", "trade_date", "close"])
    close = bars.pivot(index="trade_date", columns="ts_code", values="close")
    close.index = pd.to_datetime(close.index, format="%Y%m%d")
    close = close.ffill()  # alphalens forward-fills; give both the same complete panel
    return -(close / close.shift(20) - 1).iloc[21:-1], close


def synthetic(codes: int = 3000, dates: int = 1250, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    index = pd.bdate_range("2018-01-02", periods=dates + 25)
    columns = [f"{i:06d}.SZ" for i in range(codes)]
    returns = rng.normal(0, 0.02, size=(len(index), codes))
    prices = pd.DataFrame(100 * np.exp(np.cumsum(returns, axis=0)), index=index, columns=columns)
    factor = pd.DataFrame(rng.normal(size=(dates, codes)), index=index[:dates], columns=columns)
    factor += 0.05 * prices.pct_change(-5, fill_method=None).iloc[:dates].to_numpy()  # a little real signal
    return factor, prices


def bench_copy() -> None:
    try:
        with scratch_database() as url:
            engine = make_engine(url)
            upgrade(engine)
            store = FactorStore(engine)
            for codes in (300, 3000):
                values, _ = synthetic(codes, 1250, seed=codes)
                start = time.perf_counter()
                store.save(name=f"bench_{codes}", description="bench", code="", spec={}, author=None,
                           reviewer=None, decision="approve", run_key=uuid.uuid4().hex, values=values)
                seconds = time.perf_counter() - start
                print(f"factor values to PostgreSQL (COPY): {codes} x 1,250 = {values.size:,} rows in "
                      f"{seconds:.2f} s = {values.size / seconds:,.0f} rows/s")
            engine.dispose()
    except PostgresUnavailable as exc:
        print(f"factor values to PostgreSQL: skipped (PostgreSQL unreachable: {exc})")


def main() -> None:
    compare("CSI 300 (tushare, 300 codes x 1,266 dates, 20-day reversal)", *csi300())
    compare("synthetic 3,000 codes x 1,250 dates", *synthetic())
    bench_copy()
