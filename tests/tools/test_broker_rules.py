"""A-share board, lot and price-limit rules (tools/broker/boards.py, rules.py) against hand calculations, with a
date on each side of every dated rule."""

from __future__ import annotations

from datetime import date
from decimal import Decimal as D

import pytest

from tools.broker.boards import Board, OrderRuleError, Side, board_of, exchange_of
from tools.broker.rules import (
    LotRule,
    PriceLimits,
    buy_quantity_problem,
    fill_blocked_by_limit,
    limit_ratio,
    lot_rule,
    price_limits,
    sell_quantity_problem,
)

DAY = date(2024, 1, 8)  # an ordinary Monday, after every dated rule but the 2026 ST change


# boards


@pytest.mark.parametrize(("code", "board", "exchange"), [
    ("600519.SH", Board.MAIN, "SH"),
    ("601318.SH", Board.MAIN, "SH"),
    ("603288.SH", Board.MAIN, "SH"),
    ("605499.SH", Board.MAIN, "SH"),
    ("000001.SZ", Board.MAIN, "SZ"),
    ("001979.SZ", Board.MAIN, "SZ"),
    ("002415.SZ", Board.MAIN, "SZ"),
    ("003816.SZ", Board.MAIN, "SZ"),
    ("300750.SZ", Board.CHINEXT, "SZ"),
    ("301269.SZ", Board.CHINEXT, "SZ"),
    ("688981.SH", Board.STAR, "SH"),
    ("689009.SH", Board.STAR, "SH"),
    ("430047.BJ", Board.BSE, "BJ"),
    ("830799.BJ", Board.BSE, "BJ"),
    ("873223.BJ", Board.BSE, "BJ"),
    ("920001.BJ", Board.BSE, "BJ"),
    ("600519.sh", Board.MAIN, "SH"),
])
def test_board_and_exchange_of_real_codes(code: str, board: Board, exchange: str) -> None:
    assert board_of(code) == board
    assert exchange_of(code) == exchange


@pytest.mark.parametrize("code", ["900901.SH", "200002.SZ", "510300.SH", "159915.SZ", "000300.SH", "600519",
                                  "600519.SZ", "300750.SH", "60051.SH", "abcdef.SH", "600519.HK"])
def test_non_a_share_codes_are_refused(code: str) -> None:
    with pytest.raises(OrderRuleError, match=f"{code} is not supported: only A-share stocks"):
        board_of(code)
    with pytest.raises(OrderRuleError):
        exchange_of(code)


def test_board_names() -> None:
    assert [str(b) for b in Board] == ["main board", "ChiNext", "STAR Market", "Beijing Stock Exchange"]


# lots


@pytest.mark.parametrize(("code", "on", "rule"), [
    ("600519.SH", DAY, LotRule(100, 100)),
    ("002415.SZ", DAY, LotRule(100, 100)),
    ("300750.SZ", DAY, LotRule(100, 100)),
    ("688981.SH", date(2019, 7, 22), LotRule(200, 1)),
    ("830799.BJ", date(2021, 11, 15), LotRule(100, 1)),
])
def test_lot_rules(code: str, on: date, rule: LotRule) -> None:
    assert lot_rule(code, on) == rule


@pytest.mark.parametrize(("code", "on", "message"), [
    ("688981.SH", date(2019, 7, 19), "no trading in 688981.SH on 2019-07-19: the STAR Market opened on 2019-07-22"),
    ("830799.BJ", date(2021, 11, 12),
     "no trading in 830799.BJ on 2021-11-12: the Beijing Stock Exchange opened on 2021-11-15"),
    ("300001.SZ", date(2009, 10, 29), "no trading in 300001.SZ on 2009-10-29: ChiNext opened on 2009-10-30"),
])
def test_lots_before_the_board_opened_are_refused(code: str, on: date, message: str) -> None:
    with pytest.raises(OrderRuleError) as caught:
        lot_rule(code, on)
    assert str(caught.value) == message
    with pytest.raises(OrderRuleError):
        buy_quantity_problem(code, 1000, on)


@pytest.mark.parametrize(("code", "qty", "problem"), [
    ("600519.SH", 100, None),
    ("600519.SH", 1200, None),
    ("600519.SH", 150, "main board buys come in lots of 100 shares: 150 is not a multiple of 100"),
    ("600519.SH", 50, "main board buys come in lots of 100 shares: 50 is fewer than 100"),
    ("600519.SH", 0, "main board buys come in lots of 100 shares: 0 is fewer than 100"),
    ("300750.SZ", 200, None),
    ("300750.SZ", 250, "ChiNext buys come in lots of 100 shares: 250 is not a multiple of 100"),
    ("688981.SH", 200, None),
    ("688981.SH", 201, None),
    ("688981.SH", 199, "STAR Market buys are at least 200 shares, in steps of 1: 199 is fewer than 200"),
    ("688981.SH", 100, "STAR Market buys are at least 200 shares, in steps of 1: 100 is fewer than 200"),
    ("830799.BJ", 100, None),
    ("830799.BJ", 101, None),
    ("830799.BJ", 99, "Beijing Stock Exchange buys are at least 100 shares, in steps of 1: 99 is fewer than 100"),
])
def test_buy_quantities(code: str, qty: int, problem: str | None) -> None:
    assert buy_quantity_problem(code, qty, DAY) == problem


@pytest.mark.parametrize(("code", "qty", "held", "problem"), [
    ("600519.SH", 100, 250, None),
    ("600519.SH", 250, 250, None),
    ("600519.SH", 150, 250, None),  # a lot plus the whole odd 50
    ("600519.SH", 50, 250, None),  # the odd 50 alone, whole
    ("600519.SH", 30, 250, "main board sells come in lots of 100 shares, and the odd 50 shares held are sold whole in "
                           "one order: 30 is neither a multiple of 100 nor one plus 50"),
    ("600519.SH", 120, 250, "main board sells come in lots of 100 shares, and the odd 50 shares held are sold whole "
                            "in one order: 120 is neither a multiple of 100 nor one plus 50"),
    ("600519.SH", 150, 300, "main board sells come in lots of 100 shares: 150 is not a multiple of 100"),
    ("300750.SZ", 37, 37, None),
    ("300750.SZ", 300, 250, "cannot sell 300 shares of 300750.SZ: only 250 are held"),
    ("300750.SZ", 0, 250, "a sell must be for a positive number of shares, not 0"),
    ("688981.SH", 200, 250, None),
    ("688981.SH", 201, 250, None),
    ("688981.SH", 250, 250, None),
    ("688981.SH", 150, 150, None),  # a remainder under 200 is sold whole
    ("688981.SH", 100, 250, "STAR Market sells are at least 200 shares, or everything held: 100 is fewer than 200 "
                            "and 250 are held"),
    ("688981.SH", 100, 150, "STAR Market sells are at least 200 shares, or everything held: 100 is fewer than 200 "
                            "and 150 are held"),
    ("830799.BJ", 100, 150, None),
    ("830799.BJ", 101, 150, None),
    ("830799.BJ", 60, 60, None),
    ("830799.BJ", 50, 150, "Beijing Stock Exchange sells are at least 100 shares, or everything held: 50 is fewer "
                           "than 100 and 150 are held"),
    ("830799.BJ", 30, 60, "Beijing Stock Exchange sells are at least 100 shares, or everything held: 30 is fewer "
                          "than 100 and 60 are held"),
])
def test_sell_quantities(code: str, qty: int, held: int, problem: str | None) -> None:
    assert sell_quantity_problem(code, qty, held, DAY) == problem


# limit ratios, each on both sides of its date


@pytest.mark.parametrize(("code", "on", "is_st", "ratio"), [
    ("600519.SH", date(1996, 12, 16), False, D("0.10")),
    ("600519.SH", date(2026, 7, 6), False, D("0.10")),
    ("600519.SH", date(1998, 4, 22), True, D("0.05")),
    ("600519.SH", date(2026, 7, 3), True, D("0.05")),
    ("600519.SH", date(2026, 7, 6), True, D("0.10")),
    ("000001.SZ", date(2026, 7, 3), True, D("0.05")),
    ("000001.SZ", date(2026, 7, 6), True, D("0.10")),
    ("300750.SZ", date(2020, 8, 21), False, D("0.10")),
    ("300750.SZ", date(2020, 8, 24), False, D("0.20")),
    ("300750.SZ", date(2020, 8, 21), True, D("0.05")),
    ("300750.SZ", date(2020, 8, 24), True, D("0.20")),
    ("688981.SH", date(2019, 7, 22), False, D("0.20")),
    ("688981.SH", date(2019, 7, 22), True, D("0.20")),
    ("688981.SH", date(2026, 7, 6), True, D("0.20")),
    ("830799.BJ", date(2021, 11, 15), False, D("0.30")),
    ("830799.BJ", date(2021, 11, 15), True, D("0.30")),
    ("830799.BJ", date(2026, 7, 6), True, D("0.30")),
])
def test_limit_ratios(code: str, on: date, is_st: bool, ratio: D) -> None:
    assert limit_ratio(code, on, is_st) == ratio


@pytest.mark.parametrize(("code", "on", "is_st", "message"), [
    ("600519.SH", date(1996, 12, 13), False, "no price-limit rule known for main board stocks before 1996-12-16"),
    ("600519.SH", date(1998, 4, 21), True, "no price-limit rule known for ST main board stocks before 1998-04-22"),
    ("688981.SH", date(2019, 7, 19), True, "no trading in 688981.SH on 2019-07-19: the STAR Market opened on "
                                           "2019-07-22"),
    ("830799.BJ", date(2021, 11, 12), False, "no trading in 830799.BJ on 2021-11-12: the Beijing Stock Exchange "
                                             "opened on 2021-11-15"),
])
def test_limit_ratio_before_a_rule_is_refused(code: str, on: date, is_st: bool, message: str) -> None:
    with pytest.raises(OrderRuleError) as caught:
        limit_ratio(code, on, is_st)
    assert str(caught.value) == message


# limit prices: prev_close x (1 +- ratio), half-up to the fen


@pytest.mark.parametrize(("code", "on", "prev", "is_st", "up", "down"), [
    # 14.595 x 1.1 = 16.0545 -> 16.05; x 0.9 = 13.1355 -> 13.14 (truncation: 13.13)
    ("600519.SH", DAY, D("14.595"), False, D("16.05"), D("13.14")),
    # 10.05 x 1.1 = 11.055 -> 11.06 (truncation: 11.05); x 0.9 = 9.045 -> 9.05 (truncation: 9.04)
    ("600519.SH", DAY, D("10.05"), False, D("11.06"), D("9.05")),
    # BSE 12.35 x 1.3 = 16.055 -> 16.06 (float round: 16.05); x 0.7 = 8.645 -> 8.65
    ("830799.BJ", DAY, D("12.35"), False, D("16.06"), D("8.65")),
    # main ST 10.10 x 1.05 = 10.605 -> 10.61; x 0.95 = 9.595 -> 9.60; from 2026-07-06 at 10 %: 11.11 / 9.09
    ("600519.SH", date(2026, 7, 3), D("10.10"), True, D("10.61"), D("9.60")),
    ("600519.SH", date(2026, 7, 6), D("10.10"), True, D("11.11"), D("9.09")),
    ("000001.SZ", date(2026, 7, 3), D("10.10"), True, D("10.61"), D("9.60")),
    ("000001.SZ", date(2026, 7, 6), D("10.10"), True, D("11.11"), D("9.09")),
    # ChiNext 10.05: at 10 % 11.055 -> 11.06, 9.045 -> 9.05; at 20 % 12.06 / 8.04
    ("300750.SZ", date(2020, 8, 21), D("10.05"), False, D("11.06"), D("9.05")),
    ("300750.SZ", date(2020, 8, 24), D("10.05"), False, D("12.06"), D("8.04")),
    # ChiNext ST 10.10: at 5 % 10.605 -> 10.61, 9.595 -> 9.60; at 20 % 12.12 / 8.08
    ("300750.SZ", date(2020, 8, 21), D("10.10"), True, D("10.61"), D("9.60")),
    ("300750.SZ", date(2020, 8, 24), D("10.10"), True, D("12.12"), D("8.08")),
    # ChiNext 10.04 x 1.2 = 12.048 -> 12.05; x 0.8 = 8.032 -> 8.03
    ("300750.SZ", DAY, D("10.04"), False, D("12.05"), D("8.03")),
    # STAR 48.87 x 1.2 = 58.644 -> 58.64; x 0.8 = 39.096 -> 39.10 (ST the same)
    ("688981.SH", DAY, D("48.87"), False, D("58.64"), D("39.10")),
    ("688981.SH", DAY, D("48.87"), True, D("58.64"), D("39.10")),
    # BSE ST 10.00 x 1.3 / 0.7 = 13.00 / 7.00
    ("830799.BJ", DAY, D("10.00"), True, D("13.00"), D("7.00")),
])
def test_limit_prices_round_half_up(code: str, on: date, prev: D, is_st: bool, up: D, down: D) -> None:
    limits = price_limits(code, on, prev, is_st, None)
    assert (limits.up, limits.down, limits.note) == (up, down, None)


@pytest.mark.parametrize(("code", "on", "prev", "is_st", "up", "down"), [
    # 0.04 x 1.1 = 0.044 -> 0.04 and x 0.9 = 0.036 -> 0.04, both the previous close: one fen out
    ("000001.SZ", DAY, D("0.04"), False, D("0.05"), D("0.03")),
    ("000001.SZ", date(2015, 1, 5), D("0.04"), False, D("0.05"), D("0.03")),
    ("600519.SH", date(2023, 4, 7), D("0.04"), False, D("0.04"), D("0.04")),  # Shanghai before 2023-04-10: as is
    ("600519.SH", date(2023, 4, 10), D("0.04"), False, D("0.05"), D("0.03")),
    # SZ ST 0.09 x 1.05 = 0.0945 -> 0.09, x 0.95 = 0.0855 -> 0.09
    ("000001.SZ", DAY, D("0.09"), True, D("0.10"), D("0.08")),
    # 0.01: up 0.011 -> 0.01 -> 0.02; down 0.009 -> 0.01 -> 0.00, never below 0.01
    ("000001.SZ", DAY, D("0.01"), False, D("0.02"), D("0.01")),
    # BSE 0.01: 0.013 -> 0.01 -> 0.02; 0.007 -> 0.01 -> 0.00 -> 0.01
    ("830799.BJ", DAY, D("0.01"), False, D("0.02"), D("0.01")),
    # BSE 0.03: 0.039 -> 0.04, 0.021 -> 0.02: neither equals the previous close
    ("830799.BJ", DAY, D("0.03"), False, D("0.04"), D("0.02")),
])
def test_limit_that_rounds_to_the_previous_close_moves_a_fen(code: str, on: date, prev: D, is_st: bool, up: D,
                                                              down: D) -> None:
    limits = price_limits(code, on, prev, is_st, None)
    assert (limits.up, limits.down) == (up, down)


def test_unknown_st_status_assumes_not_st_and_says_so() -> None:
    assert price_limits("600519.SH", DAY, D("10.00"), None, None) == PriceLimits(
        D("11.00"), D("9.00"), D("0.10"), "ST status unknown; limits assume not ST")


def test_bad_inputs_are_refused() -> None:
    with pytest.raises(ValueError, match="previous close must be positive"):
        price_limits("600519.SH", DAY, D("0"), False, None)
    with pytest.raises(ValueError, match="listing_day counts from 1"):
        price_limits("600519.SH", DAY, D("10.00"), False, 0)
    with pytest.raises(OrderRuleError, match="only A-share stocks"):
        price_limits("900901.SH", DAY, D("1.00"), False, None)


# no limit in the first days after listing


@pytest.mark.parametrize(("code", "on", "listing_day"), [
    ("688981.SH", DAY, 1),
    ("688981.SH", DAY, 5),
    ("688981.SH", date(2019, 7, 22), 1),
    ("300750.SZ", date(2020, 8, 24), 1),
    ("300750.SZ", date(2020, 8, 28), 5),  # listed Monday 2020-08-24
    ("600519.SH", date(2023, 4, 10), 1),
    ("000001.SZ", date(2023, 4, 14), 5),  # listed Monday 2023-04-10
    ("830799.BJ", date(2021, 11, 15), 1),
])
def test_no_limit_after_listing(code: str, on: date, listing_day: int) -> None:
    assert price_limits(code, on, D("10.00"), False, listing_day) == PriceLimits(
        None, None, None, f"no price limit on trading day {listing_day} since listing")


def test_no_limit_note_keeps_the_unknown_st_note() -> None:
    assert price_limits("688981.SH", DAY, D("10.00"), None, 2).note == (
        "no price limit on trading day 2 since listing; ST status unknown; limits assume not ST")


@pytest.mark.parametrize(("code", "on", "listing_day", "up", "down"), [
    ("688981.SH", DAY, 6, D("12.00"), D("8.00")),  # STAR day 6: 20 %
    ("300750.SZ", date(2020, 8, 31), 6, D("12.00"), D("8.00")),  # ChiNext day 6 of a 2020-08-24 listing
    ("300750.SZ", date(2020, 8, 24), 2, D("12.00"), D("8.00")),  # listed Friday 2020-08-21: old listing, new ratio
    ("600519.SH", date(2023, 4, 11), 3, D("11.00"), D("9.00")),  # listed Friday 2023-04-07
    ("600519.SH", date(2023, 4, 17), 6, D("11.00"), D("9.00")),  # day 6 of a 2023-04-10 listing
    ("830799.BJ", date(2021, 11, 16), 2, D("13.00"), D("7.00")),  # BSE day 2: 30 %
])
def test_limits_apply_after_the_window(code: str, on: date, listing_day: int, up: D, down: D) -> None:
    limits = price_limits(code, on, D("10.00"), False, listing_day)
    assert (limits.up, limits.down, limits.note) == (up, down, None)


@pytest.mark.parametrize(("code", "on", "up", "down", "since"), [
    ("300750.SZ", date(2020, 8, 21), D("11.00"), D("9.00"), "2020-08-24"),
    ("600519.SH", date(2023, 4, 7), D("11.00"), D("9.00"), "2023-04-10"),
])
def test_old_listing_day_cap_is_not_modelled(code: str, on: date, up: D, down: D, since: str) -> None:
    assert price_limits(code, on, D("10.00"), False, 1) == PriceLimits(
        up, down, D("0.10"),
        f"the listing-day price cap of listings before {since} is not modelled; ordinary limits shown")


# fills at a locked limit

LIMITS = PriceLimits(D("11.00"), D("9.00"), D("0.10"), None)


@pytest.mark.parametrize(("side", "low", "high", "reason"), [
    ("buy", D("11.00"), D("11.00"),
     "locked at limit-up 11.00 (low 11.00): no sellers below the limit, the buy cannot fill"),
    ("buy", D("10.99"), D("11.00"), None),
    ("buy", D("9.00"), D("9.00"), None),
    ("sell", D("9.00"), D("9.00"),
     "locked at limit-down 9.00 (high 9.00): no buyers above the limit, the sell cannot fill"),
    ("sell", D("9.00"), D("9.01"), None),
    ("sell", D("11.00"), D("11.00"), None),
])
def test_fill_blocked_by_limit(side: Side, low: D, high: D, reason: str | None) -> None:
    assert fill_blocked_by_limit(side, low, high, LIMITS) == reason


def test_no_limit_never_blocks_and_a_bad_side_is_refused() -> None:
    none = PriceLimits(None, None, None, None)
    assert fill_blocked_by_limit("buy", D("50.00"), D("50.00"), none) is None
    assert fill_blocked_by_limit("sell", D("50.00"), D("50.00"), none) is None
    with pytest.raises(ValueError, match="side must be 'buy' or 'sell'"):
        fill_blocked_by_limit("short", D("9.00"), D("9.00"), LIMITS)  # type: ignore[arg-type]
