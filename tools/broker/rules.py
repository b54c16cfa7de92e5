"""Dated A-share order rules per board: buy lots, sell quantities and daily price limits. Pure functions."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal

from tools.broker.boards import Board, OrderRuleError, Side, board_name, board_of, check_open, exchange_of
from tools.broker.fees import FEN, round_fen
from tools.broker.notes import LOCKED_DOWN, LOCKED_UP
from tools.broker.orders import PriceType
from tools.i18n import _


@dataclass(frozen=True)
class LotRule:
    """A buy is at least `minimum` shares, growing in steps of `step`."""

    minimum: int
    step: int

    def round_down(self, quantity: int) -> int:
        """The largest buy not above `quantity` the rule allows; 0 when below its minimum."""
        if quantity < self.minimum:
            return 0
        return self.minimum + (quantity - self.minimum) // self.step * self.step


# each board's lot rule holds since the board opened (STAR 2019-07-22, BSE 2021-11-15)
_LOTS: dict[Board, LotRule] = {
    Board.MAIN: LotRule(100, 100),
    Board.CHINEXT: LotRule(100, 100),
    Board.STAR: LotRule(200, 1),
    Board.BSE: LotRule(100, 1),
}


def lot_rule(code: str, on: date) -> LotRule:
    """The buy lot rule for `code` on `on`; a date before its board opened is refused."""
    return _LOTS[check_open(code, on)]


# The most shares one order may ask for, per board and order type (continuous auction, buy or sell):
# - main board: SSE Trading Rules (2023 revision) 3.3.9 and SZSE Trading Rules 3.3.10, at most 1,000,000 shares an
#   order, limit and market alike (no separate market-order cap in either text);
# - STAR Market: SSE STAR Market special trading provisions, art. 20: limit 100,000, market 50,000;
# - ChiNext: SZSE ChiNext special trading provisions 2.8: limit 300,000, market 150,000;
# - BSE: at least 100 shares in steps of 1, at most 1,000,000 an order (a broker interface's documentation; no
#   separate market-order cap was found, so the same one: unverified against the BSE's own text).
# Checked 2026-11 against secondary sources quoting those articles (the exchanges' own pages were not reachable);
# the STAR and ChiNext market-order caps are half their limit-order caps, the main board's are not.
# After-hours fixed-price orders (1,000,000 on STAR and ChiNext) are not modelled.
_MAX_ORDER: dict[Board, dict[str, int]] = {
    Board.MAIN: {"limit": 1_000_000, "market": 1_000_000},
    Board.CHINEXT: {"limit": 300_000, "market": 150_000},
    Board.STAR: {"limit": 100_000, "market": 50_000},
    Board.BSE: {"limit": 1_000_000, "market": 1_000_000},
}
MAX_ORDER_QUANTITY = max(most for caps in _MAX_ORDER.values() for most in caps.values())  # on any board
MAX_PRICE = Decimal("99999.99")  # no A-share has traded near it; the day's price band refuses far less


def max_order_quantity(code: str, price_type: PriceType) -> int:
    """The most shares one `price_type` order for `code` may ask for."""
    return _MAX_ORDER[board_of(code)][price_type]


def order_size_problem(code: str, qty: int, price_type: PriceType) -> str | None:
    """Why `qty` shares is more than one order may ask for, or None."""
    most = max_order_quantity(code, price_type)
    if qty <= most:
        return None
    text = (_("one {board} limit order is for at most {most} shares, not {qty}") if price_type == "limit" else
            _("one {board} market order is for at most {most} shares, not {qty}"))
    return text.format(board=board_name(board_of(code)), most=f"{most:,}", qty=f"{qty:,}")


def _buy_rule_text(board: Board, rule: LotRule) -> str:
    if rule.step == rule.minimum:
        return _("{board} buys come in lots of {step} shares").format(board=board_name(board), step=rule.step)
    return _("{board} buys are at least {minimum} shares, in steps of {step}").format(
        board=board_name(board), minimum=rule.minimum, step=rule.step)


def buy_quantity_problem(code: str, qty: int, on: date) -> str | None:
    """Why a buy of `qty` shares breaks the lot rule, or None when it is fine."""
    rule = lot_rule(code, on)
    if qty < rule.minimum:
        return _("{rule}: {qty} is fewer than {minimum}").format(rule=_buy_rule_text(board_of(code), rule), qty=qty,
                                                                 minimum=rule.minimum)
    if (qty - rule.minimum) % rule.step:
        return _("{rule}: {qty} is not a multiple of {step}").format(rule=_buy_rule_text(board_of(code), rule),
                                                                     qty=qty, step=rule.step)
    return None


def sell_quantity_problem(code: str, qty: int, held: int, on: date) -> str | None:
    """Why selling `qty` of `held` shares breaks the rules, or None. Main board and ChiNext: whole lots, an odd lot
    sold whole in one order; STAR and BSE: at least the buy minimum, or everything held."""
    rule = lot_rule(code, on)
    board = board_of(code)
    if qty <= 0:
        return _("a sell must be for a positive number of shares, not {qty}").format(qty=qty)
    if qty > held:
        return _("cannot sell {qty} shares of {code}: only {held} are held").format(qty=qty, code=code, held=held)
    if rule.step == rule.minimum:
        odd = held % rule.step
        if qty % rule.step in (0, odd):
            return None
        if odd == 0:
            return _("{board} sells come in lots of {step} shares: {qty} is not a multiple of {step}").format(
                board=board_name(board), step=rule.step, qty=qty)
        return _("{board} sells come in lots of {step} shares, and the odd {odd} shares held are sold whole in one "
                 "order: {qty} is neither a multiple of {step} nor one plus {odd}").format(
            board=board_name(board), step=rule.step, odd=odd, qty=qty)
    if qty < rule.minimum and qty != held:
        return _("{board} sells are at least {minimum} shares, or everything held: {qty} is fewer than {minimum} "
                 "and {held} are held").format(board=board_name(board), minimum=rule.minimum, qty=qty, held=held)
    return None


@dataclass(frozen=True)
class PriceLimits:
    """One day's limit-up and limit-down prices (None: no limit that day), the ratio used, and a note on any
    approximation."""

    up: Decimal | None
    down: Decimal | None
    ratio: Decimal | None
    note: str | None


# (board, ST, in force from, daily limit as a fraction of the previous close); per board and ST flag the latest row
# on or before a date applies. Main board: ±10 % since 1996-12-16, ST/*ST ±5 % since 1998-04-22 and ±10 % from
# 2026-07-06 (SSE/SZSE rules of 2026-04-24).
_LIMIT_RATIOS: tuple[tuple[Board, bool, date, Decimal], ...] = (
    (Board.MAIN, False, date(1996, 12, 16), Decimal("0.10")),
    (Board.MAIN, True, date(1998, 4, 22), Decimal("0.05")),
    (Board.MAIN, True, date(2026, 7, 6), Decimal("0.10")),
    (Board.CHINEXT, False, date(2009, 10, 30), Decimal("0.10")),
    (Board.CHINEXT, False, date(2020, 8, 24), Decimal("0.20")),
    (Board.CHINEXT, True, date(2009, 10, 30), Decimal("0.05")),
    (Board.CHINEXT, True, date(2020, 8, 24), Decimal("0.20")),
    (Board.STAR, False, date(2019, 7, 22), Decimal("0.20")),
    (Board.STAR, True, date(2019, 7, 22), Decimal("0.20")),
    (Board.BSE, False, date(2021, 11, 15), Decimal("0.30")),
    (Board.BSE, True, date(2021, 11, 15), Decimal("0.30")),
)

# board -> (listed on or after, days): such listings have no price limit for their first `days` trading days
_NO_LIMIT_AFTER_LISTING: dict[Board, tuple[date, int]] = {
    Board.MAIN: (date(2023, 4, 10), 5),
    Board.CHINEXT: (date(2020, 8, 24), 5),
    Board.STAR: (date(2019, 7, 22), 5),
    Board.BSE: (date(2021, 11, 15), 1),
}

SH_TICK_RULE_FROM = date(2023, 4, 10)  # Shanghai: a limit that rounds to the previous close moves one fen out


def limit_ratio(code: str, on: date, is_st: bool) -> Decimal:
    """The daily price-limit ratio for `code` on `on` (0.10 = ±10 %) from the dated table."""
    board = check_open(code, on)
    rows = [(start, ratio) for row_board, st, start, ratio in _LIMIT_RATIOS if row_board is board and st == is_st]
    known = [ratio for start, ratio in rows if start <= on]
    if not known:
        kind = "ST " if is_st else ""
        raise OrderRuleError(f"no price-limit rule known for {kind}{board} stocks before {rows[0][0]}")
    return known[-1]


def _latest_listing_date(on: date, listing_day: int) -> date:
    """`listing_day - 1` weekdays before `on`: the latest possible listing date (holidays only make it earlier)."""
    day = on
    for _step in range(listing_day - 1):
        day -= timedelta(days=1)
        while day.weekday() >= 5:
            day -= timedelta(days=1)
    return day


def price_limits(code: str, on: date, prev_close: Decimal, is_st: bool | None, listing_day: int | None) -> PriceLimits:
    """Limit-up and limit-down for `code` on `on`. `prev_close` should be the exchange's reference price (on
    ex-dividend days not the raw close); `listing_day` is the 1-based trading day since listing (None: long listed)."""
    if prev_close <= 0:
        raise ValueError(f"the previous close must be positive, not {prev_close}")
    notes = [_("ST status unknown; limits assume not ST")] if is_st is None else []
    if listing_day is not None:
        if listing_day < 1:
            raise ValueError(f"listing_day counts from 1, not {listing_day}")
        listed_from, days = _NO_LIMIT_AFTER_LISTING[board_of(code)]
        if listing_day <= days and _latest_listing_date(on, listing_day) >= listed_from:
            note = _("no price limit on trading day {n} since listing").format(n=listing_day)
            return PriceLimits(None, None, None, "; ".join([note, *notes]))
        if listing_day == 1:
            notes.append(_("the listing-day price cap of listings before {day} is not modelled; ordinary limits "
                           "shown").format(day=listed_from))
    ratio = limit_ratio(code, on, bool(is_st))
    up = round_fen(prev_close * (1 + ratio))
    down = round_fen(prev_close * (1 - ratio))
    if exchange_of(code) != "SH" or on >= SH_TICK_RULE_FROM:
        up = up + FEN if up == prev_close else up
        down = down - FEN if down == prev_close else down
    return PriceLimits(up, max(down, FEN), ratio, "; ".join(notes) or None)


def fill_blocked_by_limit(side: Side, low: Decimal, high: Decimal, limits: PriceLimits) -> str | None:
    """Why a bar locked at a limit cannot fill the order, or None: a buy needs a trade below limit-up, a sell a
    trade above limit-down."""
    if side == "buy":
        if limits.up is not None and low >= limits.up:
            return LOCKED_UP.format(limit=limits.up, low=low)
        return None
    if side == "sell":
        if limits.down is not None and high <= limits.down:
            return LOCKED_DOWN.format(limit=limits.down, high=high)
        return None
    raise ValueError(f"side must be 'buy' or 'sell', not {side!r}")
