"""A simple next-bar backtest of a date x code signal frame, beside the buy-and-hold of the same codes.

Conventions (stated in every report):
- target position per code: a signal of 1 means long, -1 short (flat when `long_only`), 0 or NaN keep
  the previous target ("hold", as the signal seed defines 0), starting flat;
- the target decided on the close of bar t is traded at bar t+1's execution price (the open when
  given, else the close) and held until the next trade, so the position at bar t is the target of t-1;
- a code without a price on a bar (suspended, not yet listed, delisted) cannot trade on it: its position is
  carried across the gap, valued at its last price, and the move from its last price before the gap to its
  first price after it is earned on the first bar after the gap (as the benchmark values its holding);
- capital: each code trades its own sleeve of 1/N of the starting capital (N codes). A trade puts the whole
  sleeve long (1), short (-1) or in cash (0) at the execution price; between trades the sleeve holds a fixed
  number of shares, so weights drift with prices and are never rebalanced against each other (no hidden daily
  rebalance). A short sleeve keeps the sale's proceeds in cash and owes the shares. Fees are `fee_rate` times
  the traded notional, charged on each change of position;
- returns, Sharpe, drawdown, exposure and fees are on the whole starting capital (tools.research.performance); the last
  bar has no next price, so T dates give T - 1 bars of returns.

Benchmark (always reported beside the strategy): the equal-weight buy-and-hold of the same codes at the
same execution prices over the same bars. Each code gets a 1/N sleeve of capital; the sleeve buys at the
code's first valid (finite, positive) price from bar 0 on, paying `fee_rate` once, and holds to the end.
A code that lists later keeps its sleeve in cash until its first price (the buy is at that bar's price,
like the strategy's trades); a code never priced keeps cash throughout. A missing price later
(suspension, delisting) values the holding at its last price. Nothing is sold at the end, as the
strategy is not charged for closing its open positions either.

Counts, each labelled for what it counts:
- signal_days_buy / signal_days_sell: cells of the signal equal to 1 / -1, over every date and code
  (a code signalling 1 on ten days while already long counts ten);
- buys / sells: executed position increases / decreases (long-only: entries / exits; long-short: a
  buy opens a long or covers a short, a sell closes a long or opens a short); trades = buys + sells;
- round_trips: holding periods closed (a position opened and later closed or reversed);
  open_positions: codes still holding on the last bar. The win rate is over the closed round trips only (None
  when none closed); open positions are counted apart, as those in profit so far (open_in_profit).
Executed counts cover the bars with a return (a trade on the last date cannot be evaluated).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from tools.data.schema import codes_text
from tools.i18n import _
from tools.research.performance import figures

MAX_LISTED_CODES = 10


@dataclass(frozen=True)
class BacktestMetrics:
    total_return: float
    annual_return: float
    sharpe: float
    max_drawdown: float
    turnover: float  # average daily traded notional as a share of capital
    trades: int  # executed changes of position (buys + sells), summed over codes
    win_rate: float | None  # share of closed round trips that made money before fees; None when none closed
    open_in_profit: int  # open positions whose price moved their way since entry (before fees)
    bars: int
    fee_rate: float
    long_only: bool
    exposure: float  # average fraction of equity invested (gross: long plus short) over the bars
    fees: float  # fees paid, as a fraction of the starting capital
    signal_days_buy: int  # signal cells equal to 1
    signal_days_sell: int  # signal cells equal to -1
    buys: int  # executed position increases
    sells: int  # executed position decreases
    round_trips: int  # holding periods closed
    open_positions: int  # codes holding on the last bar
    benchmark_total_return: float  # equal-weight buy-and-hold of the same codes (module docstring)
    benchmark_annual_return: float
    benchmark_sharpe: float
    benchmark_max_drawdown: float
    benchmark_exposure: float
    benchmark_trades: int  # codes the buy-and-hold bought
    benchmark_fees: float
    excess_return: float  # total_return - benchmark_total_return
    excess_annual_return: float  # annual_return - benchmark_annual_return

    def as_dict(self) -> dict[str, float | int | bool | None]:
        return asdict(self)


@dataclass(frozen=True)
class BacktestResult:
    metrics: BacktestMetrics
    daily_returns: pd.Series
    equity: pd.Series  # value after each bar's return, starting capital 1
    positions: pd.DataFrame
    exposure: pd.Series  # fraction of capital invested per bar
    benchmark_returns: pd.Series  # the buy-and-hold's daily returns, on the same bars
    benchmark_equity: pd.Series


def target_positions(signal: pd.DataFrame, long_only: bool = True) -> pd.DataFrame:
    """Signals to target positions: 1 long, -1 short (or flat), 0/NaN hold the previous target."""
    target = signal.where(signal.isin([1, -1]))
    target = target.ffill().fillna(0.0)
    if long_only:
        target = target.clip(lower=0.0)
    return target.astype("float64")


def executed_changes(positions: pd.DataFrame | pd.Series) -> pd.DataFrame | pd.Series:
    """Change of position at each bar with a return (from flat before the first bar; the last bar is left out).

    Positive values are buys, negative values sells: the counts in the metrics and the chart markers.
    """
    change = positions.diff()
    change.iloc[:1] = positions.iloc[:1]
    return change.iloc[:-1]


def buy_and_hold(price: pd.DataFrame, fee_rate: float = 0.0) -> pd.Series:
    """Equity of the equal-weight buy-and-hold of `price`'s codes (module docstring), labelled like
    `run_backtest`'s equity: the value at bar t is taken at bar t+1's price (T dates give T - 1 values)."""
    px = price.to_numpy(dtype=float)
    if len(px) < 2 or px.shape[1] == 0:
        return pd.Series(1.0, index=price.index[:0], dtype=float)
    priced = np.isfinite(px) & (px > 0)
    listed = priced.any(axis=0)
    first = priced.argmax(axis=0)
    entry = np.where(listed, px[first, np.arange(px.shape[1])], np.nan)
    held = price.where(priced).ffill().to_numpy(dtype=float)[1:]  # valued at the last valid price
    entered = listed & (np.arange(len(px) - 1)[:, None] >= first)
    value = np.where(entered, (1.0 - fee_rate) * held / entry, 1.0)
    return pd.Series(value.mean(axis=1), index=price.index[:-1])


def run_backtest(signal: pd.DataFrame, price: pd.DataFrame, fee_rate: float = 0.0005,
                 long_only: bool = True) -> BacktestResult:
    """Backtest `signal` against execution prices `price` (same dates and codes), with its benchmark."""
    price = price.reindex(index=signal.index, columns=signal.columns)
    sleeves = _run_sleeves(target_positions(signal, long_only).to_numpy(), price.to_numpy(dtype=float), fee_rate)
    positions = pd.DataFrame(sleeves.positions, index=signal.index, columns=signal.columns)
    index = signal.index[:-1]
    equity = pd.Series(sleeves.equity, index=index)
    daily = equity / equity.shift(1, fill_value=1.0) - 1.0
    exposure = pd.Series(sleeves.exposure, index=index)
    changes = executed_changes(positions)
    bars = len(daily)
    strategy = figures(equity, float(exposure.mean()) if bars else 0.0, int((changes != 0).sum().sum()),
                       float(sleeves.fees))
    bench_equity = buy_and_hold(price, fee_rate)
    bench_daily = bench_equity / bench_equity.shift(1, fill_value=1.0) - 1.0
    bought = int(_bought(price).any(axis=0).sum())  # the benchmark's buys on bars with a return
    bench = figures(bench_equity, _bench_exposure(price, bench_equity), bought,
                    fee_rate * bought / max(signal.shape[1], 1))
    held = positions.iloc[:-1]
    win_rate, open_in_profit = _outcomes(held, sleeves.moves)
    metrics = BacktestMetrics(
        total_return=strategy.total_return,
        annual_return=strategy.annual_return,
        sharpe=strategy.sharpe,
        max_drawdown=strategy.max_drawdown,
        turnover=float(sleeves.turnover.mean()) if bars else 0.0,
        trades=strategy.trades,
        win_rate=win_rate,
        open_in_profit=open_in_profit,
        bars=bars,
        fee_rate=fee_rate,
        long_only=long_only,
        exposure=strategy.exposure,
        fees=strategy.fees,
        signal_days_buy=int((signal == 1).sum().sum()),
        signal_days_sell=int((signal == -1).sum().sum()),
        buys=int((changes > 0).sum().sum()),
        sells=int((changes < 0).sum().sum()),
        round_trips=int(((held.shift(1, fill_value=0.0) != 0) & (changes != 0)).sum().sum()),
        open_positions=int((held.iloc[-1] != 0).sum()) if bars else 0,
        benchmark_total_return=bench.total_return,
        benchmark_annual_return=bench.annual_return,
        benchmark_sharpe=bench.sharpe,
        benchmark_max_drawdown=bench.max_drawdown,
        benchmark_exposure=bench.exposure,
        benchmark_trades=bench.trades,
        benchmark_fees=bench.fees,
        excess_return=strategy.total_return - bench.total_return,
        excess_annual_return=strategy.annual_return - bench.annual_return,
    )
    return BacktestResult(metrics, daily, equity, positions, exposure, bench_daily, bench_equity)


@dataclass(frozen=True)
class _Sleeves:
    positions: np.ndarray  # T x N: the position held from each bar's price to the next
    equity: np.ndarray  # T - 1: the portfolio's value at each next bar, starting capital 1
    exposure: np.ndarray  # T - 1: gross value invested after the bar's trades over the value before them
    turnover: np.ndarray  # T - 1: notional traded over the value before the trades
    moves: np.ndarray  # T - 1 x N: each code's price move to the next bar, across gaps (0 while unpriced)
    fees: float  # fees paid, as a fraction of the starting capital


def _run_sleeves(target: np.ndarray, px: np.ndarray, fee_rate: float) -> _Sleeves:
    """Trade each code's 1/N sleeve to the previous bar's target where the code has a price (module docstring)."""
    rows, n = px.shape
    priced = np.isfinite(px) & (px > 0)
    last = pd.DataFrame(np.where(priced, px, np.nan)).ffill().to_numpy()  # the last price, carried across gaps
    positions = np.zeros((rows, n))
    cash, shares = np.full(n, 1.0 / max(n, 1)), np.zeros(n)
    equity, exposure, turnover = np.ones(max(rows - 1, 0)), np.zeros(max(rows - 1, 0)), np.zeros(max(rows - 1, 0))
    fees, held = 0.0, np.zeros(n)
    for t in range(rows):
        before, held = held, np.where(priced[t], target[t - 1] if t else 0.0, held)
        positions[t] = held
        if t == rows - 1:
            break
        mark = np.nan_to_num(last[t])  # 0 only for a code never priced yet, which holds no shares
        value = cash + shares * mark
        new_shares = np.where(held != before, held * value / np.where(priced[t], px[t], 1.0), shares)
        traded = np.abs(new_shares - shares) * mark
        cash = value - new_shares * mark - fee_rate * traded
        shares = new_shares
        fees += fee_rate * traded.sum()
        exposure[t] = np.abs(shares * mark).sum() / value.sum()
        turnover[t] = traded.sum() / value.sum()
        equity[t] = (cash + shares * np.nan_to_num(last[t + 1])).sum()
    moves = np.nan_to_num(last[1:] / last[:-1] - 1.0) if rows > 1 else np.zeros((0, n))
    return _Sleeves(positions, equity, exposure, turnover, moves, fees)


def _bought(price: pd.DataFrame) -> np.ndarray:
    """T - 1 x N: whether the buy-and-hold holds each code over each bar with a return (bought at a price so far)."""
    px = price.to_numpy(dtype=float)
    return ((np.isfinite(px) & (px > 0)).cumsum(axis=0) > 0)[:-1]


def _bench_exposure(price: pd.DataFrame, equity: pd.Series) -> float:
    """The buy-and-hold's mean fraction invested: everything but the sleeves still waiting in cash."""
    if equity.empty:
        return 0.0
    cash = (~_bought(price)).sum(axis=1) / price.shape[1]
    return float((1.0 - cash / equity.to_numpy()).mean())


def _outcomes(positions: pd.DataFrame, moves: np.ndarray) -> tuple[float | None, int]:
    """Holding periods (runs of one non-zero position in one code) before fees, a long winning when its price rose,
    a short when it fell: the share of closed ones that won (None when none closed), and the open ones winning."""
    held = positions.to_numpy()
    active = held != 0
    if not active.any():
        return None, 0
    changed = np.vstack([np.ones((1, held.shape[1]), dtype=bool), held[1:] != held[:-1]])
    run_id = np.cumsum(changed.T.ravel()).reshape(held.shape[1], -1).T  # runs numbered column by column
    growth = np.bincount(run_id[active], weights=np.log1p(moves[active]))
    side = np.bincount(run_id[active], weights=held[active])
    present = np.bincount(run_id[active]) > 0
    still_open = np.zeros(len(present), dtype=bool)
    still_open[run_id[-1][active[-1]]] = True  # runs holding on the last bar
    won, closed = side * growth > 0, present & ~still_open
    return (float(won[closed].sum() / closed.sum()) if closed.any() else None), int((won & still_open).sum())


def degeneracy_warnings(signal: pd.DataFrame, result: BacktestResult) -> dict[str, str]:
    """Plain-language warnings (in the language in effect), keyed by kind, when a strategy degenerates; empty when
    none applies.

    Kinds: no_bars, no_signal (each alone: nothing else can be judged), constant_signal, never_buys,
    never_sells, never_in_market, always_in_market, codes_without_signal, codes_never_traded.
    """
    m = result.metrics
    rows, cols = signal.shape
    if m.bars == 0:
        return {"no_bars": _("only {rows} date(s) and {cols} code(s): nothing to backtest (a return needs two "
                             "dates)").format(rows=rows, cols=cols)}
    values = signal.to_numpy(dtype=float)
    present = values[np.isfinite(values)]
    if present.size == 0:
        return {"no_signal": _("the signal has no values at all (every cell is NaN)")}
    out: dict[str, str] = {}
    distinct = np.unique(present)
    if len(distinct) == 1:
        out["constant_signal"] = _("the signal is constant: every value is {value:g} ({n} of {cells} cells, the "
                                   "rest NaN)").format(value=distinct[0], n=present.size, cells=values.size)
    if m.signal_days_buy == 0:
        out["never_buys"] = _("never buys: the signal has no 1 in {rows} dates x {cols} codes").format(rows=rows,
                                                                                                     cols=cols)
    if m.buys and not m.sells:
        out["never_sells"] = _("never sells: {buys} position(s) opened and none closed (the signal has {sells} sell "
                               "value(s)); every position is held to the end").format(buys=m.buys,
                                                                                      sells=m.signal_days_sell)
    held = result.positions.iloc[:-1] != 0
    if not held.any().any():
        out["never_in_market"] = _("never in the market: no position is held on any bar")
    elif m.bars > 1 and held.iloc[1:].all().all():
        like = (_("buy-and-hold entered one bar late") if (result.positions.iloc[1:-1] > 0).all().all()
                else _("long or short in every code throughout"))
        out["always_in_market"] = _("always fully invested: every code is held on every bar from {day} on "
                                    "({like})").format(day=_date(held.index[1]), like=like)
    silent = signal.columns[signal.isna().all()]
    if len(silent):
        out["codes_without_signal"] = _("{n} of {cols} code(s) have no signal value at all: {codes}").format(
            n=len(silent), cols=cols, codes=codes_text(silent, MAX_LISTED_CODES))
    idle = signal.columns[(executed_changes(result.positions) == 0).all()]
    if held.any().any() and len(idle):
        out["codes_never_traded"] = _("{n} of {cols} code(s) never trade: {codes}").format(
            n=len(idle), cols=cols, codes=codes_text(idle, MAX_LISTED_CODES))
    return out




def _date(value: object) -> str:
    return f"{value:%Y%m%d}" if isinstance(value, pd.Timestamp) else str(value)
