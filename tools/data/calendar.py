"""The exchange's trading days: a published calendar (tushare `trade_cal` where a token is set), else
exchange-calendars' XSHG (holidays recorded through its last year), and every weekday past what they cover, with a
note saying so. One `TradingCalendar` serves the paper account's clock, the rule schedules and listing day counts."""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import date, datetime, timedelta
from functools import cache
from typing import Protocol

from tools.data.schema import DataError
from tools.i18n import _

log = logging.getLogger(__name__)

XSHG_FROM = "1991-01-01"  # the Shanghai exchange's first full year; exchange-calendars knows its days from here
PUBLISHED_TTL_SECONDS = 6 * 3600.0  # a published year is read again after this (next year's appears in Nov-Dec)


def _day(text: str) -> date:
    return datetime.strptime(text, "%Y%m%d").date()


def _ymd(value: date) -> str:
    return value.strftime("%Y%m%d")


class CalendarSource(Protocol):
    """Trading days over the dates a source knows."""

    name: str

    def covered(self, start: str) -> str | None:
        """The last day of the contiguous stretch from `start` (YYYYMMDD) this source knows; None: not `start`."""

    def open_days(self, start: str, end: str) -> list[str]:
        """Trading days within [start, end], a stretch `covered` vouched for, ascending."""


class ExchangeCalendarSource:
    """exchange-calendars' XSHG: Shanghai's sessions from 1991 through the last year it records (it raises beyond,
    rather than guessing)."""

    name = "exchange-calendars XSHG"

    def __init__(self) -> None:
        import exchange_calendars

        calendar = exchange_calendars.get_calendar("XSHG", start=XSHG_FROM)
        self._days = tuple(_ymd(moment.date()) for moment in calendar.sessions)
        self._first, self._last = _ymd(calendar.first_session.date()), _ymd(calendar.last_session.date())
        self._last = max(self._last, _ymd(date(calendar.last_session.year, 12, 31)))  # it records whole years

    def covered(self, start: str) -> str | None:
        return self._last if self._first <= start <= self._last else None

    def open_days(self, start: str, end: str) -> list[str]:
        return list(self._days[bisect.bisect_left(self._days, start):bisect.bisect_right(self._days, end)])


TradeCal = Callable[[str, str], list[tuple[str, bool]]]  # (start, end) -> [(cal_date, is_open)] as published


class PublishedCalendarSource:
    """A calendar published a year at a time (tushare `trade_cal`): each year read once per `ttl` seconds. A year
    covers the days it lists; a source that fails is skipped (logged) until the next read."""

    name = "tushare trade_cal"

    def __init__(self, trade_cal: TradeCal, ttl: float = PUBLISHED_TTL_SECONDS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._trade_cal = trade_cal
        self._ttl = ttl
        self._clock = clock
        self._years: dict[int, tuple[float, list[str], str | None]] = {}  # year -> (read at, open days, last listed)
        self._lock = threading.Lock()

    def _year(self, year: int) -> tuple[list[str], str | None]:
        now = self._clock()
        with self._lock:
            hit = self._years.get(year)
        if hit is not None and now - hit[0] < self._ttl:
            return hit[1], hit[2]
        try:
            listed = self._trade_cal(f"{year}0101", f"{year}1231")
        except DataError as exc:
            log.warning("the %s calendar of %d could not be read (%s); using the next calendar", self.name, year, exc)
            return [], None
        days = sorted(d for d, is_open in listed if is_open)
        last = max((d for d, _ in listed), default=None)
        with self._lock:
            self._years[year] = (now, days, last)
        return days, last

    def covered(self, start: str) -> str | None:
        year = int(start[:4])
        _days, last = self._year(year)
        if last is None or last < start:
            return None
        while last == f"{year}1231":  # a whole year listed: the next one may be published too
            year += 1
            _days, following = self._year(year)
            if following is None:
                break
            last = following
        return last

    def open_days(self, start: str, end: str) -> list[str]:
        return [d for year in range(int(start[:4]), int(end[:4]) + 1) for d in self._year(year)[0] if start <= d <= end]


class TradingCalendar:
    """Trading days from the first source that covers each stretch, and weekdays where none does."""

    def __init__(self, sources: Sequence[CalendarSource]) -> None:
        self.sources = tuple(sources)

    def sessions(self, start: str, end: str) -> tuple[list[str], str | None]:
        """Trading days (YYYYMMDD) within [start, end], ascending, and a note when some are assumed weekdays."""
        days, assumed = self._sessions(start, end)
        return days, self._note(assumed)

    def following(self, start: str, count: int) -> tuple[list[str], str | None]:
        """The first `count` trading days from `start` (inclusive), and the note of `sessions` about them."""
        days: list[str] = []
        assumed: set[str] = set()
        cursor = _day(start)
        while len(days) < count:
            stop = cursor + timedelta(days=count * 2 + 14)
            found, guessed = self._sessions(_ymd(cursor), _ymd(stop))
            days += found
            assumed.update(guessed)
            cursor = stop + timedelta(days=1)
        return days[:count], self._note([d for d in days[:count] if d in assumed])

    def is_session(self, moment: date) -> bool:
        """Whether `moment` is a trading day (a weekday where no calendar covers it)."""
        text = _ymd(moment)
        return self.sessions(text, text)[0] == [text]

    def previous(self, before: date, lookback_days: int = 30) -> str | None:
        """The last trading day strictly before `before`, looking back `lookback_days` calendar days."""
        found, _note = self.sessions(_ymd(before - timedelta(days=lookback_days)), _ymd(before - timedelta(days=1)))
        return found[-1] if found else None

    def count(self, start: str, end: str) -> int:
        """Trading days within [start, end]."""
        return len(self.sessions(start, end)[0])

    def _sessions(self, start: str, end: str) -> tuple[list[str], list[str]]:
        """(trading days within [start, end], those of them assumed because no source covers them)."""
        days: list[str] = []
        assumed: list[str] = []
        cursor = start
        while cursor <= end:
            source, upto = next(((s, c) for s in self.sources if (c := s.covered(cursor)) is not None), (None, None))
            if source is None or upto is None:
                moment = _day(cursor)
                if moment.weekday() < 5:
                    days.append(cursor)
                    assumed.append(cursor)
                cursor = _ymd(moment + timedelta(days=1))
                continue
            stop = min(upto, end)
            days += source.open_days(cursor, stop)
            cursor = _ymd(_day(stop) + timedelta(days=1))
        return days, assumed

    def _note(self, assumed: list[str]) -> str | None:
        if not assumed:
            return None
        known = _(" and ").join(source.name for source in self.sources) or _("no exchange calendar")
        days = assumed[0] if len(assumed) == 1 else _("{first} to {last}").format(first=assumed[0], last=assumed[-1])
        return _("{calendar} does not cover {days}, so every weekday there is assumed to be a trading day; an order "
                 "whose day turns out to be a holiday fills on the next session").format(calendar=known, days=days)


@cache
def exchange_calendar() -> TradingCalendar:
    """The calendar without a published source: exchange-calendars' XSHG, then weekdays (read once a process)."""
    return TradingCalendar([ExchangeCalendarSource()])


def published_calendar(trade_cal: TradeCal) -> TradingCalendar:
    """A published calendar first (tushare `trade_cal`), then XSHG, then weekdays."""
    return TradingCalendar([PublishedCalendarSource(trade_cal), *exchange_calendar().sources])
