"""A long-only backtest of a structured rule (tools.rules) on one A-share code, with the paper account's
cost model, beside the buy-and-hold of the same code.

Conventions:
- history (`rule_history`, the one definition a run of the rule uses too, so the backtest's decision on a day is
  the run's decision as of that day): every traded bar of the code from its first, so recursive indicators (EMA,
  RSI, MACD, ATR, KDJ) are seeded at the same bar however late START is; rows with no volume (suspended days some
  providers keep) are dropped, as the paper account never fills on them; volume in shares (tushare's lots × 100,
  as klines). When the code's data begins less than `rule.warmup` bars before START, the early decisions report
  "warming up";
- decisions use bars up to t; the decisions of START..END are traded, each at the NEXT bar's open (never the same
  bar, so T+1 holds by construction). Flat, a "buy" buys; long, a "sell" sells the whole position; every other
  decision changes nothing. A decision on END has no next bar and is only noted;
- prices are the bars' prices rounded to the fen (the paper account's `price_of`); a fill's value is price ×
  quantity to the fen, its fees `fill_fees` on the fill date (commission with its minimum, stamp duty on sells and
  transfer fee by date), cash is exact Decimal;
- buy size: the largest quantity the cash pays for, fees included, under the board's lot rule; with `size`
  (shares) or `value` (CNY of the order, before fees) at most that, rounded down to the lot rule. A buy no lot fits
  is skipped with a note;
- price limits as the paper account applies them: a buy does not fill on a bar locked at limit-up, a sell not on a
  bar locked at limit-down (previous close: the bar's pre_close when the provider has it, else the previous bar's
  close; ST from the provider's securities). The order lapses with a note; the next bar's decision may retry;
- equity is marked on every close from START: cash + shares × close. Nothing is sold at the end. Returns are on
  the whole account (the starting cash), whatever share of it a position uses; the figures (total and annualised
  return, Sharpe, maximum drawdown, exposure, trades, fees) are tools.research.performance's, as the signal backtest's:
  each close is a bar, the starting cash the value before the first;
- a START before the code's data (or an END after it) runs over the dates there are, and says so in a note.

Benchmark: the same code bought at START's open (the first bar the buy can fill) with the same sizing and cost
model, held to END and marked at the close: the buy-and-hold of tools.research.backtest, with lots and fees.

Not modelled: dividends and bonus shares (forward-adjusted data folds them into prices), the paper account's risk
limits (order value, position weight, daily loss) and fills inside the bar.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Literal

import pandas as pd

from tools.broker.boards import Side
from tools.broker.clock import day
from tools.broker.fees import DEFAULT_RATES, FEN, FeeRates, Fees, fill_fees
from tools.broker.market import Bar
from tools.broker.money import price_of
from tools.broker.notes import note_text
from tools.broker.rules import fill_blocked_by_limit, lot_rule, price_limits
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, normalize_date
from tools.i18n import N_, _
from tools.research.date_span import span_note
from tools.research.performance import Figures, figures
from tools.rules.evaluator import evaluate
from tools.rules.parser import parse_rule
from tools.rules.syntax import Rule

DEFAULT_CASH = Decimal("1000000")  # the paper account's default starting cash (QUANTDESK_PAPER_CASH)
BAR_FIELDS = ("open", "high", "low", "close", "pre_close", "vol")
EARLIEST = "19900101"  # no A-share data before this day
SHARES_PER_LOT = 100  # tushare's `vol` counts lots

_Outcome = Literal["filled", "locked", "no lot"]  # "locked": the bar was locked at a price limit


@dataclass(frozen=True)
class Trade:
    trade_date: str  # YYYYMMDD of the fill
    side: Side
    quantity: int
    price: Decimal
    value: Decimal  # price × quantity, to the fen
    fees: Fees
    decided_on: str | None  # the bar whose decision it executes; None for the benchmark's buy


@dataclass(frozen=True)
class Mark:
    """The account on one close."""

    trade_date: str
    cash: Decimal
    quantity: int
    close: Decimal

    @property
    def equity(self) -> Decimal:
        return self.cash + self.quantity * self.close


@dataclass(frozen=True)
class Performance:
    """One run (the rule's or the benchmark's): its fills, its daily marks and what did not fill."""

    starting_cash: Decimal
    trades: tuple[Trade, ...]
    marks: tuple[Mark, ...]
    notes: tuple[str, ...]

    @property
    def final_equity(self) -> Decimal:
        return self.marks[-1].equity if self.marks else self.starting_cash

    @property
    def total_return(self) -> Decimal:
        return self.final_equity / self.starting_cash - 1

    @property
    def max_drawdown(self) -> Decimal:
        """The deepest fall below the running peak (0 or negative), the starting cash being the first peak."""
        peak, deepest = self.starting_cash, Decimal(0)
        for mark in self.marks:
            peak = max(peak, mark.equity)
            deepest = min(deepest, mark.equity / peak - 1)
        return deepest

    @property
    def fees_paid(self) -> Decimal:
        return sum((t.fees.total for t in self.trades), Decimal("0.00"))

    @property
    def trade_count(self) -> int:
        return len(self.trades)

    @property
    def equity(self) -> pd.Series:
        """The daily equity in CNY (floats, for charts; the marks are exact)."""
        index = pd.DatetimeIndex(pd.to_datetime([m.trade_date for m in self.marks], format="%Y%m%d"),
                                 name="trade_date")
        return pd.Series([float(m.equity) for m in self.marks], index=index, dtype="float64")

    @property
    def figures(self) -> Figures:
        """The run in the vocabulary both backtests share: on the starting cash, each close a bar."""
        exposure = [float(m.quantity * m.close / m.equity) if m.equity > 0 else 0.0 for m in self.marks]
        return figures(self.equity / float(self.starting_cash), sum(exposure) / len(exposure) if exposure else 0.0,
                       self.trade_count, float(self.fees_paid / self.starting_cash))


@dataclass(frozen=True)
class RuleBacktest:
    rule: Rule
    code: str
    start: str
    end: str
    warmup: int  # bars the rule needs before its first decision
    warmup_bars: int  # bars before START read (the code's whole history before it)
    decisions: pd.DataFrame  # tools.rules.evaluate over START..END
    strategy: Performance
    benchmark: Performance
    span: str | None = None  # the dates that ran, when they are not the ones asked for


@dataclass
class _Book:
    """A one-code cash account that fills at bar opens under the lot, limit and fee rules."""

    code: str
    cash: Decimal
    size: int | None
    value: Decimal | None
    rates: FeeRates
    is_st: Callable[[str], bool | None]
    quantity: int = 0
    trades: list[Trade] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def fill(self, side: Side, bar: Bar, prev_close: Decimal | None, decided_on: str | None) -> _Outcome:
        """Buy (sized by the cash and the size rule) or sell everything at the bar's open, or note why not."""
        on = day(bar.trade_date)
        what = (({"buy": _("the buy decided on {day}"), "sell": _("the sell decided on {day}")}[side]).format(
                    day=decided_on) if decided_on else
                {"buy": _("the opening buy"), "sell": _("the opening sell")}[side])
        if prev_close is not None:
            limits = price_limits(self.code, on, prev_close, self.is_st(bar.trade_date), None)
            blocked = fill_blocked_by_limit(side, bar.low, bar.high, limits)
            if blocked:
                self.notes.append(_("{day}: {what} did not fill: {why}").format(day=bar.trade_date, what=what,
                                                                                 why=note_text(blocked)))
                return "locked"
        price = bar.open
        quantity = self.quantity if side == "sell" else self._buy_quantity(price, on)
        if quantity == 0:
            why = (_("no whole lot at {price} fits the cash ({cash} CNY)") if self.size is None and self.value is None
                   else _("no whole lot at {price} within the order size fits the cash ({cash} CNY)")).format(
                price=price, cash=self.cash)
            self.notes.append(_("{day}: {what} did not fill: {why}").format(day=bar.trade_date, what=what, why=why))
            return "no lot"
        value = (price * quantity).quantize(FEN)
        fees = fill_fees(self.code, side, value, on, self.rates)
        if side == "buy":
            self.cash -= value + fees.total
            self.quantity += quantity
        else:
            self.cash += value - fees.total
            self.quantity = 0
        self.trades.append(Trade(bar.trade_date, side, quantity, price, value, fees, decided_on))
        return "filled"

    def _buy_quantity(self, price: Decimal, on: date) -> int:
        if price <= 0:
            return 0
        rule = lot_rule(self.code, on)
        wanted = int(self.cash // price)
        if self.size is not None:
            wanted = min(wanted, self.size)
        elif self.value is not None:
            wanted = min(wanted, int(self.value // price))
        quantity = rule.round_down(wanted)
        while quantity and self._cost(quantity, price, on) > self.cash:
            quantity = rule.round_down(quantity - 1)
        return quantity

    def _cost(self, quantity: int, price: Decimal, on: date) -> Decimal:
        value = (price * quantity).quantize(FEN)
        return value + fill_fees(self.code, "buy", value, on, self.rates).total

    def mark(self, bar: Bar) -> None:
        self.marks.append(Mark(bar.trade_date, self.cash, self.quantity, bar.close))

    def performance(self, starting_cash: Decimal) -> Performance:
        return Performance(starting_cash, tuple(self.trades), tuple(self.marks), tuple(self.notes))


def rule_history(provider: MarketDataProvider, code: str, end: str) -> pd.DataFrame:
    """The history a rule decides on as of `end`, in a backtest and in a run alike: every traded bar of the code
    up to `end` (rows with no volume dropped), oldest first, in the provider's daily schema (trade_date, prices,
    pre_close where the provider has it, vol in lots)."""
    fields = [f for f in BAR_FIELDS if f in provider.available_fields("daily")]
    frame = provider.daily(code, EARLIEST, end, fields, warnings=[])
    if "vol" in frame.columns:
        frame = frame[~(frame["vol"] == 0)]
    return frame.reset_index(drop=True)


def rule_bars(history: pd.DataFrame) -> pd.DataFrame:
    """`rule_history` as the rule language reads it: indexed by trade date, prices and volume in shares."""
    index = pd.DatetimeIndex(pd.to_datetime(history["trade_date"], format="%Y%m%d"), name="trade_date")
    bars = pd.DataFrame({name: history[name].to_numpy(dtype="float64") for name in ("open", "high", "low", "close")},
                        index=index)
    if "vol" in history.columns:
        bars["volume"] = history["vol"].to_numpy(dtype="float64") * SHARES_PER_LOT
    return bars


def _bars(frame: pd.DataFrame) -> list[Bar]:
    pre = frame["pre_close"] if "pre_close" in frame.columns else pd.Series(float("nan"), index=frame.index)
    return [Bar(str(d), price_of(o), price_of(h), price_of(lo), price_of(c), None if pd.isna(p) else price_of(p),
                False)
            for d, o, h, lo, c, p in zip(frame["trade_date"], frame["open"], frame["high"], frame["low"],
                                         frame["close"], pre, strict=True)]


def backtest_rule(rule: Rule | str, code: str, start: str | date, end: str | date, provider: MarketDataProvider, *,
                  cash: Decimal = DEFAULT_CASH, size: int | None = None, value: Decimal | None = None,
                  rates: FeeRates = DEFAULT_RATES) -> RuleBacktest:
    """Backtest `rule` on `code` over START..END (module docstring), with its buy-and-hold benchmark."""
    rule = parse_rule(rule) if isinstance(rule, str) else rule
    start_s, end_s = normalize_date(start, N_("start date")), normalize_date(end, N_("end date"))
    if cash <= 0:
        raise ValueError(_("the starting cash must be positive, not {cash}").format(cash=cash))
    if size is not None and value is not None:
        raise ValueError(_("give the order size in shares or in CNY, not both"))
    if (size is not None and size <= 0) or (value is not None and value <= 0):
        raise ValueError(_("the order size must be positive"))
    try:
        frame = rule_history(provider, code, end_s)
    except DataError:  # its range starts at EARLIEST: the provider says it again for the range asked for
        provider.daily(code, start_s, end_s, ["close"], warnings=[])
        raise
    bars = _bars(frame)
    decisions = evaluate(rule, rule_bars(frame))
    first = next((i for i, bar in enumerate(bars) if bar.trade_date >= start_s), None)
    if first is None:
        raise DataError(_("no traded bars of {code} between {start} and {end}").format(code=code, start=start_s,
                                                                                        end=end_s))
    security = provider.securities([code])[code]
    books = [_Book(code, cash, size, value, rates, security.is_st) for _ in range(2)]
    strategy, benchmark = books
    actions = decisions["action"].tolist()
    opening = True  # the benchmark's buy is pending (again after a bar locked at limit-up)
    for i in range(first, len(bars)):
        bar = bars[i]
        prev_close = bar.pre_close if bar.pre_close is not None else bars[i - 1].close if i else None
        if i > first and (actions[i - 1], strategy.quantity > 0) in (("buy", False), ("sell", True)):
            strategy.fill(actions[i - 1], bar, prev_close, bars[i - 1].trade_date)
        if opening:
            opening = benchmark.fill("buy", bar, prev_close, None) == "locked"
        for book in books:
            book.mark(bar)
    if (actions[-1], strategy.quantity > 0) in (("buy", False), ("sell", True)):
        last = _("the buy decided on the last bar has no next bar to fill on") if actions[-1] == "buy" else \
            _("the sell decided on the last bar has no next bar to fill on")
        strategy.notes.append(f"{bars[-1].trade_date}: {last}")
    return RuleBacktest(rule, code, start_s, end_s, rule.warmup, first, decisions.iloc[first:],
                        strategy.performance(cash), benchmark.performance(cash),
                        span_note(start_s, end_s, bars[first].trade_date, bars[-1].trade_date))
