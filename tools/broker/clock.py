"""The account's clock: live (Asia/Shanghai wall clock and the exchange's trading calendar) when the data has today's or
recent bars, else simulated, with "today" the simulated session date (a month of sessions before the data's last day
until a trader moves it: tools/broker/sim_clock.py). It decides which session an order fills in and when a proposal
expires."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

import numpy as np

from tools.broker.notes import FILLS_AT, SIMULATED_ON
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.i18n import _

SHANGHAI = ZoneInfo("Asia/Shanghai")
# The last moment an order can still make a session's open (its call auction starts 09:15) or close (the
# closing call auction starts 14:57): an approval after it goes to the next session, and a proposal expires then.
DEADLINES = {"open": time(9, 15), "close": time(14, 57)}


@dataclass(frozen=True)
class Clock:
    mode: Literal["live", "simulated"]
    today: str  # YYYYMMDD: the Shanghai date (live) or the simulated session date
    now: datetime  # aware, Asia/Shanghai
    data_end: str  # the last bar date the account reads: the provider's (live), the session date (simulated)

    @property
    def simulated(self) -> bool:
        return self.mode == "simulated"


@dataclass(frozen=True)
class Session:
    """When an order would fill: the trading day, at its open or close, and why."""

    date: str
    fill_at: Literal["open", "close"]
    label: str
    calendar_note: str | None  # set when days past the trading calendar's horizon are assumed (weekdays)


def day(text: str) -> date:
    return datetime.strptime(text, "%Y%m%d").date()


def ymd(value: date) -> str:
    return value.strftime("%Y%m%d")


def clock_for(provider: MarketDataProvider, live_days: int, now: datetime | None = None) -> Clock:
    """Live when at most `live_days` weekdays passed since the provider's last bar (weekdays, so that the
    Spring Festival or National Day week does not turn the clock simulated), else simulated on the last data
    date (the paper accounts' simulated clock, tools/broker/sim_clock.py, may stand earlier)."""
    moment = (now or datetime.now(SHANGHAI)).astimezone(SHANGHAI)
    end = provider.last_date()
    if end is None:
        raise DataError(_("the {provider} provider has no daily bars, so the paper account has no prices").format(
            provider=provider.label()))
    if int(np.busday_count(day(end) + timedelta(days=1), moment.date())) <= live_days:
        return Clock("live", ymd(moment.date()), moment, end)
    return Clock("simulated", end, moment, end)


def trading_days(provider: MarketDataProvider, start: str, count: int) -> tuple[list[str], str | None]:
    """The next `count` trading days from `start` (inclusive) by the provider's trading calendar (tushare's
    trade_cal, else exchange-calendars' XSHG), with a note when some past its horizon are assumed weekdays."""
    return provider.trading_calendar.following(start, count)


def session_for(clock: Clock, provider: MarketDataProvider, fill_at: Literal["open", "close"]) -> Session:
    """The session an order approved now fills in."""
    if clock.simulated:
        return Session(clock.today, "close", SIMULATED_ON.format(day=clock.today), None)
    days, note = trading_days(provider, clock.today, 2)
    if days[0] == clock.today and clock.now.time() < DEADLINES[fill_at]:
        chosen = days[0]
    else:
        chosen = next(d for d in days if d > clock.today)
    return Session(chosen, fill_at, FILLS_AT[fill_at].format(day=chosen), note)


def expiry(clock: Clock, session: Session, ttl: timedelta) -> datetime:
    """When a proposal stops being approvable: after `ttl`, and on live data also when its session's auction
    starts (09:15 for a fill at the open)."""
    limit = clock.now + ttl
    if clock.simulated:
        return limit
    return min(limit, datetime.combine(day(session.date), DEADLINES[session.fill_at], SHANGHAI))
