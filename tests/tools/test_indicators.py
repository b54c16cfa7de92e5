"""tools/research/indicators.py against TA-Lib on the real CSI 300 panel, against golden CSVs and against its own
promises.

- TA-Lib (the `ta-lib` wheel, a runtime dependency) is called here directly, once per stock on that stock's own
  trading days, and the wide-frame functions must give exactly its numbers, gaps included.
- The golden CSVs under tests/data hold real bars with expected values computed by the reference implementation
  below: written from the definitions, in exact rational arithmetic (`fractions.Fraction`; a square root for BOLL
  only), with no TA-Lib and no numpy. `test_golden_files_match_the_reference` recomputes them, and
  `python -m tests.tools.test_indicators` rewrites them. A few first values are also checked by hand.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import talib  # a runtime dependency of tools.research.indicators: a missing wheel fails collection, never skips
from talib import abstract

from tools.data.provider import to_wide
from tools.research import indicators as ind

DATA = Path(__file__).resolve().parent / "data"
GOLDEN = DATA / "indicators_golden.csv"
KDJ_GOLDEN = DATA / "kdj_golden.csv"
TOL = 1e-9

# the golden sources: the first 60 trading days of Kweichow Moutai (no gap), and TCL from its first bar over the
# market calendar of 50 days, with its ten-day suspension from 2017-09-07 to 2017-09-20 as empty rows
GOLDEN_CODE, GOLDEN_BARS = "600519.SH", 60
KDJ_CODE, KDJ_DAYS = "000100.SZ", 50


# ------------------------------------------------------------------------------------------ reference (exact)

Q = Fraction
Values = list[Fraction | None]


def ref_sma(c: list[Fraction], n: int) -> Values:
    return [None if i < n - 1 else sum(c[i - n + 1:i + 1], Q(0)) / n for i in range(len(c))]


def ref_ema(c: Values, n: int, seed_end: int | None = None) -> Values:
    """α = 2/(n+1); the seed is the mean of the n values ending at `seed_end` (default: the first n values)."""
    end = n - 1 if seed_end is None else seed_end
    out: Values = [None] * len(c)
    if end >= len(c):
        return out
    prev = sum(c[end - n + 1:end + 1], Q(0)) / n  # type: ignore[arg-type]
    out[end] = prev
    alpha = Q(2, n + 1)
    for i in range(end + 1, len(c)):
        prev = prev + alpha * (c[i] - prev)  # type: ignore[operator]
        out[i] = prev
    return out


def ref_rsi(c: list[Fraction], n: int) -> Values:
    """Wilder: mean gain and loss of the first n changes, then avg = ((n−1)·avg + x)/n; 100·gain/(gain+loss)."""
    out: Values = [None] * len(c)
    changes = [c[i] - c[i - 1] for i in range(1, len(c))]
    if len(changes) < n:
        return out
    gain = sum((max(x, Q(0)) for x in changes[:n]), Q(0)) / n
    loss = sum((max(-x, Q(0)) for x in changes[:n]), Q(0)) / n
    for i in range(n, len(c)):
        if i > n:
            x = changes[i - 1]
            gain = (gain * (n - 1) + max(x, Q(0))) / n
            loss = (loss * (n - 1) + max(-x, Q(0))) / n
        out[i] = Q(0) if gain + loss == 0 else 100 * gain / (gain + loss)
    return out


def ref_macd(c: list[Fraction], fast: int, slow: int, signal: int) -> tuple[Values, Values, Values]:
    """TA-Lib's seeding: both EMAs seeded at bar slow−1 (the fast one on the `fast` closes ending there)."""
    start = slow - 1
    ema_fast = ref_ema(c, fast, seed_end=start)
    ema_slow = ref_ema(c, slow, seed_end=start)
    dif_all: Values = [None if i < start else ema_fast[i] - ema_slow[i] for i in range(len(c))]  # type: ignore[operator]
    dea = ref_ema(dif_all, signal, seed_end=start + signal - 1)
    first = start + signal - 1
    dif = [v if i >= first else None for i, v in enumerate(dif_all)]
    hist = [None if dea[i] is None else dif[i] - dea[i] for i in range(len(c))]  # type: ignore[operator]
    return dif, dea, hist


def _sqrt(x: Fraction) -> Fraction:
    with localcontext() as ctx:
        ctx.prec = 60
        return Q((Decimal(x.numerator) / Decimal(x.denominator)).sqrt())


def ref_boll(c: list[Fraction], n: int, k: int) -> tuple[Values, Values, Values]:
    mid = ref_sma(c, n)
    upper: Values = [None] * len(c)
    lower: Values = [None] * len(c)
    for i in range(n - 1, len(c)):
        window = c[i - n + 1:i + 1]
        sigma = _sqrt(sum(((x - mid[i]) ** 2 for x in window), Q(0)) / n)  # type: ignore[operator]
        upper[i] = mid[i] + k * sigma  # type: ignore[operator]
        lower[i] = mid[i] - k * sigma  # type: ignore[operator]
    return upper, mid, lower


def ref_atr(h: list[Fraction], lo: list[Fraction], c: list[Fraction], n: int) -> Values:
    tr = [None] + [max(h[i], c[i - 1]) - min(lo[i], c[i - 1]) for i in range(1, len(c))]
    out: Values = [None] * len(c)
    if len(c) <= n:
        return out
    prev = sum(tr[1:n + 1], Q(0)) / n  # type: ignore[arg-type]
    out[n] = prev
    for i in range(n + 1, len(c)):
        prev = (prev * (n - 1) + tr[i]) / n  # type: ignore[operator]
        out[i] = prev
    return out


def ref_kdj(h: list[Fraction], lo: list[Fraction], c: list[Fraction], n: int = 9, m1: int = 3,
            m2: int = 3) -> tuple[Values, Values, Values, Values]:
    """RSV over n bars (50 when the range is 0); K, D start from 50 before the first RSV; J = 3K − 2D."""
    rsv: Values = [None] * len(c)
    k: Values = [None] * len(c)
    d: Values = [None] * len(c)
    j: Values = [None] * len(c)
    k_prev = d_prev = Q(50)
    for i in range(n - 1, len(c)):
        hh, ll = max(h[i - n + 1:i + 1]), min(lo[i - n + 1:i + 1])
        rsv[i] = Q(50) if hh == ll else (c[i] - ll) / (hh - ll) * 100
        k_prev = ((m1 - 1) * k_prev + rsv[i]) / m1
        d_prev = ((m2 - 1) * d_prev + k_prev) / m2
        k[i], d[i], j[i] = k_prev, d_prev, 3 * k_prev - 2 * d_prev
    return rsv, k, d, j


def _on_calendar(values: Values, traded: list[bool]) -> list[float]:
    """Own-trading-day values spread over the calendar rows: NaN where the code did not trade or had no value."""
    it = iter(values)
    return [(math.nan if (v := next(it)) is None else float(v)) if t else math.nan for t in traded]


def reference_golden(bars: pd.DataFrame) -> pd.DataFrame:
    """The expected columns of indicators_golden.csv from its price columns (one code, on its own trading days)."""
    traded = bars["close"].notna().tolist()
    own = bars[bars["close"].notna()]
    h, lo, c = ([Q(str(x)) for x in own[col]] for col in ("high", "low", "close"))
    dif, dea, hist = ref_macd(c, 12, 26, 9)
    upper, mid, lower = ref_boll(c, 20, 2)
    _, k, d, j = ref_kdj(h, lo, c)
    columns = {
        "ma5": ref_sma(c, 5), "ma20": ref_sma(c, 20), "ema12": ref_ema(c, 12), "ema26": ref_ema(c, 26),
        "rsi6": ref_rsi(c, 6), "rsi14": ref_rsi(c, 14), "dif": dif, "dea": dea, "hist": hist,
        "boll_upper": upper, "boll_mid": mid, "boll_lower": lower, "atr14": ref_atr(h, lo, c, 14),
        "k": k, "d": d, "j": j,
    }
    out = bars[["trade_date", "high", "low", "close"]].copy()
    for name, values in columns.items():
        out[name] = _on_calendar(values, traded)
    return out


def reference_kdj_golden(bars: pd.DataFrame) -> pd.DataFrame:
    traded = bars["close"].notna().tolist()
    own = bars[bars["close"].notna()]
    h, lo, c = ([Q(str(x)) for x in own[col]] for col in ("high", "low", "close"))
    out = bars[["trade_date", "high", "low", "close"]].copy()
    for name, values in zip(("rsv", "k", "d", "j"), ref_kdj(h, lo, c), strict=True):
        out[name] = _on_calendar(values, traded)
    return out


def _source_bars(data_dir: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The golden files' price columns, cut from the shared CSI 300 file (market calendar rows for KDJ)."""
    daily = pd.read_parquet(data_dir / "cn_csi300_tushare" / "daily.parquet")
    gold = daily[daily["ts_code"] == GOLDEN_CODE].sort_values("trade_date").head(GOLDEN_BARS)
    calendar = sorted(daily["trade_date"].unique())[:KDJ_DAYS]
    kdj_rows = daily[daily["ts_code"] == KDJ_CODE].set_index("trade_date").reindex(calendar)
    kdj_rows = kdj_rows.rename_axis("trade_date").reset_index()
    return (gold[["trade_date", "high", "low", "close"]].reset_index(drop=True),
            kdj_rows[["trade_date", "high", "low", "close"]])


def _read_golden(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, dtype={"trade_date": str})


# ------------------------------------------------------------------------------------------ fixtures, helpers


@pytest.fixture(scope="module")
def panel(shared_data: Path) -> dict[str, pd.DataFrame]:
    daily = pd.read_parquet(shared_data / "cn_csi300_tushare" / "daily.parquet")
    return {field: to_wide(daily, field) for field in ("high", "low", "close")}


def _gap_codes(frame: pd.DataFrame) -> list[str]:
    """Codes with a missing day between their first and last bar."""
    out = []
    for code in frame.columns:
        s = frame[code]
        first, last = s.first_valid_index(), s.last_valid_index()
        if first is not None and s.loc[first:last].isna().any():
            out.append(code)
    return out


def _assert_close(got: np.ndarray, want: np.ndarray, label: str) -> None:
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    assert np.array_equal(np.isnan(got), np.isnan(want)), f"{label}: NaN in different places"
    diff = np.abs(got - want)
    worst = float(np.nanmax(diff)) if np.isfinite(diff).any() else 0.0
    assert worst <= TOL, f"{label}: max |diff| {worst:.3e}"


@contextmanager
def _talib_setting(setter: Callable[..., None], getter: Callable[..., int], *args: object) -> Iterator[None]:
    """Change a process-wide TA-Lib setting for one block and always put the old value back."""
    key = args[:-1]
    old = getter(*key)
    setter(*args)
    try:
        yield
    finally:
        setter(*key, old)
    assert getter(*key) == old


# Each case: our call on the wide frames, and TA-Lib's function on one stock's own-day arrays (h, l, c),
# returning the outputs in the same order.
CASES: dict[str, tuple[Callable[..., ind.IndicatorResult], Callable[..., tuple[np.ndarray, ...]]]] = {
    "ma5": (lambda h, lo, c: ind.ma(c, 5), lambda h, lo, c: (talib.SMA(c, 5),)),
    "ma30": (lambda h, lo, c: ind.ma(c, 30), lambda h, lo, c: (talib.SMA(c, 30),)),
    "ema12": (lambda h, lo, c: ind.ema(c, 12), lambda h, lo, c: (talib.EMA(c, 12),)),
    "ema60": (lambda h, lo, c: ind.ema(c, 60), lambda h, lo, c: (talib.EMA(c, 60),)),
    "rsi14": (lambda h, lo, c: ind.rsi(c), lambda h, lo, c: (talib.RSI(c, 14),)),
    "rsi6": (lambda h, lo, c: ind.rsi(c, 6), lambda h, lo, c: (talib.RSI(c, 6),)),
    "macd": (lambda h, lo, c: ind.macd(c), lambda h, lo, c: talib.MACD(c, 12, 26, 9)),
    "macd_5_35_5": (lambda h, lo, c: ind.macd(c, 5, 35, 5), lambda h, lo, c: talib.MACD(c, 5, 35, 5)),
    "boll": (lambda h, lo, c: ind.boll(c), lambda h, lo, c: talib.BBANDS(c, 20, 2.0, 2.0, 0)),
    "boll_10_1.5": (lambda h, lo, c: ind.boll(c, 10, 1.5), lambda h, lo, c: talib.BBANDS(c, 10, 1.5, 1.5, 0)),
    "atr14": (lambda h, lo, c: ind.atr(h, lo, c), lambda h, lo, c: (talib.ATR(h, lo, c, 14),)),
    "atr5": (lambda h, lo, c: ind.atr(h, lo, c, 5), lambda h, lo, c: (talib.ATR(h, lo, c, 5),)),
}


# ------------------------------------------------------------------------------------------ against TA-Lib


@pytest.mark.parametrize("case", list(CASES))
def test_matches_talib_per_stock_on_own_trading_days(panel: dict[str, pd.DataFrame], case: str) -> None:
    ours_fn, talib_fn = CASES[case]
    high, low, close = panel["high"], panel["low"], panel["close"]
    result = ours_fn(high, low, close)
    outputs = list(result.outputs.values())
    assert all(o.shape == close.shape and o.index.equals(close.index) and o.columns.equals(close.columns)
               for o in outputs)
    gaps = set(_gap_codes(close))
    assert len(gaps) >= 50  # the comparison covers many codes with suspensions
    checked_gap_codes = 0
    for code in close.columns:
        traded = (close[code].notna() & high[code].notna() & low[code].notna()).to_numpy()
        if not traded.any():
            continue
        args = [frame[code].to_numpy()[traded] for frame in (high, low, close)]
        want = talib_fn(*args)
        for name, got, expected in zip(result.outputs, outputs, want, strict=True):
            column = got[code].to_numpy()
            assert np.isnan(column[~traded]).all(), f"{case} {code} {name}: a value on a day it did not trade"
            assert np.array_equal(column[traded], expected, equal_nan=True), f"{case} {code} {name}: not TA-Lib's"
        checked_gap_codes += code in gaps
    assert checked_gap_codes == len(gaps)


def test_talib_itself_is_poisoned_by_a_gap(panel: dict[str, pd.DataFrame]) -> None:
    """Why each code runs on its own days: TA-Lib on a column with a NaN returns NaN (or RSI 0) from there on."""
    close = panel["close"]
    code = next(c for c in _gap_codes(close) if close[c].notna().sum() > 500 and close[c].iloc[-1] > 0)
    s = close[code].loc[close[code].first_valid_index():].to_numpy()
    after = np.flatnonzero(np.isnan(s))[-1] + 1
    assert np.isnan(talib.EMA(s, 12)[after:]).all()
    assert np.isfinite(ind.ema(close, 12).value[code].iloc[after - len(s):]).all()


# ------------------------------------------------------------------------------------------ golden files


def test_golden_files_match_the_reference(shared_data: Path) -> None:
    """The golden CSVs are what the exact reference implementation gives on the real bars they hold."""
    gold, kdj_bars = _source_bars(shared_data)
    for path, expected in ((GOLDEN, reference_golden(gold)), (KDJ_GOLDEN, reference_kdj_golden(kdj_bars))):
        stored = _read_golden(path)
        assert list(stored.columns) == list(expected.columns)
        assert stored["trade_date"].tolist() == expected["trade_date"].tolist()
        for column in expected.columns[1:]:
            _assert_close(stored[column].to_numpy(), expected[column].to_numpy(), f"{path.name} {column}")


def _golden_series() -> tuple[pd.DataFrame, pd.Series, pd.Series, pd.Series]:
    gold = _read_golden(GOLDEN)
    index = pd.DatetimeIndex(pd.to_datetime(gold["trade_date"], format="%Y%m%d"), name="trade_date")
    h, lo, c = (pd.Series(gold[col].to_numpy(), index=index, name=GOLDEN_CODE) for col in ("high", "low", "close"))
    return gold, h, lo, c


def _golden_results(h: pd.Series, lo: pd.Series, c: pd.Series) -> dict[str, pd.Series]:
    macd = ind.macd(c)
    boll = ind.boll(c)
    kdj = ind.kdj(h, lo, c)
    return {
        "ma5": ind.ma(c, 5).value, "ma20": ind.ma(c, 20).value, "ema12": ind.ema(c, 12).value,
        "ema26": ind.ema(c, 26).value, "rsi6": ind.rsi(c, 6).value, "rsi14": ind.rsi(c).value,
        "dif": macd.dif, "dea": macd.dea, "hist": macd.hist,
        "boll_upper": boll.upper, "boll_mid": boll.mid, "boll_lower": boll.lower, "atr14": ind.atr(h, lo, c).value,
        "k": kdj.k, "d": kdj.d, "j": kdj.j,
    }


def test_golden_values() -> None:
    gold, h, lo, c = _golden_series()
    assert len(gold) == GOLDEN_BARS
    for name, got in _golden_results(h, lo, c).items():
        assert isinstance(got, pd.Series) and got.name == GOLDEN_CODE and got.index.equals(c.index)
        _assert_close(got.to_numpy(), gold[name].to_numpy(), f"golden {name}")


def test_golden_first_values_by_hand() -> None:
    """A few values worked out by hand from the golden file's first closes (600519.SH, September 2017)."""
    _, h, lo, c = _golden_series()
    closes = [495.18, 492.42, 489.99, 484.98, 481.27, 474.37, 478.32]  # 2017-09-01 .. 09-11
    assert c.iloc[:7].tolist() == closes
    # MA(5) at bar 4: (495.18 + 492.42 + 489.99 + 484.98 + 481.27) / 5 = 2443.84 / 5
    assert ind.ma(c, 5).value.iloc[4] == pytest.approx(488.768, abs=TOL)
    # RSI(6) at bar 6: changes −2.76, −2.43, −5.01, −3.71, −6.90, +3.95: gains 3.95/6, losses 20.81/6
    assert ind.rsi(c, 6).value.iloc[6] == pytest.approx(100 * 3.95 / (3.95 + 20.81), abs=TOL)
    # EMA(12) starts with the plain mean of the first 12 closes, then moves by 2/13 of the gap to the next close
    first12 = c.iloc[:12].mean()
    ema12 = ind.ema(c, 12).value
    assert ema12.iloc[11] == pytest.approx(first12, abs=TOL)
    assert ema12.iloc[12] == pytest.approx(first12 + 2 / 13 * (c.iloc[12] - first12), abs=TOL)
    # ATR(14) at bar 14: the mean true range of bars 1..14
    tr = [max(h.iloc[i], c.iloc[i - 1]) - min(lo.iloc[i], c.iloc[i - 1]) for i in range(1, 15)]
    assert ind.atr(h, lo, c).value.iloc[14] == pytest.approx(sum(tr) / 14, abs=TOL)
    # KDJ(9,3,3) at bar 8: K = 2/3·50 + 1/3·RSV, D = 2/3·50 + 1/3·K, J = 3K − 2D
    hh, ll = h.iloc[:9].max(), lo.iloc[:9].min()
    rsv = (c.iloc[8] - ll) / (hh - ll) * 100
    kdj = ind.kdj(h, lo, c)
    k0 = 2 / 3 * 50 + rsv / 3
    d0 = 2 / 3 * 50 + k0 / 3
    assert (kdj.k.iloc[8], kdj.d.iloc[8], kdj.j.iloc[8]) == pytest.approx((k0, d0, 3 * k0 - 2 * d0), abs=TOL)
    # BOLL(20, 2) at bar 19: mean ± 2 population standard deviations of the first 20 closes
    window = c.iloc[:20].to_numpy()
    boll = ind.boll(c)
    assert boll.upper.iloc[19] == pytest.approx(window.mean() + 2 * window.std(ddof=0), abs=1e-8)
    assert boll.upper.iloc[19] != pytest.approx(window.mean() + 2 * window.std(ddof=1), abs=1e-3)


def test_kdj_golden_with_a_suspension() -> None:
    """TCL (000100.SZ) was suspended for ten days from 2017-09-07, inside KDJ's warm-up: the warm-up counts its own
    bars, the suspended rows stay empty, and the values after them match the golden file."""
    gold = _read_golden(KDJ_GOLDEN)
    assert len(gold) == KDJ_DAYS
    suspended = gold["close"].isna()
    assert suspended.sum() == 10 and not suspended.iloc[:4].any()
    index = pd.DatetimeIndex(pd.to_datetime(gold["trade_date"], format="%Y%m%d"), name="trade_date")
    h, lo, c = (pd.Series(gold[col].to_numpy(), index=index, name=KDJ_CODE) for col in ("high", "low", "close"))
    kdj = ind.kdj(h, lo, c)
    assert kdj.warmup == 8 and kdj.convention == "kdj-50-seed" and kdj.name == "KDJ(9,3,3)"
    for name in ("k", "d", "j"):
        _assert_close(kdj.outputs[name].to_numpy(), gold[name].to_numpy(), f"kdj golden {name}")
    own = kdj.k[~suspended.to_numpy()]
    assert own.iloc[:8].isna().all() and own.iloc[8:].notna().all()  # the 9th own bar, 14 calendar rows in
    # the same code in a wide frame beside a code with no gap gives the same numbers
    other = pd.Series(np.linspace(20.0, 30.0, len(index)), index=index)
    wide = [pd.DataFrame({"OTHER": other + shift, KDJ_CODE: s}) for shift, s in ((0.5, h), (-0.5, lo), (0.0, c))]
    wide_kdj = ind.kdj(*wide)
    _assert_close(wide_kdj.k[KDJ_CODE].to_numpy(), gold["k"].to_numpy(), "kdj golden in a wide frame")
    assert wide_kdj.k["OTHER"].iloc[8:].notna().all()


def test_kdj_parameters() -> None:
    """KDJ(n, 1, 1) has no smoothing: K = D = J = RSV; other (n, m1, m2) match the reference."""
    _, h, lo, c = _golden_series()
    raw = ind.kdj(h, lo, c, 9, 1, 1)
    rsv, *_ = ref_kdj([Q(str(x)) for x in h], [Q(str(x)) for x in lo], [Q(str(x)) for x in c])
    want = np.array([np.nan if v is None else float(v) for v in rsv])
    for line in (raw.k, raw.d, raw.j):
        _assert_close(line.to_numpy(), want, "KDJ(9,1,1)")
    other = ind.kdj(h, lo, c, 5, 4, 2)
    _, k, d, j = ref_kdj([Q(str(x)) for x in h], [Q(str(x)) for x in lo], [Q(str(x)) for x in c], 5, 4, 2)
    assert other.warmup == 4 and other.name == "KDJ(5,4,2)"
    for got, values in ((other.k, k), (other.d, d), (other.j, j)):
        _assert_close(got.to_numpy(), np.array([np.nan if v is None else float(v) for v in values]), "KDJ(5,4,2)")


def test_flat_windows() -> None:
    """No movement: RSI is 0 (TA-Lib's convention) and RSV is 50, so K and D stay at 50 and J too."""
    index = pd.bdate_range("2024-01-01", periods=30, name="trade_date")
    flat = pd.Series(10.0, index=index, name="FLAT")
    rsi = ind.rsi(flat).value
    assert rsi.iloc[:14].isna().all() and (rsi.iloc[14:] == 0).all()
    kdj = ind.kdj(flat, flat, flat)
    for line in (kdj.k, kdj.d, kdj.j):
        assert line.iloc[:8].isna().all() and (line.iloc[8:] == 50).all()
    boll = ind.boll(flat)
    assert (boll.upper.iloc[19:] == 10).all() and (boll.lower.iloc[19:] == 10).all()


# ------------------------------------------------------------------------------------------ warm-up, gaps


WARMUPS = {
    "ma": (lambda h, lo, c: ind.ma(c, 30), 29, ("SMA", {"timeperiod": 30})),
    "ema": (lambda h, lo, c: ind.ema(c, 12), 11, ("EMA", {"timeperiod": 12})),
    "rsi": (lambda h, lo, c: ind.rsi(c), 14, ("RSI", {"timeperiod": 14})),
    "macd": (lambda h, lo, c: ind.macd(c), 33, ("MACD", {})),
    "macd_cn": (lambda h, lo, c: ind.macd(c, cn_terminal=True), 33, ("MACD", {})),
    "macd_6_13_5": (lambda h, lo, c: ind.macd(c, 6, 13, 5), 16,
                    ("MACD", {"fastperiod": 6, "slowperiod": 13, "signalperiod": 5})),
    "boll": (lambda h, lo, c: ind.boll(c), 19, ("BBANDS", {"timeperiod": 20})),
    "atr": (lambda h, lo, c: ind.atr(h, lo, c), 14, ("ATR", {"timeperiod": 14})),
    "kdj": (lambda h, lo, c: ind.kdj(h, lo, c), 8, None),
}


@pytest.mark.parametrize("case", list(WARMUPS))
def test_warmup_is_stated_and_never_holds_data(panel: dict[str, pd.DataFrame], case: str) -> None:
    fn, expected, lookback = WARMUPS[case]
    high, low, close = panel["high"], panel["low"], panel["close"]
    result = fn(high, low, close)
    assert result.warmup == expected
    if lookback is not None:
        assert abstract.Function(lookback[0], **lookback[1]).lookback == expected  # TA-Lib's own count
    for code in close.columns:
        traded = (close[code].notna() & high[code].notna() & low[code].notna()).to_numpy()
        for name, frame in result.outputs.items():
            own = frame[code].to_numpy()[traded]
            assert np.isnan(own[:expected]).all(), f"{case} {code} {name}: a value inside the warm-up"
            assert np.isfinite(own[expected:]).all(), f"{case} {code} {name}: a gap after the warm-up"


def test_short_series_have_no_values() -> None:
    index = pd.bdate_range("2024-01-01", periods=34, name="trade_date")
    c = pd.Series(np.linspace(10, 12, 34), index=index)
    assert ind.macd(c.iloc[:33]).dif.isna().all()
    assert ind.macd(c).dif.notna().sum() == 1
    assert ind.ma(c.iloc[:4], 5).value.isna().all()
    assert ind.kdj(c.iloc[:8], c.iloc[:8], c.iloc[:8]).k.isna().all()
    empty = pd.DataFrame({"A": [np.nan] * 5, "B": np.arange(5.0)}, index=index[:5])
    assert ind.ema(empty, 3).value["A"].isna().all() and ind.ema(empty, 3).value["B"].notna().sum() == 3


def test_a_gap_does_not_poison_later_values(panel: dict[str, pd.DataFrame]) -> None:
    """Blank out five days in the middle of a complete code: those rows are NaN (not filled), and every later value
    is what TA-Lib gives on the code's remaining days; the untouched codes do not move."""
    high, low, close = (panel[f].copy() for f in ("high", "low", "close"))
    code = next(c for c in close.columns if close[c].notna().all())
    hole = close.index[600:605]
    for frame in (high, low, close):
        frame.loc[hole, code] = np.nan
    keep = close[code].notna().to_numpy()
    h, lo, c = (frame[code].to_numpy()[keep] for frame in (high, low, close))
    checks = {
        "ema": (ind.ema(close, 12).value, talib.EMA(c, 12)),
        "rsi": (ind.rsi(close).value, talib.RSI(c, 14)),
        "macd": (ind.macd(close).dea, talib.MACD(c)[1]),
        "boll": (ind.boll(close).lower, talib.BBANDS(c, 20, 2.0, 2.0, 0)[2]),
        "atr": (ind.atr(high, low, close).value, talib.ATR(h, lo, c, 14)),
        "kdj": (ind.kdj(high, low, close).k, None),
    }
    for name, (got, want) in checks.items():
        column = got[code]
        assert column.loc[hole].isna().all(), name
        assert column.iloc[605:].notna().all(), f"{name}: NaN after the gap"
        if want is not None:
            _assert_close(column.to_numpy()[keep], want, f"gap {name}")
    untouched = ind.kdj(panel["high"], panel["low"], panel["close"]).k
    gapped = checks["kdj"][0]
    others = [c for c in close.columns if c != code]
    assert untouched[others].equals(gapped[others])
    # KDJ of the gapped code equals KDJ of the code with the hole rows removed altogether
    alone = ind.kdj(*(frame[code][keep] for frame in (high, low, close))).k
    _assert_close(gapped[code].to_numpy()[keep], alone.to_numpy(), "kdj gap vs compressed")


def _talib_on_own_days(frame: pd.DataFrame, code: str, fn: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """TA-Lib's `fn` on one code's own trading days, spread back over the frame's rows (NaN where it did not trade)."""
    column = frame[code].to_numpy()
    traded = ~np.isnan(column)
    out = np.full(len(column), np.nan)
    out[traded] = fn(column[traded])
    return out


def test_a_frame_changed_after_an_indicator_is_read_again(panel: dict[str, pd.DataFrame]) -> None:
    """A frame's preparation is kept for the next indicator on it; a change made through pandas afterwards (a cell by
    position or label, rows blanked, a column, a new index) gives the changed frame's numbers, never the kept ones."""
    close = panel["close"].iloc[:, :12].copy()
    code, other = close.columns[0], close.columns[5]
    ema = lambda x: talib.EMA(x, 12)  # noqa: E731
    assert np.array_equal(ind.ema(close, 12).value[code].to_numpy(), _talib_on_own_days(close, code, ema),
                          equal_nan=True)
    close.iat[700, 0] = close.iat[700, 0] * 1.5  # .iat and .at keep the frame's index and columns objects
    assert np.array_equal(ind.ema(close, 12).value[code].to_numpy(), _talib_on_own_days(close, code, ema),
                          equal_nan=True)
    close.at[close.index[900], code] = np.nan
    assert np.array_equal(ind.ema(close, 12).value[code].to_numpy(), _talib_on_own_days(close, code, ema),
                          equal_nan=True)
    close.loc[close.index[700], code] = close[code].iloc[700] * 1.5
    close.iloc[100:110, 5] = np.nan  # a suspension where the code traded
    assert np.array_equal(ind.ema(close, 12).value[code].to_numpy(), _talib_on_own_days(close, code, ema),
                          equal_nan=True)
    after = ind.ema(close, 12).value[other]
    assert after.iloc[100:110].isna().all()
    assert np.array_equal(after.to_numpy(), _talib_on_own_days(close, other, ema), equal_nan=True)
    close[code] = close[code] + 1.0  # a whole column replaced
    assert np.array_equal(ind.ma(close, 5).value[code].to_numpy(),
                          _talib_on_own_days(close, code, lambda x: talib.SMA(x, 5)), equal_nan=True)
    close.index = close.index + pd.Timedelta(days=1)
    assert ind.ma(close, 5).value.index.equals(close.index)


def test_a_new_frame_never_gets_a_dead_frames_numbers(panel: dict[str, pd.DataFrame]) -> None:
    """Frames made and dropped one after another (so a new one may take a dead one's id and memory) each get their
    own numbers."""
    base = panel["close"].iloc[:, :6]
    for shift in range(5):
        frame = base + float(shift)
        got = ind.rsi(frame, 6).value
        for code in base.columns:
            want = _talib_on_own_days(frame, code, lambda x: talib.RSI(x, 6))
            assert np.array_equal(got[code].to_numpy(), want, equal_nan=True), (shift, code)
        del frame, got


def test_series_and_frame_agree(panel: dict[str, pd.DataFrame]) -> None:
    close = panel["close"]
    code = _gap_codes(close)[0]
    frame = ind.macd(close)
    single = ind.macd(close[code])
    assert isinstance(single.dif, pd.Series) and single.dif.name == code and single.warmup == frame.warmup
    for name in ("dif", "dea", "hist"):
        assert np.array_equal(single.outputs[name].to_numpy(), frame.outputs[name][code].to_numpy(), equal_nan=True)


# ------------------------------------------------------------------------------------------ conventions, API


def test_cn_terminal_histogram_is_twice_the_default(panel: dict[str, pd.DataFrame]) -> None:
    close = panel["close"]
    default, cn = ind.macd(close), ind.macd(close, cn_terminal=True)
    assert default.convention == "ta-lib" and cn.convention == "cn_terminal"
    assert cn.dif.equals(default.dif) and cn.dea.equals(default.dea)
    assert np.array_equal(cn.hist.to_numpy(), 2 * default.hist.to_numpy(), equal_nan=True)
    assert cn.hist.notna().sum().sum() > 300_000


def test_macd_is_not_the_difference_of_two_plain_emas(panel: dict[str, pd.DataFrame]) -> None:
    """TA-Lib seeds MACD's fast EMA on closes 14–25, so early DIF differs from EMA12 − EMA26 (REFERENCE.md)."""
    c = panel["close"]["600519.SH"]
    dif = ind.macd(c).dif
    plain = ind.ema(c, 12).value - ind.ema(c, 26).value
    assert abs(dif.iloc[33] - plain.iloc[33]) > 0.1
    assert abs(dif.iloc[-1] - plain.iloc[-1]) < 1e-9


def test_results_are_frozen_and_labelled() -> None:
    c = pd.Series(np.linspace(10, 20, 50), index=pd.bdate_range("2024-01-01", periods=50), name="X")
    result = ind.boll(c, 20, 2)
    assert (result.name, result.warmup, result.convention) == ("BOLL(20,2)", 19, "ta-lib")
    assert list(result.outputs) == ["upper", "mid", "lower"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.warmup = 0  # type: ignore[misc]
    assert [ind.ma(c, 30).name, ind.ema(c, 12).name, ind.rsi(c).name, ind.macd(c).name, ind.atr(c, c, c).name] == [
        "MA(30)", "EMA(12)", "RSI(14)", "MACD(12,26,9)", "ATR(14)"]


def test_bad_inputs_are_refused(panel: dict[str, pd.DataFrame]) -> None:
    close = panel["close"]
    with pytest.raises(ValueError, match="integer >= 2"):
        ind.ma(close, 1)
    with pytest.raises(ValueError, match="integer >= 2"):
        ind.ema(close, 12.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="shorter than slow"):
        ind.macd(close, 26, 12)
    with pytest.raises(ValueError, match="positive"):
        ind.boll(close, 20, 0)
    with pytest.raises(ValueError, match="share one index"):
        ind.atr(panel["high"], panel["low"].iloc[:-1], close)
    with pytest.raises(ValueError, match="share one index"):
        ind.kdj(panel["high"], panel["low"][close.columns[::-1]], close)
    with pytest.raises(ValueError, match="Series that share one index"):
        ind.atr(panel["high"]["600519.SH"], panel["low"], close)
    with pytest.raises(TypeError, match="DataFrame"):
        ind.ma(close.to_numpy(), 5)  # type: ignore[type-var]


def test_talib_process_settings_are_refused_and_restored(panel: dict[str, pd.DataFrame],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`set_unstable_period` and `set_compatibility` are process-wide: the functions refuse to run under them,
    and this test puts the old values back."""
    close = panel["close"].iloc[:, :3]
    with _talib_setting(talib.set_unstable_period, talib.get_unstable_period, "EMA", 10):
        with pytest.raises(RuntimeError, match="unstable period for EMA"):
            ind.macd(close)
        with pytest.raises(RuntimeError, match="unstable period for EMA"):
            ind.ema(close, 12)
        with pytest.raises(RuntimeError, match="unstable period for EMA"):
            ind.kdj(close, close, close)  # its smoothing runs on TA-Lib's EMA
        ind.ma(close, 5)  # SMA has no unstable period
    with _talib_setting(talib.set_unstable_period, talib.get_unstable_period, "RSI", 5), \
            pytest.raises(RuntimeError, match="unstable period for RSI"):
        ind.rsi(close)
    # the wheel's set_compatibility does not take (get_compatibility stays 0), so stand its getter in for it
    monkeypatch.setattr(talib, "get_compatibility", lambda: 1)
    with pytest.raises(RuntimeError, match="Metastock"):
        ind.ema(close, 12)
    monkeypatch.undo()
    assert talib.get_unstable_period("EMA") == 0 and talib.get_compatibility() == 0
    _assert_close(ind.ema(close, 12).value.iloc[:, 0].dropna().to_numpy(),
                  talib.EMA(close.iloc[:, 0].dropna().to_numpy(), 12)[11:], "after restore")


# ------------------------------------------------------------------------------------------ regenerate


def write_golden_files(data_dir: Path) -> None:
    """Rewrite tests/tools/data/indicators_golden.csv and kdj_golden.csv from the shared data and the reference."""
    gold, kdj_bars = _source_bars(data_dir)
    DATA.mkdir(exist_ok=True)
    reference_golden(gold).to_csv(GOLDEN, index=False, lineterminator="\n")
    reference_kdj_golden(kdj_bars).to_csv(KDJ_GOLDEN, index=False, lineterminator="\n")


if __name__ == "__main__":
    from testkit.paths import SHARED_DATA

    write_golden_files(SHARED_DATA)
    print(f"wrote {GOLDEN} and {KDJ_GOLDEN}")
