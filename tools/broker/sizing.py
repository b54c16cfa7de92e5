"""Sizing a desk decision into an order: the model proposes a target weight, this code constrains it.

The target is a fraction of the account's total value. It is capped at the account's position limit, turned into
shares at the decision's price and rounded down to the board's lots; buys are capped by the available cash (kept
`FEE_MARGIN` below it for fees), sells by the sellable shares (T+1), and selling down to zero may sell an odd lot.
A rating and a target that point different ways (a Buy whose target is below the position) give no order, as does
Hold: the desk trades only in the rating's direction."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal

from tools.broker.rules import LotRule
from tools.desk.log import rating_word
from tools.i18n import _

BUY_RATINGS = ("Buy", "Overweight")
SELL_RATINGS = ("Sell", "Underweight")
FEE_MARGIN = Decimal("0.003")  # cash kept back from a buy for commission and transfer fee


@dataclass(frozen=True)
class Sizing:
    side: str | None  # buy, sell, or None: no order
    quantity: int
    target_shares: int
    basis: str  # the target and the position, in the language in effect when it was sized
    outcome: str  # the order it comes to, or why there is none
    explanation: str  # both, as one text


def _sizing(side: str | None, quantity: int, target: int, basis: str, outcome: str) -> Sizing:
    return Sizing(side, quantity, target, basis, outcome, _("{basis}. {outcome}").format(basis=basis, outcome=outcome))


def _shares(value: Decimal, price: Decimal) -> int:
    return int((value / price).to_integral_value(rounding=ROUND_DOWN))


def size_order(rating: str, target_weight: Decimal, max_weight: Decimal, total_value: Decimal, price: Decimal,
               held: int, sellable: int, available: Decimal, lot: LotRule) -> Sizing:
    """The order that moves the position toward `target_weight` in the rating's direction, in whole lots."""
    weight = min(target_weight, max_weight)
    target = lot.round_down(_shares(total_value * weight, price)) if weight > 0 else 0
    basis = (_("target {weight} of {value} CNY (capped at the account's limit {limit}) at {price} = {target} shares; "
               "held {held}") if target_weight > max_weight else
             _("target {weight} of {value} CNY at {price} = {target} shares; held {held}")).format(
                 weight=f"{weight:.1%}", value=f"{total_value:,.2f}", limit=f"{max_weight:.0%}", price=price,
                 target=f"{target:,}", held=f"{held:,}")
    said = rating_word(rating)
    if rating == "Hold":
        return _sizing(None, 0, target, basis, _("Hold: no order"))
    if rating in BUY_RATINGS:
        if target <= held:
            return _sizing(None, 0, target, basis, _("{rating}, but the position is already at or above the target: "
                                                    "no order").format(rating=said))
        affordable = lot.round_down(_shares(available * (1 - FEE_MARGIN), price))
        quantity = min(lot.round_down(target - held), affordable)
        if quantity <= 0:
            return _sizing(None, 0, target, basis, _("{rating}, but {available} CNY available buys less than a lot: "
                                                    "no order").format(rating=said, available=f"{available:,.2f}"))
        buy = (_("Buy {quantity} shares (all the cash allows)") if quantity == affordable and quantity < target - held
               else _("Buy {quantity} shares"))
        return _sizing("buy", quantity, target, basis, buy.format(quantity=f"{quantity:,}"))
    if rating in SELL_RATINGS:
        if target >= held:
            return _sizing(None, 0, target, basis, _("{rating}, but the position is already at or below the target: "
                                                    "no order").format(rating=said))
        wanted = held - target if target == 0 else lot.round_down(held - target)
        quantity = min(wanted, sellable)
        if quantity <= 0:
            return _sizing(None, 0, target, basis, _("{rating}, but no shares are sellable today (T+1): no order"
                                                    ).format(rating=said))
        return _sizing("sell", quantity, target, basis, _("Sell {quantity} shares").format(quantity=f"{quantity:,}"))
    raise ValueError(f"unknown rating {rating!r}")
