"""The pre-trade layer every broker shares: the A-share rules (lots and odd-lot selling, the price band with ST and
board, T+1 sellable shares), the risk limits, the account's mandate and the trading switch, judged on what the
account's broker reports (cash, positions, open orders: `AccountFacts`) and the market data's quote. It runs when
a card is proposed, again at approval (the stale re-check: `submit` previews first) and, for the mandate, again
when an order fills. A broker gathers its facts (the paper broker from its tables inside the write lock, a live
broker from its server) and keeps only what simulates or reaches the exchange."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from tools.broker.checks import AccountState, estimate, pre_trade_checks
from tools.broker.clock import Clock, Session, day, expiry
from tools.broker.config import TradingConfig
from tools.broker.mandate import Mandate, mandate_check
from tools.broker.market import Quote
from tools.broker.orders import Check, OrderRequest, Preview
from tools.broker.rules import PriceLimits, price_limits
from tools.i18n import N_, _

SIMULATED_MOVES = N_("the simulated clock is at {today}: this proposal lapses when the clock moves (`clock next`), "
                     "and shares bought are sellable after it moves (T+1)")


@dataclass(frozen=True)
class AccountFacts:
    """What the checks read about an account, from whichever broker serves it."""

    cash: Decimal
    reserved: Decimal  # held back for open buys
    market_value: Decimal  # the positions at their marks (gross exposure)
    day_start_equity: Decimal
    held: int  # shares of the order's code
    sellable: int  # of them, sellable in the order's session (T+1, less open sells)
    orders_today: int  # orders placed for the order's session
    turnover_today: Decimal  # the session's fills plus what its open orders hold back


def limits_for(code: str, session_date: str, q: Quote) -> PriceLimits:
    """The session's daily price band of `code` (unknown without a previous close)."""
    if q.prev_close is None:
        unknown = _("no previous close of {code}: the daily price limits are unknown").format(code=code)
        return PriceLimits(None, None, None, unknown)
    return price_limits(code, day(session_date), q.prev_close, q.is_st, q.listing_day)


def judge(request: OrderRequest, facts: AccountFacts, q: Quote, sess: Session, clock: Clock, config: TradingConfig,
          *, trading_on: bool, mandate: Mandate | None, notes: tuple[str, ...]) -> Preview:
    """Every check of `request` against the account's facts, with its estimated cost and what it leaves."""
    limits = limits_for(request.ts_code, sess.date, q)
    problem = None if q.last_close is not None else _("no close of {code} in the last weeks of data").format(
        code=request.ts_code)
    est = estimate(request, limits, q.last_close, sess.date, config.rates)
    state = AccountState(available=facts.cash - facts.reserved, equity=facts.cash + facts.market_value,
                         day_start_equity=facts.day_start_equity, held=facts.held, sellable=facts.sellable,
                         held_value=(q.last_close or Decimal(0)) * facts.held)
    checks = pre_trade_checks(request, on=sess.date, trading_on=trading_on, limits=limits, quote_ok=problem, est=est,
                              state=state, risk=config.risk, simulated=clock.simulated)
    if mandate is not None:
        checks += (mandate_check(mandate, request.ts_code, q.is_st, request.side, est.value,
                                 orders_today=facts.orders_today, exposure=facts.market_value,
                                 turnover_today=facts.turnover_today),)
    sign = -1 if request.side == "buy" else 1
    cash_after = facts.cash + sign * est.value - est.fees
    position_after = facts.held + (request.quantity if request.side == "buy" else -request.quantity)
    moves = _(SIMULATED_MOVES).format(today=clock.today) if clock.simulated else None
    shown = tuple(n for n in (limits.note, q.st_note, q.prev_close_note, sess.calendar_note, moves, *notes) if n)
    return Preview(request, q.name, sess.date, sess.fill_at, sess.label, est.reference_price, est.value, est.fees,
                   cash_after, position_after, limits.up, limits.down, checks, shown,
                   expiry(clock, sess, config.order_ttl).isoformat(),
                   tuple(mandate.lines()) if mandate else (), clock.today if clock.simulated else None)


def mandate_at_fill(mandate: Mandate, code: str, side: str, value: Decimal, q: Quote, facts: AccountFacts) -> Check:
    """The mandate judged again when an order fills (its lines, the session's ST status), the order itself left
    out of the session's activity in `facts`."""
    return mandate_check(mandate, code, q.is_st, side, value, orders_today=facts.orders_today,
                         exposure=facts.market_value, turnover_today=facts.turnover_today)


def reserve_of(preview: Preview, config: TradingConfig) -> Decimal:
    """The cash an approved buy holds back until it fills or ends (nothing for a sell)."""
    if preview.request.side != "buy":
        return Decimal("0.00")
    band = PriceLimits(preview.limit_up, preview.limit_down, None, None)
    return estimate(preview.request, band, preview.reference_price, preview.session_date, config.rates).reserve
