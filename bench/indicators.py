"""tools.indicators beside TA-Lib on the real CSI 300 panel (300 codes x 1,288 days, unadjusted closes).

MA(20), EMA(20), RSI(14), MACD(12, 26, 9) and BOLL(20, 2): ours take the wide close frame and return wide frames,
each code computed on its own trading days. TA-Lib is the `ta-lib` wheel called once per stock on arrays of that
stock's own trading days prepared beforehand (not timed), results kept. The runs are interleaved and each figure
is the best of ROUNDS wall times. Goal: the five together no slower than 2x TA-Lib.

Also printed, for scale: the same TA-Lib calls with the pandas glue a caller would write (per code: dropna, call,
Series, then one frame; best of 3), and ATR(14) and KDJ(9, 3, 3), which are outside the goal.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import talib

from tools import indicators as ind
from tools.data.provider import to_wide

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
ROUNDS = 25
GOAL = 2.0


def _load() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    daily = pd.read_parquet(SHARED / "cn_csi300_tushare" / "daily.parquet")
    return to_wide(daily, "high"), to_wide(daily, "low"), to_wide(daily, "close")


def _cases(close: pd.DataFrame) -> dict[str, tuple[Callable[[], object], Callable[[], object], Callable[[], object]]]:
    """Per indicator: (ours, TA-Lib per stock on prepared arrays, TA-Lib per stock with pandas glue)."""
    own = [close[code].dropna().to_numpy() for code in close.columns]

    def glue(fn: Callable[[np.ndarray], np.ndarray | tuple[np.ndarray, ...]]) -> Callable[[], object]:
        def run() -> list[pd.DataFrame]:
            parts: dict[str, list[pd.Series]] = {}
            for code in close.columns:
                s = close[code].dropna()
                result = fn(s.to_numpy())
                for k, r in enumerate(result if isinstance(result, tuple) else (result,)):
                    parts.setdefault(str(k), []).append(pd.Series(r, index=s.index, name=code))
            return [pd.concat(series, axis=1).reindex(close.index) for series in parts.values()]
        return run

    talib_fns: dict[str, Callable[[np.ndarray], np.ndarray | tuple[np.ndarray, ...]]] = {
        "MA(20)": lambda x: talib.SMA(x, 20),
        "EMA(20)": lambda x: talib.EMA(x, 20),
        "RSI(14)": lambda x: talib.RSI(x, 14),
        "MACD(12,26,9)": lambda x: talib.MACD(x, 12, 26, 9),
        "BOLL(20,2)": lambda x: talib.BBANDS(x, 20, 2.0, 2.0, 0),
    }
    ours: dict[str, Callable[[], object]] = {
        "MA(20)": lambda: ind.ma(close, 20),
        "EMA(20)": lambda: ind.ema(close, 20),
        "RSI(14)": lambda: ind.rsi(close, 14),
        "MACD(12,26,9)": lambda: ind.macd(close),
        "BOLL(20,2)": lambda: ind.boll(close),
    }
    return {name: (ours[name], (lambda f=fn: [f(x) for x in own]), glue(fn)) for name, fn in talib_fns.items()}


def _best(times: dict[str, list[float]]) -> dict[str, float]:
    return {k: min(v) for k, v in times.items()}


def _max_diff(close: pd.DataFrame) -> float:
    """Largest |ours − TA-Lib| over every output, code and trading day (a sanity check; the tests hold 1e-9)."""
    worst = 0.0
    results = [ind.ma(close, 20), ind.ema(close, 20), ind.rsi(close), ind.macd(close), ind.boll(close)]
    fns = [lambda x: (talib.SMA(x, 20),), lambda x: (talib.EMA(x, 20),), lambda x: (talib.RSI(x, 14),),
           lambda x: talib.MACD(x, 12, 26, 9), lambda x: talib.BBANDS(x, 20, 2.0, 2.0, 0)]
    for result, fn in zip(results, fns, strict=True):
        for code in close.columns:
            traded = close[code].notna().to_numpy()
            for frame, want in zip(result.outputs.values(), fn(close[code].to_numpy()[traded]), strict=True):
                diff = np.abs(frame[code].to_numpy()[traded] - want)
                if np.isfinite(diff).any():
                    worst = max(worst, float(np.nanmax(diff)))
    return worst


def main() -> None:
    if not SHARED.is_dir():
        print(f"skipped: the shared data folder {SHARED} is missing")
        return
    high, low, close = _load()
    gaps = sum(1 for c in close.columns if close[c].loc[close[c].first_valid_index():close[c].last_valid_index()]
               .isna().any())
    cases = _cases(close)
    ours_t: dict[str, list[float]] = {k: [] for k in cases}
    talib_t: dict[str, list[float]] = {k: [] for k in cases}
    glue_t: dict[str, list[float]] = {k: [] for k in cases}
    for ours, bare, glued in cases.values():  # warm up
        ours(), bare(), glued()
    for _ in range(ROUNDS):
        for name, (ours, bare, glued) in cases.items():
            for fn, sink in ((bare, talib_t), (ours, ours_t), (glued, glue_t))[: 3 if len(glue_t[name]) < 3 else 2]:
                start = time.perf_counter()
                fn()
                sink[name].append(time.perf_counter() - start)
    ours_b, talib_b, glue_b = _best(ours_t), _best(talib_t), _best(glue_t)
    print(f"CSI 300 closes: {close.shape[1]} codes x {close.shape[0]} days, {gaps} codes with gaps; "
          f"best of {ROUNDS} interleaved rounds (glue: 3), ms")
    print(f"{'indicator':15s} {'ours':>8s} {'TA-Lib':>8s} {'ratio':>6s} {'TA-Lib+pandas glue':>19s}")
    for name in cases:
        print(f"{name:15s} {ours_b[name] * 1e3:8.2f} {talib_b[name] * 1e3:8.2f} "
              f"{ours_b[name] / talib_b[name]:6.2f} {glue_b[name] * 1e3:19.2f}")
    total_ours, total_talib, total_glue = sum(ours_b.values()), sum(talib_b.values()), sum(glue_b.values())
    ratio = total_ours / total_talib
    print(f"{'all five':15s} {total_ours * 1e3:8.2f} {total_talib * 1e3:8.2f} {ratio:6.2f} {total_glue * 1e3:19.2f}"
          f"   goal <= {GOAL:.1f}x TA-Lib: {'met' if ratio <= GOAL else 'NOT met'}")
    extra = {"ATR(14)": lambda: ind.atr(high, low, close), "KDJ(9,3,3)": lambda: ind.kdj(high, low, close)}
    for name, fn in extra.items():
        fn()
        print(f"{name:15s} {min(_timed(fn) for _ in range(5)) * 1e3:8.2f}   (outside the goal)")
    print(f"max |ours - TA-Lib| over all outputs and codes: {_max_diff(close):.1e}")


def _timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


if __name__ == "__main__":
    main()
