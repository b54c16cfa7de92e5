"""Moving the simulated clock (`clock next`, `clock set DATE`) to a trading day the data has bars for (fills need
bars): forward, or back over days no order is dated on (the accounts' history is never undone). After a move every
account's due orders settle at the new session and every account is marked at its closes; the buys of the session
before become sellable (T+1)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import Engine, delete, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tools.broker.accounts import Accounts
from tools.broker.clock import Clock, clock_for, day, ymd
from tools.broker.orders import Order
from tools.broker.records import PaperMark, PaperOrder
from tools.broker.sim_clock import set_session, simulated_today, stored_session
from tools.broker.store import write_lock
from tools.data.provider import MarketDataProvider
from tools.i18n import _


class ClockError(ValueError):
    """A move of the clock that cannot be made; the message says why."""


@dataclass(frozen=True)
class ClockState:
    """The paper accounts' clock as `clock` shows it."""

    mode: str  # live, simulated
    today: str  # the session date (simulated) or the Shanghai date (live)
    data_end: str  # the provider's last bar
    next_session: str | None  # where `clock next` would go; None on live data
    moved_by: str | None  # who moved the simulated clock last (None: never moved)
    moved_at: datetime | None


@dataclass(frozen=True)
class ClockMove:
    before: str
    after: str
    changed: tuple[Order, ...]  # orders the new session filled or expired
    marked: tuple[str, ...]  # accounts marked at its closes


def live_refusal(clock: Clock, provider: MarketDataProvider) -> str:
    return _("the clock is the real one on live data (the {provider} data has bars through {end}; today is {today} in "
             "Asia/Shanghai): orders fill at the real sessions, so there is no clock to move").format(
        provider=provider.label(), end=clock.data_end, today=clock.today)


def next_session(provider: MarketDataProvider, today: str) -> str:
    """The exchange's next trading day after `today`."""
    return provider.trading_calendar.following(ymd(day(today) + timedelta(days=1)), 1)[0][0]


def clock_state(engine: Engine, provider: MarketDataProvider, live_days: int, now: datetime) -> ClockState:
    base = clock_for(provider, live_days, now)
    if not base.simulated:
        return ClockState("live", base.today, base.data_end, None, None, None)
    with Session(engine) as session:
        today = simulated_today(session, provider, base.data_end)
        row = stored_session(session)
        moved = row is not None and row.data_end == base.data_end  # moved on this data
        moved_by, moved_at = (row.moved_by, row.moved_at) if row is not None and moved else (None, None)
    return ClockState("simulated", today, base.data_end, next_session(provider, today), moved_by, moved_at)


def move_clock(engine: Engine, provider: MarketDataProvider, live_days: int, accounts: Accounts, to: str | None,
               by: str, now: datetime) -> ClockMove:
    """Move the simulated clock to `to` (None: the next trading day), then settle and mark every account through
    its broker."""
    base = clock_for(provider, live_days, now)
    if not base.simulated:
        raise ClockError(live_refusal(base, provider))
    try:
        with write_lock(engine) as session:
            stored_session(session, lock=True)
            before = simulated_today(session, provider, base.data_end)
            after = to or next_session(provider, before)
            _check(session, provider, before, after, base.data_end, stepping=to is None)
            if after < before:  # the equity curve's marks of the days gone back over are made again
                session.execute(delete(PaperMark).where(PaperMark.trade_date > after))
            set_session(session, before, after, base.data_end, by)
    except IntegrityError:  # another first move of the clock committed in between
        raise ClockError(_("someone else moved the clock at the same moment; see `clock` and try again")) from None
    changed = tuple(accounts.settle(now))
    names = tuple(accounts.names())
    for name in names:
        accounts.broker(name).mark(after, now)
    return ClockMove(before, after, changed, names)


def _check(session: Session, provider: MarketDataProvider, before: str, after: str, data_end: str, *,
           stepping: bool) -> None:
    """Why the clock cannot go from `before` to `after`, raised as a ClockError."""
    if after == before:
        raise ClockError(_("the simulated clock is already at {day}").format(day=after))
    if not stepping and not provider.trading_calendar.is_session(day(after)):
        raise ClockError(_("{day} is not a trading day of the exchange calendar").format(day=after))
    if after > data_end:
        raise ClockError(_("the data ends at {end}, so the simulated clock cannot move to {day}: it moves only over "
                           "days the data has bars for, since fills need bars. `clock set DATE` moves it back to an "
                           "earlier session no order is dated after (`account reset NAME` clears an account's "
                           "orders)").format(end=data_end, day=after))
    if after not in provider.calendar(after, after):
        raise ClockError(_("the {provider} data has no bars on {day} (fills need bars): `clock set` a day it "
                           "has").format(provider=provider.label(), day=after))
    if after < before:
        later = session.execute(select(PaperOrder.id, PaperOrder.account, PaperOrder.session_date)
                                .where(PaperOrder.session_date > after).order_by(PaperOrder.session_date.desc())
                                .limit(1)).first()
        if later is not None:
            raise ClockError(_("the clock cannot go back to {day}: order {order} of account {account} is dated "
                               "{dated}, and the accounts' history is not undone (`account reset NAME` clears an "
                               "account)").format(day=after, order=later.id, account=later.account,
                                                  dated=later.session_date))
