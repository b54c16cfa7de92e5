"""Technical indicators over wide frames (date × code) or single series, with TA-Lib's conventions by default.

Shared by the execution agent (rule tools, the rule language) and the decision desk.

Gaps. Every code is computed on its own trading days: a code's rows where an input is NaN (suspended, not yet
listed, delisted) are skipped, the indicator runs over the remaining bars, and the values are scattered back to
those rows. Skipped rows stay NaN; nothing is forward-filled. For ATR and KDJ a row counts as a trading day of a
code only when high, low and close are all present.

Warm-up. Every result carries `warmup`, counted in bars of each code's own trading days: the first `warmup` bars of
every code are NaN and the first value is at bar `warmup` (0-based); a code with `warmup` bars or fewer has none.

Conventions. TA-Lib 0.8.2, called once per code, is the engine. KDJ, which TA-Lib lacks, is built per code from
TA-Lib's MAX, MIN and EMA (its smoothing is an EMA with α = 1/m) and numpy; the MACD histogram is TA-Lib's own
subtraction, DIF − DEA, done once over the panel (the same numbers), and the Chinese-terminal histogram is numpy:

- MA(n): simple mean of the last n closes. Warm-up n − 1.
- EMA(n): α = 2/(n+1), seeded with the simple mean of the first n closes (not with the first close, as pandas
  `ewm(adjust=False)` is). Warm-up n − 1.
- RSI(n): Wilder smoothing, α = 1/n, of gains and losses, seeded with the mean of the first n changes. A window
  with no movement at all (average gain and loss both 0) gives 0, as TA-Lib does. Warm-up n.
- MACD(fast, slow, signal): DIF = EMA_fast − EMA_slow with TA-Lib's seeding (the fast EMA is seeded on the fast
  closes ending at bar slow − 1, so both EMAs start there; this is not `ema(c, 12) − ema(c, 26)` early on),
  DEA = EMA_signal(DIF) seeded with its simple mean, histogram = DIF − DEA. All three start at bar
  (slow − 1) + (signal − 1), 33 for (12, 26, 9). `cn_terminal=True` gives the histogram Chinese terminals draw,
  (DIF − DEA) × 2; DIF and DEA are unchanged.
- BOLL(n, k): mid = MA(n), upper/lower = mid ± k·σ with the population σ (ddof 0) of the same n closes.
  Warm-up n − 1.
- ATR(n): true range TR = max(high, prev close) − min(low, prev close), from bar 1 (bar 0 has no previous close);
  the first ATR, at bar n, is the mean of TR over bars 1..n, then Wilder: ATR = ((n−1)·ATR_prev + TR)/n.
  Warm-up n.
- KDJ(n, m1, m2), default (9, 3, 3): RSV = (close − LLV(low, n)) / (HHV(high, n) − LLV(low, n)) × 100 over the last
  n bars, and 50 when that range is 0 (a flat window carries no information). K = ((m1−1)·K_prev + RSV)/m1,
  D = ((m2−1)·D_prev + K)/m2, J = 3K − 2D, with K_prev = D_prev = 50 before the first RSV. The first value is at
  bar n − 1 (the first full window): K = (m1−1)/m1·50 + RSV/m1, i.e. 2/3·50 + 1/3·RSV for (9, 3, 3). Warm-up n − 1.

Preparation. TA-Lib needs each code's series contiguous; a frame's values are laid out code by code once, with where
each set of inputs traded, and kept for the next indicator on the same frame while the frame is alive and holds the
same values (the last eight frames). A frame changed through pandas is prepared again: pandas' copy-on-write moves
its values to new memory first, which is checked. Changes made behind pandas' back, through a numpy array the frame
was built on with `copy=False`, are not seen; build such frames with a copy.

TA-Lib's process-wide settings change its numbers: a non-zero unstable period (`talib.set_unstable_period`) adds
leading NaNs and changes MACD's signal, and Metastock compatibility seeds EMAs differently. The functions here
refuse to run unless both are at TA-Lib's defaults, rather than return numbers that contradict `warmup`.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field, fields
from functools import partial
from typing import Generic, Literal, TypeVar

import numpy as np
import pandas as pd
import talib

from tools.i18n import _

__all__ = [
    "BollResult",
    "IndicatorResult",
    "KDJResult",
    "Line",
    "MACDResult",
    "atr",
    "boll",
    "ema",
    "kdj",
    "ma",
    "macd",
    "rsi",
]

F = TypeVar("F", pd.DataFrame, pd.Series)

CONVENTION_TALIB = "ta-lib"
CONVENTION_CN_TERMINAL = "cn_terminal"
CONVENTION_KDJ = "kdj-50-seed"


# ---------------------------------------------------------------------------------------------------- results


@dataclass(frozen=True)
class IndicatorResult(Generic[F]):
    """What every indicator returns: its label, its warm-up in bars of each code's own trading days, its convention.

    The output frames (or series) are the fields the subclasses add; `outputs` lists them by name.
    """

    name: str
    warmup: int
    convention: str

    @property
    def outputs(self) -> dict[str, F]:
        """The output frames (or series) by field name, in declaration order."""
        base = {f.name for f in fields(IndicatorResult)}
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in base}


@dataclass(frozen=True)
class Line(IndicatorResult[F]):
    """A one-line indicator (MA, EMA, RSI, ATR)."""

    value: F


@dataclass(frozen=True)
class MACDResult(IndicatorResult[F]):
    """MACD: DIF, DEA (the signal line) and the histogram."""

    dif: F
    dea: F
    hist: F


@dataclass(frozen=True)
class BollResult(IndicatorResult[F]):
    """Bollinger bands: upper, mid (the moving average) and lower."""

    upper: F
    mid: F
    lower: F


@dataclass(frozen=True)
class KDJResult(IndicatorResult[F]):
    """KDJ: the K, D and J lines."""

    k: F
    d: F
    j: F


# ---------------------------------------------------------------------------------------------------- inputs

_BLOCK_ROWS = 128  # rows per block when a date-major frame is copied code-major (300 x 1,288: 0.16 ms, whole: 0.28 ms)
_KEPT_FRAMES = 8  # frames whose code-major copy is kept for the next indicator on them, least recently used dropped

Inputs = tuple[np.ndarray, ...]  # one 1-D contiguous array per input of a TA-Lib style function


@dataclass(frozen=True, eq=False)
class _Layout:
    """Where each code of a set of inputs traded (every input present), worked out once for that set.

    Outputs are addressed flat: code j's rows [first, end) of an (N, T) output are the slice [j·T + first, j·T + end).
    `runs`: (rows, inputs) of every code that traded on one unbroken run of rows, whole codes included, with views of
    that run (no copies). `gapped`: the codes with interior gaps, each with its trading days packed into contiguous
    inputs and its pieces (rows, at, until): the unbroken runs of rows that take [at, until) of the code's result.
    `blank`: the flat positions of the rows where a code did not trade, NaN in every output.
    """

    runs: list[tuple[slice, Inputs]]
    gapped: list[tuple[Inputs, list[tuple[slice, int, int]]]]
    blank: np.ndarray


@dataclass(frozen=True, eq=False)
class _Codes:
    """One input code by code: `rows[j]` is code j's values over every row ((N, T), C order, read-only) and `valid`
    where they are present. `layouts` keeps the layouts of the input sets this input leads, keyed by the identities of
    the other inputs (held in the value, so those identities stay theirs)."""

    rows: np.ndarray
    valid: np.ndarray
    layouts: dict[tuple[int, ...], tuple[tuple[_Codes, ...], _Layout]] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class _Kept:
    """A frame's prepared input, valid while the frame is alive and still holds the very values it was made from.

    `guard` is a shallow copy of the frame: with it alive, pandas' copy-on-write moves the frame's values to new memory
    before any write to them, so an unchanged `values` address means unchanged values. `values` is held so that no
    other array can take its address while the entry exists.
    """

    frame: weakref.ReferenceType[pd.DataFrame]
    guard: pd.DataFrame
    values: np.ndarray
    index: pd.Index
    columns: pd.Index
    codes: _Codes


_KEPT: OrderedDict[int, _Kept] = OrderedDict()  # by id(frame)
_KEPT_LOCK = threading.Lock()


def _address(values: np.ndarray) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
    """Where an array's values are: data pointer, shape, strides."""
    return values.__array_interface__["data"][0], values.shape, values.strides


def _forget(key: int, ref: weakref.ReferenceType[pd.DataFrame]) -> None:
    """Drop a dead frame's entry at once (a weakref callback: the id cannot be taken again before it runs)."""
    kept = _KEPT.get(key)
    if kept is not None and kept.frame is ref:
        _KEPT.pop(key, None)


def _code_major(values: np.ndarray) -> np.ndarray:
    """(T, N) values as a read-only (N, T) C-order array: a view when already code-major, else a copy in row blocks."""
    if values.flags.f_contiguous:
        rows = values.T
    else:
        t = values.shape[0]
        rows = np.empty(values.shape[::-1])
        for start in range(0, t, _BLOCK_ROWS):
            rows[:, start:start + _BLOCK_ROWS] = values[start:start + _BLOCK_ROWS].T
    rows.flags.writeable = False
    return rows


def _prepared(rows: np.ndarray) -> _Codes:
    """An input from its code-major rows: where its values are present."""
    valid = ~np.isnan(rows)
    valid.flags.writeable = False
    return _Codes(rows, valid)


def _frame_codes(frame: pd.DataFrame) -> _Codes:
    """The frame code by code, prepared once and reused while the frame and its values are unchanged."""
    values = frame.to_numpy(dtype="float64", na_value=np.nan)
    key = id(frame)
    with _KEPT_LOCK:
        kept = _KEPT.get(key)
        if (kept is not None and kept.frame() is frame and kept.index is frame.index and kept.columns is frame.columns
                and _address(kept.values) == _address(values)):
            _KEPT.move_to_end(key)
            return kept.codes
    codes = _prepared(_code_major(values))
    kept = _Kept(weakref.ref(frame, partial(_forget, key)), frame.copy(deep=False), values, frame.index,
                 frame.columns, codes)
    with _KEPT_LOCK:
        _KEPT[key] = kept
        _KEPT.move_to_end(key)
        while len(_KEPT) > _KEPT_FRAMES:
            _KEPT.popitem(last=False)
    return codes


def _layout(rows: Inputs, valid: np.ndarray) -> _Layout:
    """The layout of inputs given code-major (`rows`, one (N, T) array each) that are all present where `valid`."""
    t = valid.shape[1]
    whole = valid.all(axis=1)
    partial = np.flatnonzero(~whole)
    # each unbroken run of a partial code starts where its row turns True and ends where it turns False again
    edges = np.flatnonzero(np.diff(valid[partial], axis=1, prepend=False, append=False))
    row, at = np.divmod(edges, t + 1)
    pieces: dict[int, list[tuple[int, int]]] = {}
    for j, lo, hi in zip(partial[row[::2]].tolist(), at[::2].tolist(), at[1::2].tolist(), strict=True):
        pieces.setdefault(j, []).append((lo, hi))
    runs = [(slice(j * t, (j + 1) * t), tuple([r[j] for r in rows])) for j in np.flatnonzero(whole).tolist()]
    placed_all: list[tuple[int, list[tuple[slice, int, int]]]] = []
    for j, spans in pieces.items():
        if len(spans) == 1:
            ((lo, hi),) = spans
            runs.append((slice(j * t + lo, j * t + hi), tuple([r[j, lo:hi] for r in rows])))
            continue
        placed, own = [], 0
        for lo, hi in spans:
            placed.append((slice(j * t + lo, j * t + hi), own, own + hi - lo))
            own += hi - lo
        placed_all.append((j, placed))
    # the gapped codes' trading days packed code after code: their flat positions (code × T + row), one take per input
    codes = np.array([j for j, _ in placed_all], dtype=np.intp)
    lengths = [placed[-1][2] for _, placed in placed_all]
    flat = np.flatnonzero(valid[codes]) + np.repeat((codes - np.arange(len(codes))) * t, lengths)
    packed = tuple(r.reshape(-1).take(flat) for r in rows)
    gapped: list[tuple[Inputs, list[tuple[slice, int, int]]]] = []
    start = 0
    for (_codes, placed), length in zip(placed_all, lengths, strict=True):
        gapped.append((tuple([p[start:start + length] for p in packed]), placed))
        start += length
    return _Layout(runs, gapped, np.flatnonzero(~valid))


def _layout_of(codes: tuple[_Codes, ...]) -> _Layout:
    """The layout of a set of inputs, kept on its first input."""
    lead, rest = codes[0], codes[1:]
    key = tuple(id(c) for c in rest)
    with _KEPT_LOCK:
        found = lead.layouts.get(key)
    if found is not None:
        return found[1]
    valid = lead.valid
    for c in rest:
        valid = valid & c.valid
    layout = _layout(tuple(c.rows for c in codes), valid)
    with _KEPT_LOCK:
        lead.layouts[key] = (rest, layout)
        while len(lead.layouts) > _KEPT_FRAMES:
            del lead.layouts[next(iter(lead.layouts))]
    return layout


@dataclass(frozen=True)
class _Panel:
    """The inputs code by code ((N, T) rows each), their layout, and the labels to wrap the outputs in."""

    rows: tuple[np.ndarray, ...]
    layout: _Layout
    index: pd.Index
    columns: pd.Index | None  # None: the inputs were Series
    name: Hashable

    def wrap(self, out: np.ndarray) -> pd.DataFrame | pd.Series:
        if self.columns is None:
            return pd.Series(out[:, 0], index=self.index, name=self.name, copy=False)
        return pd.DataFrame(out, index=self.index, columns=self.columns, copy=False)


def _panel(*inputs: pd.DataFrame | pd.Series) -> _Panel:
    first = inputs[0]
    if isinstance(first, pd.Series):
        if not all(isinstance(x, pd.Series) and x.index.equals(first.index) for x in inputs):
            raise ValueError("the inputs must all be Series that share one index")
        codes = tuple(_prepared(np.ascontiguousarray(x.to_numpy(dtype="float64", na_value=np.nan)[None, :]))
                      for x in inputs)
        columns, name = None, first.name
    elif isinstance(first, pd.DataFrame):
        if not all(isinstance(x, pd.DataFrame) and x.index.equals(first.index) and x.columns.equals(first.columns)
                   for x in inputs):
            raise ValueError("the inputs must all be frames that share one index and one set of columns, in one order")
        codes = tuple(_frame_codes(x) for x in inputs)
        columns, name = first.columns, None
    else:
        raise TypeError(f"expected a pandas DataFrame (date × code) or Series, got {type(first).__name__}")
    return _Panel(tuple(c.rows for c in codes), _layout_of(codes), first.index, columns, name)


def _check_period(label: str, value: int, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ValueError(_("{label} must be an integer >= {minimum}, got {value}").format(
            label=label, minimum=minimum, value=repr(value)))


def _check_talib(*names: str) -> None:
    """Refuse to run when TA-Lib's process-wide settings would contradict the documented convention."""
    if talib.get_compatibility() != 0:
        raise RuntimeError("TA-Lib's compatibility is set to Metastock (talib.set_compatibility); "
                           "tools.research.indicators needs the default, 0")
    for name in names:
        if talib.get_unstable_period(name) != 0:
            raise RuntimeError(f"TA-Lib's unstable period for {name} is set to {talib.get_unstable_period(name)} "
                               "process-wide (talib.set_unstable_period); tools.research.indicators needs 0")


# ---------------------------------------------------------------------------------------------------- engines


def _unwrapped(fn: Callable[..., object]) -> Callable[..., object]:
    """The TA-Lib function without its pandas/polars wrapper: the inputs here are always float64 ndarrays."""
    return getattr(fn, "__wrapped__", fn)


# TA-Lib's functions, called positionally: SMA/EMA/RSI(real, timeperiod), MACD(real, fast, slow, signal),
# BBANDS(real, timeperiod, nbdevup, nbdevdn, matype), ATR(high, low, close, timeperiod), MAX/MIN(real, timeperiod).
_SMA = _unwrapped(talib.SMA)
_EMA = _unwrapped(talib.EMA)
_RSI = _unwrapped(talib.RSI)
_MACD = _unwrapped(talib.MACD)
_BBANDS = _unwrapped(talib.BBANDS)
_ATR = _unwrapped(talib.ATR)
_MAX = _unwrapped(talib.MAX)
_MIN = _unwrapped(talib.MIN)


def _per_code(panel: _Panel, fn: Callable[..., np.ndarray | tuple[np.ndarray, ...]], params: tuple[float, ...],
              n_out: Literal[1, 3], copied: Literal[2, 3] | None = None) -> list[np.ndarray]:
    """Run `fn(*inputs, *params)` (TA-Lib style: 1-D arrays in, an array or a tuple of arrays out) on each code's own
    trading days and return the outputs as (T, N) arrays; rows where the code did not trade stay NaN.

    Codes that traded on one unbroken run of rows are computed on a view of it and written in place; the codes with
    gaps on their packed days, and each unbroken piece of the result is copied back to its rows. Of three outputs,
    `copied=2` fills the first two only and returns the third uninitialised, for the caller to fill.
    """
    layout = panel.layout
    copied = n_out if copied is None else copied
    width, t = panel.rows[0].shape
    block = np.empty((n_out, width * t))  # block[k]: output k, code after code (flat, see _Layout)
    out = block[:copied]
    for o in out:  # one output at a time: a 1-D fancy assignment is several times faster than out[:, blank]
        o[layout.blank] = np.nan
    if n_out == 1:
        (target,) = out
        for rows, inputs in layout.runs:
            target[rows] = fn(*inputs, *params)
        for inputs, pieces in layout.gapped:
            result = fn(*inputs, *params)
            for rows, at, until in pieces:
                target[rows] = result[at:until]
    else:  # three outputs (MACD, BBANDS, KDJ): unrolled, a zip per code costs more than the copies
        o0, o1, o2 = block
        if copied == 3:
            for rows, inputs in layout.runs:
                o0[rows], o1[rows], o2[rows] = fn(*inputs, *params)
        else:
            for rows, inputs in layout.runs:
                o0[rows], o1[rows], _hist = fn(*inputs, *params)
        for inputs, pieces in layout.gapped:
            results = fn(*inputs, *params)
            for o, result in zip(out, results[:copied], strict=True):
                for rows, at, until in pieces:
                    o[rows] = result[at:until]
    return [o.reshape(width, t).T for o in block]


def _rsv(high: np.ndarray, low: np.ndarray, close: np.ndarray, n: int) -> np.ndarray:
    """RSV over the last n bars of one code's own trading days: 50 for a flat window, NaN before the first window."""
    hh = _MAX(high, n)
    ll = _MIN(low, n)
    span = hh - ll
    with np.errstate(invalid="ignore", divide="ignore"):
        rsv = np.where(span > 0, (close - ll) / span * 100.0, 50.0)
    rsv[: n - 1] = np.nan
    return rsv


def _smooth_from_50(x: np.ndarray, m: int) -> np.ndarray:
    """y = ((m−1)·y_prev + x)/m with y_prev = 50 before x[0]: an EMA with α = 1/m = 2/((2m−1)+1), so TA-Lib's EMA of
    period 2m−1 after 2m−1 values of 50 (its seed, their mean, is then exactly 50)."""
    if m == 1:
        return x.copy()
    lead = 2 * m - 1
    padded = np.empty(lead + len(x))
    padded[:lead] = 50.0
    padded[lead:] = x
    return _EMA(padded, lead)[lead:]


def _kdj_code(high: np.ndarray, low: np.ndarray, close: np.ndarray, n: int, m1: int,
              m2: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """K, D, J of one code on its own trading days; NaN before bar n − 1."""
    rsv = _rsv(high, low, close, n)
    k_line = np.full(len(close), np.nan)
    d_line = np.full(len(close), np.nan)
    if len(close) >= n:
        k_line[n - 1:] = _smooth_from_50(rsv[n - 1:], m1)
        d_line[n - 1:] = _smooth_from_50(k_line[n - 1:], m2)
    return k_line, d_line, 3.0 * k_line - 2.0 * d_line


# ---------------------------------------------------------------------------------------------------- indicators


def ma(close: F, n: int) -> Line[F]:
    """Simple moving average of the last `n` closes (TA-Lib SMA). Warm-up n − 1."""
    _check_period("n", n, 2)
    panel = _panel(close)
    (out,) = _per_code(panel, _SMA, (n,), 1)
    return Line(f"MA({n})", n - 1, CONVENTION_TALIB, panel.wrap(out))


def ema(close: F, n: int) -> Line[F]:
    """Exponential moving average, α = 2/(n+1), seeded with the SMA of the first n closes. Warm-up n − 1."""
    _check_period("n", n, 2)
    _check_talib("EMA")
    panel = _panel(close)
    (out,) = _per_code(panel, _EMA, (n,), 1)
    return Line(f"EMA({n})", n - 1, CONVENTION_TALIB, panel.wrap(out))


def rsi(close: F, n: int = 14) -> Line[F]:
    """Wilder's RSI (α = 1/n, seeded with the mean of the first n changes; 0 for a window with no movement).

    Warm-up n.
    """
    _check_period("n", n, 2)
    _check_talib("RSI")
    panel = _panel(close)
    (out,) = _per_code(panel, _RSI, (n,), 1)
    return Line(f"RSI({n})", n, CONVENTION_TALIB, panel.wrap(out))


def macd(close: F, fast: int = 12, slow: int = 26, signal: int = 9, *, cn_terminal: bool = False) -> MACDResult[F]:
    """MACD with TA-Lib's seeding: DIF, DEA and DIF − DEA, or (DIF − DEA) × 2 with `cn_terminal`.

    Warm-up (slow − 1) + (signal − 1): 33 for (12, 26, 9), for all three outputs.
    """
    _check_period("fast", fast, 2)
    _check_period("slow", slow, 2)
    _check_period("signal", signal, 1)
    if fast >= slow:
        raise ValueError(_("fast ({fast}) must be shorter than slow ({slow})").format(fast=fast, slow=slow))
    _check_talib("EMA")
    panel = _panel(close)
    dif, dea, hist = _per_code(panel, _MACD, (fast, slow, signal), 3, copied=2)
    np.subtract(dif, dea, out=hist)  # TA-Lib's histogram is this very difference: once here, not a third copy per code
    if cn_terminal:
        hist *= 2.0
    return MACDResult(f"MACD({fast},{slow},{signal})", (slow - 1) + (signal - 1),
                      CONVENTION_CN_TERMINAL if cn_terminal else CONVENTION_TALIB,
                      panel.wrap(dif), panel.wrap(dea), panel.wrap(hist))


def boll(close: F, n: int = 20, k: float = 2.0) -> BollResult[F]:
    """Bollinger bands: MA(n) ± k × population σ (ddof 0) of the same n closes. Warm-up n − 1."""
    _check_period("n", n, 2)
    if not np.isfinite(k) or k <= 0:
        raise ValueError(_("k must be a positive number, got {k}").format(k=repr(k)))
    panel = _panel(close)
    upper, mid, lower = _per_code(panel, _BBANDS, (n, float(k), float(k), 0), 3)
    return BollResult(f"BOLL({n},{k:g})", n - 1, CONVENTION_TALIB,
                      panel.wrap(upper), panel.wrap(mid), panel.wrap(lower))


def atr(high: F, low: F, close: F, n: int = 14) -> Line[F]:
    """Average true range, Wilder-smoothed and seeded with the mean TR of bars 1..n (TA-Lib ATR). Warm-up n."""
    _check_period("n", n, 1)
    _check_talib("ATR")
    panel = _panel(high, low, close)
    (out,) = _per_code(panel, _ATR, (n,), 1)
    return Line(f"ATR({n})", n, CONVENTION_TALIB, panel.wrap(out))


def kdj(high: F, low: F, close: F, n: int = 9, m1: int = 3, m2: int = 3) -> KDJResult[F]:
    """KDJ(n, m1, m2) with K = D = 50 before the first RSV; see the module docstring. Warm-up n − 1."""
    _check_period("n", n, 2)
    _check_period("m1", m1, 1)
    _check_period("m2", m2, 1)
    _check_talib("EMA")
    panel = _panel(high, low, close)
    k_line, d_line, j_line = _per_code(panel, _kdj_code, (n, m1, m2), 3)
    return KDJResult(f"KDJ({n},{m1},{m2})", n - 1, CONVENTION_KDJ,
                     panel.wrap(k_line), panel.wrap(d_line), panel.wrap(j_line))
