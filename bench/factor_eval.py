"""evaluate_factor beside alphalens-reloaded (the reference, same run, same inputs) on the real CSI 300 panel and a
seeded synthetic 3,000 codes x 1,250 dates panel, periods 1/5/20: median wall time of ROUNDS interleaved rounds for
each (untraced), the ratio, the goal (GOAL x faster on the synthetic panel), peak memory of one more call of ours
under tracemalloc, and max |difference| of Rank IC and quantile means (the tests hold 1e-9).
Then factor values written to PostgreSQL (COPY) in rows per second for 300 x 1,250 and 3,000 x 1,250.

`python -m bench factor_eval`; `run(quick=True)` takes small panels and one round (tests call it).
"""

from __future__ import annotations

import statistics
import time
import tracemalloc
import uuid
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from bench import goals
from bench.pg import PostgresUnavailable, scratch_database
from tools.factors.ic import FactorEvaluation, evaluate_factor
from tools.factors.store import FactorStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
PERIODS = (1, 5, 20)
ROUNDS = 5
GOAL = 30.0  # alphalens-reloaded / ours on the synthetic panel
QUICK_CODES, QUICK_DATES = 120, 150


@dataclass(frozen=True)
class Row:
    label: str
    ours_s: float
    alphalens_s: float
    ours_peak_mib: float
    rank_ic_diff: float
    quantile_mean_diff: float

    @property
    def ratio(self) -> float:
        return self.alphalens_s / self.ours_s


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


def _ours(factor: pd.DataFrame, prices: pd.DataFrame) -> FactorEvaluation:
    return evaluate_factor(factor, prices, PERIODS, 5)


def compare(label: str, factor: pd.DataFrame, prices: pd.DataFrame, rounds: int) -> Row:
    """Median seconds of ours and of alphalens-reloaded over `rounds` interleaved rounds, after one warm-up call
    of ours; then ours once more under tracemalloc."""
    _ours(factor, prices)
    ours_t, al_t = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        ours = _ours(factor, prices)
        middle = time.perf_counter()
        ic, mean = _alphalens(factor, prices)
        ours_t.append(middle - start)
        al_t.append(time.perf_counter() - middle)
    tracemalloc.start()
    _ours(factor, prices)
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    ic_diff = max(float(np.nanmax(np.abs(ours.rank_ic[p].reindex(ic.index).to_numpy() - ic[c].to_numpy())))
                  for p, c in zip(PERIODS, ic.columns, strict=True))
    q_diff = max(float(np.nanmax(np.abs(ours.quantile_mean[p].to_numpy() - mean[c].to_numpy())))
                 for p, c in zip(PERIODS, mean.columns, strict=True))
    return Row(label, statistics.median(ours_t), statistics.median(al_t), peak, ic_diff, q_diff)


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


def run(quick: bool = False) -> list[Row]:
    """Compare on both panels and print each row; quick: small panels, one round, no PostgreSQL."""
    rounds = 1 if quick else ROUNDS
    factor, close = csi300()
    synthetic_panel = synthetic(QUICK_CODES, QUICK_DATES) if quick else synthetic()
    if quick:
        factor, close = factor.iloc[:QUICK_DATES, :QUICK_CODES], close.iloc[:, :QUICK_CODES]
    real = f"CSI 300 (tushare, {factor.shape[1]} codes x {factor.shape[0]:,} dates, 20-day reversal)"
    made = f"synthetic {synthetic_panel[0].shape[1]:,} codes x {synthetic_panel[0].shape[0]:,} dates"
    panels = {real: (factor, close), made: synthetic_panel}
    print(f"median of {rounds} interleaved round(s); goal: alphalens-reloaded / ours >= {GOAL:.0f}x on the synthetic "
          "panel, numbers equal to <= 1e-9")
    rows = []
    for label, (f, prices) in panels.items():
        row = compare(label, f, prices, rounds)
        goal = ""
        if label == made:
            goal = f" | goal {GOAL:.0f}x: {goals.judge(f'{GOAL:.0f}x faster', row.ratio >= GOAL, quick)}"
        print(f"{label}: alphalens-reloaded {row.alphalens_s:.2f} s | evaluate_factor {row.ours_s:.3f} s "
              f"(peak {row.ours_peak_mib:.0f} MiB) | {row.ratio:.1f}x faster{goal} | max |diff| Rank IC "
              f"{row.rank_ic_diff:.1e}, quantile means {row.quantile_mean_diff:.1e}")
        rows.append(row)
    return rows


def main(quick: bool = False) -> None:
    if not SHARED.is_dir():
        print(f"skipped: the shared data folder {SHARED} is missing")
        return
    run(quick)
    if not quick:
        bench_copy()
