"""Pre-trade checks: every rule an order must pass before it is submitted, each with pass or fail and why.
Pure: the caller hands in the account's state and the quote."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tools.broker.boards import OrderRuleError
from tools.broker.clock import day
from tools.broker.fees import FeeRates, estimate_fees
from tools.broker.money import money_text
from tools.broker.orders import Check, OrderRequest
from tools.broker.rules import PriceLimits, buy_quantity_problem, order_size_problem, sell_quantity_problem
from tools.i18n import N_, _

PRICE_LIMIT = N_("price limit")  # a check's name is an English id; the card shows it translated


@dataclass(frozen=True)
class RiskLimits:
    max_order_value: Decimal
    max_position_weight: Decimal  # of the account's equity
    daily_loss_limit: Decimal  # fraction of the day's starting equity


@dataclass(frozen=True)
class AccountState:
    available: Decimal  # cash less what open buys hold back
    equity: Decimal
    day_start_equity: Decimal
    held: int
    sellable: int
    held_value: Decimal  # the position at the reference price


@dataclass(frozen=True)
class Estimate:
    reference_price: Decimal | None
    value: Decimal
    fees: Decimal
    reserve: Decimal  # cash a buy holds back: quantity × (limit or limit-up) plus fees


def estimate(request: OrderRequest, limits: PriceLimits, last_close: Decimal | None, on: str,
             rates: FeeRates) -> Estimate:
    """The order's value and fees at its limit price (or the latest close), and what a buy holds back."""
    reference = request.limit_price if request.price_type == "limit" else last_close
    if reference is None:
        return Estimate(None, Decimal("0.00"), Decimal("0.00"), Decimal("0.00"))
    value = (reference * request.quantity).quantize(Decimal("0.01"))
    fees = estimate_fees(request.ts_code, request.side, value, day(on), rates).total
    reserve = Decimal("0.00")
    if request.side == "buy":
        worst = request.limit_price if request.price_type == "limit" else limits.up
        if worst is not None:
            worst_value = (worst * request.quantity).quantize(Decimal("0.01"))
            reserve = worst_value + estimate_fees(request.ts_code, "buy", worst_value, day(on), rates).total
    return Estimate(reference, value, fees, reserve)


def pre_trade_checks(request: OrderRequest, *, on: str, trading_on: bool, limits: PriceLimits,
                     quote_ok: str | None, est: Estimate, state: AccountState, risk: RiskLimits,
                     simulated: bool = False) -> tuple[Check, ...]:
    """Every rule, in the order a trader reads them. `quote_ok` is a problem with the price data, if any;
    `simulated`: the session is the simulated clock's (a T+1 refusal then says to move it)."""
    checks = [Check(N_("trading switch"), trading_on,
                    _("trading is on") if trading_on else _("trading is switched off (`trading on` turns it back on)"))]
    checks.append(Check(N_("price data"), quote_ok is None, quote_ok or _("the code has a recent close")))
    try:
        problem = order_size_problem(request.ts_code, request.quantity, request.price_type)
        if problem is None and request.side == "buy":
            problem = buy_quantity_problem(request.ts_code, request.quantity, day(on))
        elif problem is None and state.held:  # selling what is not held is the short-selling check's to refuse
            problem = sell_quantity_problem(request.ts_code, request.quantity, state.held, day(on))
    except OrderRuleError as exc:
        problem = str(exc)
    checks.append(Check(N_("lot size"), problem is None,
                        problem or (_("{n} shares is a valid buy") if request.side == "buy" else
                                    _("{n} shares is a valid sell")).format(n=f"{request.quantity:,}")))
    checks.append(_price_band(request, limits))
    if request.side == "sell":
        checks.append(Check(N_("no short selling"), state.held > 0,
                            _("{n} shares held").format(n=f"{state.held:,}") if state.held else
                            _("the account holds none of it")))
        sellable = request.quantity <= state.sellable
        detail = _("{sellable} of {held} shares sellable today (shares bought today and shares in open sell orders "
                   "are not)").format(sellable=f"{state.sellable:,}", held=f"{state.held:,}")
        if not sellable:
            detail += _("; ") + (_("shares bought today become sellable when the simulated clock moves to the next "
                                   "session: `clock next`, then propose the sell again") if simulated else
                                 _("shares bought today become sellable on the next trading day"))
        checks.append(Check(N_("sellable (T+1)"), sellable, detail))
    else:
        checks.append(Check(N_("cash"), est.reserve <= state.available,
                            _("holds back {reserve} of {available} available").format(
                                reserve=money_text(est.reserve), available=money_text(state.available))))
    checks.append(Check(N_("order value limit"), est.value <= risk.max_order_value,
                        _("{value} against a limit of {limit}").format(value=money_text(est.value),
                                                                       limit=money_text(risk.max_order_value))))
    if request.side == "buy":
        weight = (state.held_value + est.value) / state.equity if state.equity > 0 else Decimal(1)
        checks.append(Check(N_("position weight limit"), weight <= risk.max_position_weight,
                            _("{weight} of equity after the order, limit {limit}").format(
                                weight=f"{weight:.1%}", limit=f"{risk.max_position_weight:.0%}")))
        loss = (state.day_start_equity - state.equity) / state.day_start_equity \
            if state.day_start_equity > 0 else Decimal(0)
        checks.append(Check(N_("daily loss limit"), loss < risk.daily_loss_limit,
                            _("today's loss {loss}, buys stop at {limit}").format(
                                loss=f"{max(loss, Decimal(0)):.2%}", limit=f"{risk.daily_loss_limit:.0%}")))
    return tuple(checks)


def _price_band(request: OrderRequest, limits: PriceLimits) -> Check:
    if request.price_type == "market":
        if request.side == "buy" and limits.up is None:
            return Check(PRICE_LIMIT, False, _("no daily price limit that day (a new listing): use a limit order"))
        return Check(PRICE_LIMIT, True, _band(limits))
    price = request.limit_price
    if price is None or price <= 0:
        return Check(PRICE_LIMIT, False, _("a limit order needs a positive limit price"))
    if price != price.quantize(Decimal("0.01")):
        return Check(PRICE_LIMIT, False, _("{price} has more than two decimals: A-share prices tick by 0.01").format(
            price=price))
    if limits.up is not None and price > limits.up:
        return Check(PRICE_LIMIT, False, _("{price} is above the limit-up price ({band})").format(
            price=price, band=_band(limits)))
    if limits.down is not None and price < limits.down:
        return Check(PRICE_LIMIT, False, _("{price} is below the limit-down price ({band})").format(
            price=price, band=_band(limits)))
    return Check(PRICE_LIMIT, True, _band(limits))


def _band(limits: PriceLimits) -> str:
    if limits.up is None:
        return _("no daily price limit that day")
    return _("limit-down {down}, limit-up {up}").format(down=limits.down, up=limits.up)
