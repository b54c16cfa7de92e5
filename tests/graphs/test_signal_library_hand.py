"""Each built-in signal strategy against an independent computation, run the way the product runs it.

The strategies are requested through the signal subgraph's grammar (`signal NAME CODES START END k=v`), so
the real path is used: grammar → parameter resolution → data fetch from a real `LocalProvider` (CSV files
written here) → the library code in the sandbox → validation → the stored `signal/NAME` frame and the
report's counts. The expected signals are never produced by the library's own template:

- small frames with prices chosen so every +1 / -1 / 0 / NaN can be worked out by hand (the working is in
  the comments), checked against literal expectations;
- the same literal expectations are re-derived by plain-Python reference implementations (loops over
  lists, no pandas), which are also run against the product on a slice of the bundled real sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from graphs.context import WorkflowContext
from graphs.signal.graph import build_signal_graph
from testkit.graph_thread import GraphThread
from tools.data.local import LocalProvider, SampleProvider, sample_dir
from tools.data.provider import MarketDataProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

N = math.nan
A, B = "000001.SZ", "600000.SH"
FIVE = ("000001.SZ", "600000.SH", "600519.SH", "000002.SZ", "601318.SH")

Column = list[float]  # one code's values over the dates; NaN = no row that day


def trade_dates(n: int) -> list[str]:
    """n business days from Wed 2023-03-01 (the provider serves exactly the rows it is given)."""
    return list(pd.bdate_range("2023-03-01", periods=n).strftime("%Y%m%d"))


def write_provider(root: Path, dates: Sequence[str], bars: dict[str, dict[str, Column]],
                   basics: dict[str, dict[str, Column]] | None = None) -> LocalProvider:
    """daily.csv (and daily_basic.csv) in the tushare schema from field -> code -> values; a NaN close (or pe)
    means no row for that code and date, as tushare has no rows on suspended days."""
    root.mkdir(parents=True, exist_ok=True)

    def long(fields: dict[str, dict[str, Column]], key: str) -> pd.DataFrame:
        rows = []
        for code, keys in fields[key].items():
            for i, date in enumerate(dates):
                if not math.isnan(keys[i]):
                    rows.append({"ts_code": code, "trade_date": date,
                                 **{f: values[code][i] for f, values in fields.items()}})
        return pd.DataFrame(rows)

    daily = long(bars, "close")
    daily["open"] = daily["close"]  # the backtest's execution price; no strategy reads it
    daily.to_csv(root / "daily.csv", index=False)
    if basics is not None:
        long(basics, "pe").to_csv(root / "daily_basic.csv", index=False)
    return LocalProvider(root)


@pytest.fixture
def run_signal(tmp_path: Path, sandbox: Sandbox) -> Iterator[Callable[..., tuple[pd.DataFrame, dict[str, Any]]]]:
    """Run `signal REQUEST` through the signal subgraph on SQLite; (stored signal, result)."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    engine = make_engine(url)
    upgrade(engine)

    def run(provider: MarketDataProvider, request: str) -> tuple[pd.DataFrame, dict[str, Any]]:
        ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine))
        thread = GraphThread(url, ctx, build=build_signal_graph, requester=None)
        out = thread.say(f"signal {request}")
        assert out.get("result"), out.get("final_reply") or out.get("error_messages") or out.get("__interrupt__")
        result = out["result"]
        signal = thread.workspace.get(f"signal/{result['strategy']}")
        return signal, result

    yield run
    engine.dispose()


def frame(dates: Sequence[str], columns: dict[str, Column]) -> pd.DataFrame:
    return pd.DataFrame(columns, index=pd.DatetimeIndex(pd.to_datetime(list(dates), format="%Y%m%d")),
                        dtype="float64")


def assert_signal(signal: pd.DataFrame, result: dict[str, Any], dates: Sequence[str],
                  expected: dict[str, Column]) -> None:
    """The stored signal equals `expected` cell by cell (NaN where NaN), and the report counts agree."""
    want = frame(dates, expected)
    assert list(signal.columns) == list(want.columns)
    assert list(signal.index) == list(want.index)
    got = signal.to_numpy(dtype=float)
    same = (got == want.to_numpy()) | (np.isnan(got) & np.isnan(want.to_numpy()))
    if not same.all():
        diff = pd.DataFrame({"got": signal.stack(future_stack=True), "want": want.stack(future_stack=True)})
        raise AssertionError(f"signal differs from the hand computation:\n{diff[~same.ravel()]}")
    values = want.to_numpy()
    assert result["counts"] == {"buy": int((values == 1).sum()), "sell": int((values == -1).sum()),
                                "hold": int((values == 0).sum()), "missing": int(np.isnan(values).sum())}


# --- plain-Python references (no pandas): the strategies' documented definitions ---------------------------
# Each takes {field: {code: [values]}} and returns {code: [cell]}: 1 / -1 / 0, NaN where the definition has no
# value, CLOSE where the decision is within EPS (relative) of its threshold, too close to call in floating
# point (only happens on real data, and is skipped there).

EPS = 1e-9
CLOSE = "too close to call"
Cell = float | str


def _sign(up: float, down: float, scale: float = 1.0) -> Cell:
    """+1 when up > 0, -1 when down > 0, else 0; CLOSE when either is within EPS * scale of 0."""
    tolerance = EPS * max(1.0, abs(scale))
    if abs(up) < tolerance or abs(down) < tolerance:
        return CLOSE
    return 1.0 if up > 0 else -1.0 if down > 0 else 0.0


def _window(xs: Column, t: int, n: int) -> Column | None:
    """xs[t-n+1 .. t] when all present."""
    if t - n + 1 < 0:
        return None
    part = xs[t - n + 1: t + 1]
    return None if any(math.isnan(x) for x in part) else part


def _mean_std(xs: Column) -> tuple[float, float]:
    mean = sum(xs) / len(xs)
    return mean, math.sqrt(sum((x - mean) ** 2 for x in xs) / (len(xs) - 1))


def ref_ma_cross(data: dict[str, dict[str, Column]], fast: int, slow: int) -> dict[str, list[Cell]]:
    out = {}
    for code, close in data["close"].items():
        cells: list[Cell] = []
        for t in range(len(close)):
            f, s = _window(close, t, fast), _window(close, t, slow)
            if f is None or s is None:
                cells.append(N)
            elif sum(f) * slow == sum(s) * fast:
                cells.append(0.0)  # equal averages: hold
            else:
                gap = sum(f) / fast - sum(s) / slow  # fast above slow: long; below: sell
                cells.append(_sign(gap, -gap, close[t]))
        out[code] = cells
    return out


def _pct_ranks(values: dict[str, float]) -> dict[str, float]:
    """Percentile rank among the present values: average rank of ties / count (1 = highest)."""
    present = {c: v for c, v in values.items() if not math.isnan(v)}
    ranks = {}
    for code, v in present.items():
        below = sum(1 for w in present.values() if w < v)
        equal = sum(1 for w in present.values() if w == v)
        ranks[code] = (below + (equal + 1) / 2) / len(present)
    return ranks


def ref_momentum(data: dict[str, dict[str, Column]], window: int, top: float,
                 bottom: float) -> dict[str, list[Cell]]:
    close = data["close"]
    out: dict[str, list[Cell]] = {c: [] for c in close}
    for t in range(len(next(iter(close.values())))):
        # the N-day return; NaN when either end has no price
        returns = {c: xs[t] / xs[t - window] - 1 if t >= window else N for c, xs in close.items()}
        ranks = _pct_ranks(returns)
        for code in close:
            rank = ranks.get(code)
            out[code].append(N if rank is None else 1.0 if rank > 1 - top else -1.0 if rank <= bottom else 0.0)
    return out


def ref_mean_reversion(data: dict[str, dict[str, Column]], window: int, entry: float) -> dict[str, list[Cell]]:
    out = {}
    for code, close in data["close"].items():
        cells: list[Cell] = []
        for t in range(len(close)):
            xs = _window(close, t, window)
            if xs is None:
                cells.append(N)
                continue
            mean, std = _mean_std(xs)
            if std == 0:
                cells.append(N)  # z = 0 / 0
                continue
            z = (close[t] - mean) / std
            cells.append(_sign(-entry - z, z - entry))  # far below the mean: buy; far above: sell
        out[code] = cells
    return out


def ref_rsi(data: dict[str, dict[str, Column]], window: int, lower: float, upper: float) -> dict[str, list[Cell]]:
    """Wilder smoothing as the library implements it: exponential with alpha = 1 / window over the code's own
    price changes, seeded with the first change (Wilder's book seeds with the simple mean of the first `window`
    changes instead, which gives other values on the early dates), reported from the window-th change on;
    RSI = 100 when there was no loss, 50 when there was neither gain nor loss (a flat price). A day without a
    price has no value and no change: the next change is measured from the last price before it."""
    alpha = 1 / window
    out = {}
    for code, close in data["close"].items():
        cells: list[Cell] = []
        last = gain = loss = N
        changes = 0
        for price in close:
            if math.isnan(price) or math.isnan(last):
                cells.append(N)
                last = price if math.isnan(last) else last
                continue
            delta, last = price - last, price
            up, down = max(delta, 0.0), max(-delta, 0.0)
            changes += 1
            gain = up if changes == 1 else (1 - alpha) * gain + alpha * up
            loss = down if changes == 1 else (1 - alpha) * loss + alpha * down
            if changes < window:
                cells.append(N)
                continue
            rsi = 50.0 if gain == loss == 0 else 100.0 if loss == 0 else 100 - 100 / (1 + gain / loss)
            cells.append(_sign(lower - rsi, rsi - upper, 100))
        out[code] = cells
    return out


def ref_bollinger(data: dict[str, dict[str, Column]], window: int, k: float) -> dict[str, list[Cell]]:
    out = {}
    for code, close in data["close"].items():
        cells: list[Cell] = []
        for t in range(len(close)):
            xs = _window(close, t, window)
            if xs is None:
                cells.append(N)
                continue
            mid, std = _mean_std(xs)
            cells.append(_sign(close[t] - (mid + k * std), (mid - k * std) - close[t], close[t]))
        out[code] = cells
    return out


def ref_channel(data: dict[str, dict[str, Column]], window: int) -> dict[str, list[Cell]]:
    out = {}
    for code, close in data["close"].items():
        high, low = data["high"][code], data["low"][code]
        cells: list[Cell] = []
        for t in range(len(close)):
            highs, lows = _window(high, t - 1, window), _window(low, t - 1, window)  # the previous N bars
            if highs is None or lows is None or math.isnan(close[t]):
                cells.append(N)
                continue
            upper, lower = max(highs), min(lows)
            cells.append(1.0 if close[t] > upper else -1.0 if close[t] < lower else 0.0)  # exact comparisons
        out[code] = cells
    return out


def ref_valuation(data: dict[str, dict[str, Column]], cheap: float, dear: float) -> dict[str, list[Cell]]:
    pe, pb = data["pe"], data["pb"]
    days = []
    for t in range(len(next(iter(pe.values())))):
        pe_ranks = _pct_ranks({c: v[t] if v[t] > 0 else N for c, v in pe.items()})
        pb_ranks = _pct_ranks({c: v[t] if v[t] > 0 else N for c, v in pb.items()})
        days.append({c: (pe_ranks[c] + pb_ranks[c]) / 2 if c in pe_ranks and c in pb_ranks else N for c in pe})
    out: dict[str, list[Cell]] = {c: [] for c in pe}
    for day in days:
        for code, score in day.items():
            out[code].append(N if math.isnan(score) else 1.0 if score <= cheap else -1.0 if score > 1 - dear else 0.0)
    return out


def assert_reference_agrees(reference: dict[str, list[Cell]], expected: dict[str, Column]) -> None:
    """The hand-worked expectation and the plain-Python reference say the same (guards the hand working)."""
    for code, cells in expected.items():
        assert [c if not math.isnan(c) else "nan" for c in cells] == \
            [c if isinstance(c, str) or not math.isnan(c) else "nan" for c in reference[code]], code


# --- hand-worked small frames -------------------------------------------------------------------------------


def test_ma_cross_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(12)
    close = {
        # fast = mean of 2, slow = mean of 4; the first value is on the 4th date.
        #  t=3: 12.5 vs 11.5 +1 | t=4: 13.5 vs 12.5 +1 | t=5: 13.5 vs 13 +1 | t=6: 12.5 vs 13 -1
        #  t=7: 11.5 vs 12.5 -1 | t=8: 10.5 vs 11.5 -1 | t=9: 10.5 vs 11 -1  | t=10: 11.5 vs 11 +1 | t=11: +1
        A: [10, 11, 12, 13, 14, 13, 12, 11, 10, 11, 12, 13],
        # equal averages are a hold (0): flat until t=5, down to 18 (t=6..9 fast below slow), flat again
        B: [20, 20, 20, 20, 20, 20, 19, 18, 18, 18, 18, 18],
    }
    expected = {A: [N, N, N, 1, 1, 1, -1, -1, -1, -1, 1, 1],
                B: [N, N, N, 0, 0, 0, -1, -1, -1, -1, 0, 0]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    assert_reference_agrees(ref_ma_cross(data, 2, 4), expected)
    provider = write_provider(tmp_path / "data", dates, {**data, "high": data["close"], "low": data["close"]})
    signal, result = run_signal(provider, f"ma_cross {A},{B} {dates[0]} {dates[-1]} fast=2 slow=4")
    assert result["params"] == {"fast": 2, "slow": 4}
    assert_signal(signal, result, dates, expected)


def test_momentum_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(7)
    c1, c2, c3, c4, c5 = FIVE
    close = {
        c1: [10, 10, 10, 11, 12, 13, 14],
        c2: [10, 11, 12, 12, 12, 12, 12],
        c3: [10, 9, 8, 8, 9, 10, 11],
        c4: [10, 10, 11, 12, 12, 11, 10],
        c5: [10, 10, 10, 10, 10, 10, N],  # no row on the last date
    }
    # 2-day returns, percentile rank = average rank / number of codes with a return; defaults top = bottom = 0.2:
    # buy rank > 0.8, sell rank <= 0.2.
    # t=2: c3 -.2 (.2 sell), c1 = c5 = 0 (tie: 2.5/5 = .5), c4 .1 (.8: not above .8), c2 .2 (1.0 buy)
    # t=3: c3 -.11 (.2 sell) < c5 0 < c2 .09 < c1 .1 (.8) < c4 .2 (buy)
    # t=4: c2 = c5 = 0 tie at the bottom (1.5/5 = .3: nobody sold), c4 .09, c3 .125, c1 .2 (buy)
    # t=5: c4 -.083 (sell), c2 = c5 = 0, c1 .18 (.8), c3 .25 (buy)
    # t=6: c5 has no price: NaN, and the other four rank among themselves: c4 -.17 is 1/4 = .25, not sold;
    #      c3 .22 (buy)
    expected = {c1: [N, N, 0, 0, 1, 0, 0],
                c2: [N, N, 1, 0, 0, 0, 0],
                c3: [N, N, -1, -1, 0, 1, 1],
                c4: [N, N, 0, 1, 0, -1, 0],
                c5: [N, N, 0, 0, 0, 0, N]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    assert_reference_agrees(ref_momentum(data, 2, 0.2, 0.2), expected)
    provider = write_provider(tmp_path / "data", dates, {**data, "high": data["close"], "low": data["close"]})
    signal, result = run_signal(provider, f"momentum {','.join(FIVE)} {dates[0]} {dates[-1]} window=2")
    assert result["params"] == {"window": 2, "top": 0.2, "bottom": 0.2}
    assert_signal(signal, result, dates, expected)


def test_mean_reversion_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(10)
    close = {
        # z = (close - mean of 4) / sample std of 4, entry = 1: buy z < -1, sell z > 1
        # t=3 [10,10,10,14]: mean 11, std 2, z 1.5 sell | t=4 [10,10,14,10]: z -.5
        # t=5 [10,14,10,6]: mean 10, std sqrt(32/3) = 3.27, z -1.22 buy | t=6 [14,10,6,10]: z 0
        # t=7 [10,6,10,10]: mean 9, std 2, z .5 | t=8 [6,10,10,12]: mean 9.5, std 2.52, z .993 (just inside)
        # t=9 [10,10,12,12]: z .87
        A: [10, 10, 10, 14, 10, 6, 10, 10, 12, 12],
        # a steady fall: every window [x+3, x+2, x+1, x] has z = -1.5 / sqrt(5/3) = -1.16: buy
        B: [20, 19, 18, 17, 16, 15, 14, 13, 12, 11],
    }
    expected = {A: [N, N, N, -1, 0, 1, 0, 0, 0, 0],
                B: [N, N, N, 1, 1, 1, 1, 1, 1, 1]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    assert_reference_agrees(ref_mean_reversion(data, 4, 1.0), expected)
    provider = write_provider(tmp_path / "data", dates, {**data, "high": data["close"], "low": data["close"]})
    signal, result = run_signal(provider, f"mean_reversion {A},{B} {dates[0]} {dates[-1]} window=4 entry=1")
    assert_signal(signal, result, dates, expected)


def test_rsi_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(10)
    close = {
        # changes +1 +1 -1 -1 -1 +1 +2 +1 0; gain/loss smoothed with alpha 1/3 from the first change:
        # gain 1, 1, .667, .444, .296, .531, 1.021, 1.014, .676; loss 0, 0, .333, .556, .704, .469, .313, .209, .139
        # RSI from the 3rd change: 66.7, 44.4, 29.6 (< 30 buy), 53.1, 76.5 (> 70 sell), 82.9, 82.9
        A: [10, 11, 12, 11, 10, 9, 10, 12, 13, 13],
        # four falls (gain 0: RSI 0, buy), then rises: RSI 33.3, 55.6, 70.4 (sell), 80.2, 86.8
        B: [20, 19, 18, 17, 16, 17, 18, 19, 20, 21],
    }
    expected = {A: [N, N, N, 0, 0, 1, 0, -1, -1, -1],
                B: [N, N, N, 1, 1, 0, 0, -1, -1, -1]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    assert_reference_agrees(ref_rsi(data, 3, 30, 70), expected)
    provider = write_provider(tmp_path / "data", dates, {**data, "high": data["close"], "low": data["close"]})
    signal, result = run_signal(provider, f"rsi {A},{B} {dates[0]} {dates[-1]} window=3 lower=30 upper=70")
    assert_signal(signal, result, dates, expected)


def test_bollinger_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(12)
    close = {
        # bands = mean of 4 ± 1.1 sample std: the z-scores of the mean-reversion test, with the opposite sign
        # t=3 z 1.5 buy | t=5 z -1.22 sell | t=8 z .993 inside | t=10 [10,12,12,8]: mean 10.5, std 1.91, z -1.31
        # sell | t=11 [12,12,8,16]: mean 12, std 3.27, z 1.22 buy
        A: [10, 10, 10, 14, 10, 6, 10, 10, 12, 12, 8, 16],
        # a steady rise: z = 1.16 > 1.1, buy; no row on t=6, so every window holding t=6 (t=6..9) has no band
        B: [10, 11, 12, 13, 14, 15, N, 17, 18, 19, 20, 21],
    }
    expected = {A: [N, N, N, 1, 0, -1, 0, 0, 0, 0, -1, 1],
                B: [N, N, N, 1, 1, 1, N, N, N, N, 1, 1]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    assert_reference_agrees(ref_bollinger(data, 4, 1.1), expected)
    provider = write_provider(tmp_path / "data", dates, {**data, "high": data["close"], "low": data["close"]})
    signal, result = run_signal(provider, f"bollinger {A},{B} {dates[0]} {dates[-1]} window=4 k=1.1")
    assert result["params"] == {"window": 4, "k": 1.1}
    assert_signal(signal, result, dates, expected)


def test_channel_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(10)
    close = {
        # upper = highest high of the previous 3 bars (not today's), lower = lowest low; high/low = close ± .5
        # t=3: 14 > 12.5 buy | t=4: 13 in [10.5, 14.5] | t=5: 12 | t=6: 9 < 11.5 sell | t=7, 8: inside
        # t=9: 12 > max(9.5, 10.5, 11.5) buy
        A: [10, 11, 12, 14, 13, 12, 9, 10, 11, 12],
        # t=3: 20.5 equals the previous high 20.5: not a breakout (strict) | t=4: 21.5 > 21 buy
        # t=5: 19 < 19.5 sell | t=6..9: lower is 18.5, upper falls to 19.5: 19 stays inside
        B: [20, 20, 20, 20.5, 21.5, 19, 19, 19, 19, 19],
    }
    expected = {A: [N, N, N, 1, 0, 0, -1, 0, 0, 1],
                B: [N, N, N, 0, 1, -1, 0, 0, 0, 0]}
    data = {"close": {c: [float(x) for x in xs] for c, xs in close.items()}}
    data["high"] = {c: [x + 0.5 for x in xs] for c, xs in data["close"].items()}
    data["low"] = {c: [x - 0.5 for x in xs] for c, xs in data["close"].items()}
    assert_reference_agrees(ref_channel(data, 3), expected)
    provider = write_provider(tmp_path / "data", dates, data)
    signal, result = run_signal(provider, f"channel {A},{B} {dates[0]} {dates[-1]} window=3")
    assert_signal(signal, result, dates, expected)


def test_valuation_by_hand(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(6)
    c1, c2, c3, c4, c5 = FIVE
    # rows: dates; columns c1..c5. score = (PE pct rank + PB pct rank) / 2 over positive values;
    # defaults cheap = dear = 0.3: buy score <= .3, sell score > .7
    pe = [[5, 10, 15, 20, 25],  # same order as pb: scores .2 .4 .6 .8 1 → buy c1, sell c4 c5
          [25, 20, 15, 10, 5],  # opposite orders: every score .6 → all hold
          [-3, 10, 8, 30, 12],  # c1 loss-making: NaN; PE ranks of four .5 .25 1 .75 → .45 .425 .9 .875
          [8, 8, 20, 30, 40],  # c1 = c2 tie: 1.5/5 = .3 each; PB ranks .4 .2 .6 1 .8 → .35 .25 .6 .9 .9
          [10, 20, 30, 40, 50],  # c5 negative book: NaN; PB ranks of four .25 .5 .75 1 → .225 .45 .675 .9
          [10, 20, N, 40, 50]]  # c3 has no daily_basic row: ranks of four .25 .5 .75 1 → .25 .5 - .75 1
    pb = [[1, 2, 3, 4, 5],
          [1, 2, 3, 4, 5],
          [0.5, 1, 2, 3, 4],
          [2, 1, 3, 5, 4],
          [1, 2, 3, 4, -1],
          [1, 2, N, 4, 5]]
    expected = {c1: [1, 0, N, 0, 1, 1],
                c2: [0, 0, 0, 1, 0, 0],
                c3: [0, 0, 0, 0, 0, N],
                c4: [-1, 0, -1, -1, -1, -1],
                c5: [-1, 0, -1, -1, N, -1]}
    basics = {"pe": {c: [float(row[i]) for row in pe] for i, c in enumerate(FIVE)},
              "pb": {c: [float(row[i]) for row in pb] for i, c in enumerate(FIVE)}}
    assert_reference_agrees(ref_valuation(basics, 0.3, 0.3), expected)
    flat = {c: [10.0] * len(dates) for c in FIVE}
    provider = write_provider(tmp_path / "data", dates, {"close": flat, "high": flat, "low": flat}, basics)
    signal, result = run_signal(provider, f"valuation {','.join(FIVE)} {dates[0]} {dates[-1]}")
    assert result["params"] == {"cheap": 0.3, "dear": 0.3}
    assert_signal(signal, result, dates, expected)


def test_parameters_change_the_output(tmp_path: Path, run_signal) -> None:
    """The same frame under other parameters: guards against a request's parameters being ignored."""
    dates = trade_dates(10)
    close = {A: [10.0, 10, 10, 14, 10, 6, 10, 10, 12, 12], B: [20.0, 19, 18, 17, 16, 15, 14, 13, 12, 11]}
    data = {"close": close}
    provider = write_provider(tmp_path / "data", dates, {**data, "high": close, "low": close})
    # entry 1.3: A's z of 1.5 still sells, -1.22 no longer buys; B's -1.16 no longer buys
    expected = {A: [N, N, N, -1, 0, 0, 0, 0, 0, 0], B: [N, N, N, 0, 0, 0, 0, 0, 0, 0]}
    assert_reference_agrees(ref_mean_reversion(data, 4, 1.3), expected)
    signal, result = run_signal(provider, f"mean_reversion {A},{B} {dates[0]} {dates[-1]} window=4 entry=1.3")
    assert_signal(signal, result, dates, expected)


# --- "NaN no data": days on which a code has no row -----------------------------------------------------------
# library.py documents `signal` as "1 buy, -1 sell, 0 hold, NaN no data". ma_cross, momentum, mean_reversion and
# bollinger keep that through their windows (see the tests above); channel and rsi are checked here.


def test_channel_has_no_value_on_a_day_without_data(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(8)
    close = {A: [10.0, 11, 12, 14, N, 12, 13, 16], B: [20.0, 20, 20, 21, 22, 23, 24, 25]}
    data = {"close": close, "high": {c: [x + 0.5 for x in xs] for c, xs in close.items()},
            "low": {c: [x - 0.5 for x in xs] for c, xs in close.items()}}
    # A: 14 > 12.5 buys on t=3; no price on t=4 (not a hold), and the windows of t=5..7 hold that day: no band
    expected = {A: [N, N, N, 1, N, N, N, N], B: [N, N, N, 1, 1, 1, 1, 1]}
    assert_reference_agrees(ref_channel(data, 3), expected)
    signal, result = run_signal(write_provider(tmp_path / "data", dates, data),
                                f"channel {A},{B} {dates[0]} {dates[-1]} window=3")
    assert_signal(signal, result, dates, expected)


def test_rsi_has_no_value_on_a_day_without_data(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(8)
    close = {
        # changes +1 +1 -1 -1 -1, gain/loss with alpha 1/3: RSI 66.7, 44.4, 29.6 (buy) on t=3..5; no price on
        # t=6: no signal (not the last RSI carried on); t=7: +3 from t=5's 9: gain 8/27 * 2/3 + 1 = 97/81,
        # loss 19/27 * 2/3 = 38/81, RSI 71.9 (sell)
        A: [10.0, 11, 12, 11, 10, 9, N, 12],
        # four falls (RSI 0, buy), then rises: RSI 33.3, 55.6, 70.4 (sell)
        B: [20.0, 19, 18, 17, 16, 17, 18, 19],
    }
    expected = {A: [N, N, N, 0, 0, 1, N, -1], B: [N, N, N, 1, 1, 0, 0, -1]}
    data = {"close": close}
    assert_reference_agrees(ref_rsi(data, 3, 30, 70), expected)
    signal, result = run_signal(write_provider(tmp_path / "data", dates, {**data, "high": close, "low": close}),
                                f"rsi {A},{B} {dates[0]} {dates[-1]} window=3 lower=30 upper=70")
    assert_signal(signal, result, dates, expected)


def test_rsi_of_a_flat_price_is_neutral(tmp_path: Path, run_signal) -> None:
    dates = trade_dates(8)
    # A never moves: neither gain nor loss, RSI 50, a hold (not 100, a sell); B as above
    close = {A: [10.0] * 8, B: [20.0, 19, 18, 17, 16, 17, 18, 19]}
    expected = {A: [N, N, N, 0, 0, 0, 0, 0], B: [N, N, N, 1, 1, 0, 0, -1]}
    data = {"close": close}
    assert_reference_agrees(ref_rsi(data, 3, 30, 70), expected)
    signal, result = run_signal(write_provider(tmp_path / "data", dates, {**data, "high": close, "low": close}),
                                f"rsi {A},{B} {dates[0]} {dates[-1]} window=3 lower=30 upper=70")
    assert_signal(signal, result, dates, expected)


# --- the same references on real data -----------------------------------------------------------------------

REAL_CODES = ("000001.SZ", "600519.SH", "600036.SH", "601318.SH", "600489.SH", "601899.SH", "002236.SZ")
REAL_START, REAL_END = "20190801", "20200331"  # 600489.SH, 601899.SH and 002236.SZ are suspended on some days
REFERENCES: dict[str, tuple[str, Callable[..., dict[str, list[Cell]]], dict[str, float]]] = {
    "ma_cross": ("", ref_ma_cross, {"fast": 5, "slow": 20}),
    "momentum": ("window=10", ref_momentum, {"window": 10, "top": 0.2, "bottom": 0.2}),
    "mean_reversion": ("", ref_mean_reversion, {"window": 20, "entry": 1.5}),
    "rsi": ("", ref_rsi, {"window": 14, "lower": 30, "upper": 70}),
    "bollinger": ("", ref_bollinger, {"window": 20, "k": 2.0}),
    "channel": ("", ref_channel, {"window": 20}),
}


@pytest.fixture(scope="module")
def real_bars() -> dict[str, pd.DataFrame]:
    """close/high/low of REAL_CODES from the bundled sample file, pivoted here (not through the provider)."""
    long = pd.read_parquet(sample_dir() / "daily.parquet")
    long = long[long.ts_code.isin(REAL_CODES) & long.trade_date.between(REAL_START, REAL_END)]
    return {f: long.pivot(index="trade_date", columns="ts_code", values=f).reindex(columns=list(REAL_CODES))
            for f in ("close", "high", "low")}


@pytest.mark.parametrize("name", list(REFERENCES))
def test_library_strategy_matches_reference_on_real_data(name: str, real_bars, run_signal) -> None:
    extra, reference, params = REFERENCES[name]
    data = {f: {c: table[c].astype(float).tolist() for c in table.columns} for f, table in real_bars.items()}
    want = reference(data, *params.values())
    signal, result = run_signal(SampleProvider(), f"{name} {','.join(REAL_CODES)} {REAL_START} {REAL_END} {extra}")
    assert result["params"] == params
    assert list(signal.index.strftime("%Y%m%d")) == list(real_bars["close"].index)
    compared = too_close = 0
    for code in REAL_CODES:
        for t, (g, w) in enumerate(zip(signal[code].tolist(), want[code], strict=True)):
            if w == CLOSE:
                too_close += 1
            else:  # days without a price included: NaN on both sides
                assert g == w or (math.isnan(g) and math.isnan(w)), (name, code, signal.index[t], g, w)
                compared += 1
    assert too_close <= 3 and compared > 0.6 * signal.size, (compared, too_close)
    assert result["counts"]["buy"] > 0 and result["counts"]["sell"] > 0
