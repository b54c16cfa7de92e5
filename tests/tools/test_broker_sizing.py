"""Sizing a desk decision (tools.broker.sizing): the model's target weight constrained by the limit, lots, cash and
sellable shares; every expected quantity worked out by hand in the comments."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tools.broker.rules import LotRule
from tools.broker.sizing import size_order

MAIN = LotRule(100, 100)
STAR = LotRule(200, 1)
TOTAL, PRICE, LIMIT = Decimal("1000000"), Decimal("1696.35"), Decimal("0.3")


def test_a_buy_rounds_the_target_down_to_whole_lots() -> None:
    # 20% of 1,000,000 = 200,000 CNY / 1,696.35 = 117.9 shares → 100
    sizing = size_order("Buy", Decimal("0.2"), LIMIT, TOTAL, PRICE, 0, 0, TOTAL, MAIN)
    assert (sizing.side, sizing.quantity, sizing.target_shares) == ("buy", 100, 100)


def test_the_target_is_capped_at_the_accounts_position_limit() -> None:
    # 90% asked, 30% allowed: 300,000 / 1,696.35 = 176.8 → 100 shares
    sizing = size_order("Buy", Decimal("0.9"), LIMIT, TOTAL, PRICE, 0, 0, TOTAL, MAIN)
    assert sizing.quantity == 100 and "capped at the account's limit 30%" in sizing.explanation


def test_a_buy_is_capped_by_the_cash_kept_back_for_fees() -> None:
    # target 30% of 1,000,000 at 10.00 = 30,000 shares; 50,000 CNY × 0.997 / 10 = 4,985 → 4,900
    sizing = size_order("Overweight", Decimal("0.3"), LIMIT, TOTAL, Decimal("10.00"), 0, 0, Decimal("50000"), MAIN)
    assert (sizing.side, sizing.quantity) == ("buy", 4900) and "all the cash allows" in sizing.explanation


def test_a_star_board_buy_keeps_its_200_share_minimum_and_single_share_steps() -> None:
    # 10% of 1,000,000 at 50.00 = 2,000 shares; held 150 → 1,850 (≥ 200, steps of 1)
    sizing = size_order("Buy", Decimal("0.1"), LIMIT, TOTAL, Decimal("50.00"), 150, 150, TOTAL, STAR)
    assert sizing.quantity == 1850


def test_a_sell_to_zero_sells_every_sellable_share_even_an_odd_lot() -> None:
    sizing = size_order("Sell", Decimal("0"), LIMIT, TOTAL, PRICE, 150, 150, TOTAL, MAIN)
    assert (sizing.side, sizing.quantity) == ("sell", 150)


def test_a_partial_sell_is_in_lots_and_bounded_by_sellable_shares() -> None:
    # held 1,000 at 10.00, target 5% = 50,000 CNY / 10 = 5,000 shares, above the position: nothing to sell
    assert size_order("Underweight", Decimal("0.05"), LIMIT, TOTAL, Decimal("10.00"), 1000, 1000, TOTAL,
                      MAIN).side is None
    # target 0.5% = 5,000 CNY / 10 = 500 shares: sell 500, but only 300 are sellable today (T+1)
    sizing = size_order("Underweight", Decimal("0.005"), LIMIT, TOTAL, Decimal("10.00"), 1000, 300, TOTAL, MAIN)
    assert (sizing.side, sizing.quantity) == ("sell", 300)


@pytest.mark.parametrize(("rating", "held", "why"), [
    ("Hold", 0, "Hold: no order"),
    ("Buy", 200, "already at or above the target"),  # target 100 shares, 200 held: the desk never sells on a Buy
    ("Sell", 0, "already at or below the target"),
])
def test_no_order_when_the_rating_and_the_position_do_not_call_for_one(rating: str, held: int, why: str) -> None:
    sizing = size_order(rating, Decimal("0.2"), LIMIT, TOTAL, PRICE, held, held, TOTAL, MAIN)
    assert sizing.side is None and why in sizing.explanation


def test_a_buy_that_cash_cannot_reach_one_lot_of_is_no_order() -> None:
    sizing = size_order("Buy", Decimal("0.2"), LIMIT, TOTAL, PRICE, 0, 0, Decimal("100000"), MAIN)
    assert sizing.side is None and "buys less than a lot" in sizing.explanation
