"""Whether a code's latest daily bar is as recent as it should be before anything trades on it.

On live data (the paper account's clock: the provider's last bar is at most `live_days` weekdays old) the bar of
the last trading day before today (Asia/Shanghai, the exchange calendar; weekdays past the calendar the provider
knows) must be there. Today's own bar is not required: providers publish it some time after the close. On
simulated data (an old data set) "today" is the data's last date, so nothing is stale."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from tools.broker.clock import clock_for, day, ymd
from tools.broker.market import closes
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError

CALENDAR_LOOKBACK_DAYS = 30  # no exchange holiday is this long
CALENDAR_HORIZON_DAYS = 14  # a calendar that reaches this far past today (tushare publishes ahead) covers it


@dataclass(frozen=True)
class StaleBar:
    """A code whose latest bar (None: none within the look-back) is older than the expected trading day."""

    code: str
    last_bar: str | None  # YYYYMMDD
    expected: str  # YYYYMMDD

    def text(self) -> str:
        seen = f"its latest bar is {self.last_bar}" if self.last_bar else "it has no recent bar"
        return (f"stale data: {seen}, but the bar of {self.expected} (the last trading day before today, "
                f"Asia/Shanghai) should be there; the stock may be suspended or the data feed behind")


def last_trading_day_before(provider: MarketDataProvider, today: date) -> str:
    """The last exchange trading day strictly before `today`: the provider's calendar where it reaches, and every
    weekday after it (holidays beyond the calendar are not known)."""
    start = today - timedelta(days=CALENDAR_LOOKBACK_DAYS)
    try:
        known = provider.calendar(start, today + timedelta(days=CALENDAR_HORIZON_DAYS))
    except DataError:
        known = []
    days = [d for d in known if d < ymd(today)]
    cursor = day(max(known)) + timedelta(days=1) if known else start
    while cursor < today:
        if cursor.weekday() < 5:
            days.append(ymd(cursor))
        cursor += timedelta(days=1)
    if not days:
        raise DataError(f"no trading day in the {CALENDAR_LOOKBACK_DAYS} days before {ymd(today)}")
    return max(days)


def stale_bar(provider: MarketDataProvider, code: str, now: datetime, live_days: int) -> StaleBar | None:
    """The staleness of `code`'s latest bar at `now`; None when it is fresh, or when the data is not live."""
    clock = clock_for(provider, live_days, now)
    if clock.simulated:
        return None
    expected = last_trading_day_before(provider, clock.now.date())
    found = closes(provider, [code], clock.today)
    last = found[code][1] if code in found else None
    if last is not None and last >= expected:
        return None
    return StaleBar(code, last, expected)
