"""Whether a code's latest daily bar is as recent as it should be before anything trades on it.

On live data (the paper account's clock: the provider's last bar is at most `live_days` weekdays old) the bar of
the last trading day before today (Asia/Shanghai, the provider's trading calendar: tushare's trade_cal or
exchange-calendars' XSHG, weekdays past their horizon) must be there. Today's own bar is not required: providers
publish it some time after the close. On simulated data (an old data set) "today" is the data's last date, so
nothing is stale."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from tools.broker.clock import clock_for, ymd
from tools.broker.market import closes
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.i18n import _

CALENDAR_LOOKBACK_DAYS = 30  # no exchange holiday is this long


@dataclass(frozen=True)
class StaleBar:
    """A code whose latest bar (None: none within the look-back) is older than the expected trading day."""

    code: str
    last_bar: str | None  # YYYYMMDD
    expected: str  # YYYYMMDD

    def text(self) -> str:
        seen = _("its latest bar is {day}").format(day=self.last_bar) if self.last_bar else _("it has no recent bar")
        return _("stale data: {seen}, but the bar of {day} (the last trading day before today, Asia/Shanghai) should "
                 "be there; the stock may be suspended or the data feed behind").format(seen=seen, day=self.expected)


def last_trading_day_before(provider: MarketDataProvider, today: date) -> str:
    """The last exchange trading day strictly before `today` by the provider's trading calendar (the paper clock's)."""
    found = provider.trading_calendar.previous(today, CALENDAR_LOOKBACK_DAYS)
    if found is None:
        raise DataError(_("no trading day in the {n} days before {day}").format(n=CALENDAR_LOOKBACK_DAYS,
                                                                                 day=ymd(today)))
    return found


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
