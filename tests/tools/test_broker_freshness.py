"""The last trading day before today, and whether a code's latest bar is stale, against the exchange calendar of
the sample (2019-01-02 to 2020-08-24, a Monday) and weekdays beyond it. Dates checked by hand: the Dragon Boat
Festival closed the exchanges on Thursday 2020-06-25 and Friday 06-26."""

from __future__ import annotations

from datetime import date, datetime
from zoneinfo import ZoneInfo

import pytest

from tools.broker.freshness import StaleBar, last_trading_day_before, stale_bar
from tools.data.local import SampleProvider

SHANGHAI = ZoneInfo("Asia/Shanghai")
CODE = "600519.SH"


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


@pytest.mark.parametrize("today, expected", [
    (date(2020, 6, 29), "20200624"),  # Monday after the festival: the calendar knows Thursday and Friday were shut
    (date(2020, 8, 25), "20200824"),  # the day after the data ends
    (date(2020, 8, 27), "20200826"),  # beyond the calendar: every weekday counts
    (date(2020, 8, 31), "20200828"),  # a Monday beyond it: Friday
])
def test_the_last_trading_day_before_today(provider: SampleProvider, today: date, expected: str) -> None:
    assert last_trading_day_before(provider, today) == expected


def test_a_bar_is_stale_only_on_live_data_and_only_when_older_than_expected(provider: SampleProvider) -> None:
    def at(*parts: int) -> datetime:
        return datetime(*parts, tzinfo=SHANGHAI)

    assert stale_bar(provider, CODE, at(2020, 8, 25, 9, 0), 7) is None  # Monday's bar is the one expected
    assert stale_bar(provider, CODE, at(2020, 8, 24, 20, 0), 7) is None  # today's own bar is never required
    assert stale_bar(provider, CODE, at(2020, 8, 27, 9, 0), 7) == StaleBar(CODE, "20200824", "20200826")
    assert stale_bar(provider, CODE, at(2020, 8, 27, 9, 0), 1) is None  # two weekdays behind: simulated clock
    assert stale_bar(provider, "000000.SZ", at(2020, 8, 25, 9, 0), 7) == StaleBar("000000.SZ", None, "20200824")
