"""tools.research.indicators beside TA-Lib alone on the real CSI 300 panel (300 codes x 1,288 days, unadjusted; 92 codes
have gaps).

Ours take wide frames and return wide frames, each code computed on its own trading days. The reference is the
`ta-lib` wheel called once per code on arrays of that code's own trading days prepared beforehand (not timed), as
`talib.SMA(x, 5)` etc. Each round runs every indicator, reference then ours; a figure is the median of ROUNDS
rounds. Goal: every indicator at most GOAL x TA-Lib, i.e. the glue (wide frames in and out, gaps) costs at most
half of TA-Lib's own time. The values must be TA-Lib's exactly: max |ours - TA-Lib| over every output is printed.
KDJ, which TA-Lib lacks, is timed alone.

Ours prepares a frame once (its values code by code, where each code traded) and reuses that for the next indicator
on the same frame, so the per-indicator rows (and "all together", their sum) run on prepared frames. "new frames" is
measured apart in each round: TA-Lib's seven loops back to back against ours on new frames (shallow copies, made
untimed), so it includes preparing them.

Times are this process's CPU time (`time.process_time`): both sides are single-threaded and CPU-bound, so on an idle
machine it is their wall time, and on a shared one it leaves out the time the scheduler gives other processes (which
moved wall-clock medians by 2-5x between runs on the 2-core development machine).

`python -m bench indicators`; `run(quick=True)` takes a small panel and one round (tests call it).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import talib

from bench import goals
from tools.data.provider import to_wide
from tools.research import indicators as ind

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ROUNDS = 15
GOAL = 1.5  # ours / TA-Lib alone, per indicator
QUICK_CODES, QUICK_DAYS = 30, 300
NEW_FRAMES = "new frames"

Outputs = tuple[np.ndarray, ...]
_clock = time.process_time  # see the module docstring


@dataclass(frozen=True)
class Row:
    name: str
    ours_ms: float
    talib_ms: float
    max_diff: float  # max |ours - TA-Lib| over every output, code and trading day

    @property
    def ratio(self) -> float:
        return self.ours_ms / self.talib_ms


@dataclass(frozen=True)
class _Case:
    ours: Callable[[], ind.IndicatorResult]
    talib: Callable[[np.ndarray, np.ndarray, np.ndarray], Outputs]  # one code's own days (high, low, close)


def _cases(high: pd.DataFrame, low: pd.DataFrame, close: pd.DataFrame) -> dict[str, _Case]:
    return {
        "SMA(5)": _Case(lambda: ind.ma(close, 5), lambda h, lo, c: (talib.SMA(c, 5),)),
        "SMA(20)": _Case(lambda: ind.ma(close, 20), lambda h, lo, c: (talib.SMA(c, 20),)),
        "EMA(20)": _Case(lambda: ind.ema(close, 20), lambda h, lo, c: (talib.EMA(c, 20),)),
        "RSI(14)": _Case(lambda: ind.rsi(close, 14), lambda h, lo, c: (talib.RSI(c, 14),)),
        "MACD(12,26,9)": _Case(lambda: ind.macd(close), lambda h, lo, c: talib.MACD(c, 12, 26, 9)),
        "BBANDS(20,2)": _Case(lambda: ind.boll(close), lambda h, lo, c: talib.BBANDS(c, 20, 2.0, 2.0, 0)),
        "ATR(14)": _Case(lambda: ind.atr(high, low, close), lambda h, lo, c: (talib.ATR(h, lo, c, 14),)),
    }


def _own_days(high: pd.DataFrame, low: pd.DataFrame, close: pd.DataFrame,
              needs_all: bool) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray, np.ndarray]]]:
    """Per code: its trading-day mask and its (high, low, close) on those days (close alone unless `needs_all`)."""
    masks, arrays = [], []
    for code in close.columns:
        traded = close[code].notna().to_numpy()
        if needs_all:
            traded = traded & high[code].notna().to_numpy() & low[code].notna().to_numpy()
        masks.append(traded)
        arrays.append(tuple(np.ascontiguousarray(f[code].to_numpy(dtype=float)[traded]) for f in (high, low, close)))
    return masks, arrays


def _max_diff(result: ind.IndicatorResult, masks: list[np.ndarray], expected: list[Outputs]) -> float:
    """Largest |ours - TA-Lib| over every output and code; inf where NaNs differ in place."""
    worst = 0.0
    for k, frame in enumerate(result.outputs.values()):
        values = frame.to_numpy()
        for j, (traded, want) in enumerate(zip(masks, expected, strict=True)):
            column = values[:, j]
            if not np.isnan(column[~traded]).all():
                return float("inf")
            got = column[traded]
            if not np.array_equal(np.isnan(got), np.isnan(want[k])):
                return float("inf")
            diff = np.abs(got - want[k])
            if np.isfinite(diff).any():
                worst = max(worst, float(np.nanmax(diff)))
    return worst


def measure(high: pd.DataFrame, low: pd.DataFrame, close: pd.DataFrame, rounds: int) -> tuple[list[Row], Row]:
    """Median ms of ours and of TA-Lib per indicator over `rounds` interleaved rounds after one warm-up round; then the
    same for all of them together on new frames."""
    cases = _cases(high, low, close)
    masks_c, own_c = _own_days(high, low, close, needs_all=False)
    masks_hlc, own_hlc = _own_days(high, low, close, needs_all=True)
    days = {name: (masks_hlc, own_hlc) if name.startswith("ATR") else (masks_c, own_c) for name in cases}
    ours_t: dict[str, list[float]] = {name: [] for name in [*cases, NEW_FRAMES]}
    talib_t: dict[str, list[float]] = {name: [] for name in [*cases, NEW_FRAMES]}
    last: dict[str, tuple[ind.IndicatorResult, list[Outputs]]] = {}
    on_new: dict[str, ind.IndicatorResult] = {}
    for round_ in range(rounds + 1):
        for name, case in cases.items():
            own = days[name][1]
            start = _clock()
            expected = [case.talib(*x) for x in own]
            middle = _clock()
            result = case.ours()
            end = _clock()
            if round_:  # round 0 warms up
                talib_t[name].append(middle - start)
                ours_t[name].append(end - middle)
            last[name] = (result, expected)
    for round_ in range(rounds + 1):  # apart, so that preparing new frames does not disturb the rows above
        fresh = _cases(*(frame.copy(deep=False) for frame in (high, low, close)))  # new frames: prepared again
        start = _clock()
        for name, case in cases.items():
            for x in days[name][1]:
                case.talib(*x)
        middle = _clock()
        on_new = {name: case.ours() for name, case in fresh.items()}
        end = _clock()
        if round_:
            talib_t[NEW_FRAMES].append(middle - start)
            ours_t[NEW_FRAMES].append(end - middle)
    rows = [Row(name, statistics.median(ours_t[name]) * 1e3, statistics.median(talib_t[name]) * 1e3,
                _max_diff(last[name][0], days[name][0], last[name][1])) for name in cases]
    worst = max(_max_diff(on_new[name], days[name][0], last[name][1]) for name in cases)
    return rows, Row(NEW_FRAMES, statistics.median(ours_t[NEW_FRAMES]) * 1e3,
                     statistics.median(talib_t[NEW_FRAMES]) * 1e3, worst)


def _kdj_ms(high: pd.DataFrame, low: pd.DataFrame, close: pd.DataFrame, rounds: int) -> float:
    times = []
    for _ in range(rounds + 1):
        start = _clock()
        ind.kdj(high, low, close)
        times.append(_clock() - start)
    return statistics.median(times[1:]) * 1e3


def load(quick: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """High, low, close of the CSI 300 panel (quick: the last QUICK_DAYS days of the first QUICK_CODES codes)."""
    daily = pd.read_parquet(SHARED / "cn_csi300_tushare" / "daily.parquet", columns=["ts_code", "trade_date", "high",
                                                                                    "low", "close"])
    frames = tuple(to_wide(daily, field) for field in ("high", "low", "close"))
    if quick:
        frames = tuple(f.iloc[-QUICK_DAYS:, :QUICK_CODES] for f in frames)
    return frames  # type: ignore[return-value]


def run(quick: bool = False) -> list[Row]:
    """Measure and print every row; quick: a small panel and one round."""
    high, low, close = load(quick)
    rounds = 1 if quick else ROUNDS
    gaps = sum(1 for c in close.columns if close[c].loc[close[c].first_valid_index():close[c].last_valid_index()]
               .isna().any())
    rows, new_frames = measure(high, low, close, rounds)
    print(f"CSI 300: {close.shape[1]} codes x {close.shape[0]} days, {gaps} codes with gaps; "
          f"median of {rounds} interleaved round(s), CPU ms; goal: ours <= {GOAL:.1f}x TA-Lib alone")
    print(f"{'indicator':15s} {'TA-Lib':>8s} {'ours':>8s} {'ratio':>6s} {'goal':>6s}  {'max |diff|':>10s}")
    ours, reference = sum(r.ours_ms for r in rows), sum(r.talib_ms for r in rows)
    summed = Row("all together", ours, reference, max(r.max_diff for r in rows))
    for row in [*rows, summed, new_frames]:
        print(f"{row.name:15s} {row.talib_ms:8.2f} {row.ours_ms:8.2f} {row.ratio:6.2f} {GOAL:6.1f}  "
              f"{row.max_diff:10.1e}  {goals.judge(f'{row.name} <= {GOAL:.1f}x TA-Lib', row.ratio <= GOAL, quick)}")
    print("  (all together: the rows' sum, frames prepared; new frames: the seven in one go on new frames, "
          "preparing them included)")
    print(f"{'KDJ(9,3,3)':15s} {'':8s} {_kdj_ms(high, low, close, rounds):8.2f}   (TA-Lib has no KDJ)")
    return rows


def main(quick: bool = False) -> None:
    if not SHARED.is_dir():
        print(f"skipped: the shared data folder {SHARED} is missing")
        return
    run(quick)


if __name__ == "__main__":
    main()
