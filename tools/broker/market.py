"""The prices an order is judged and filled on: one session's bar, the previous close, the latest close, and
the security's name, ST status and listing day. Nothing after the session date is read."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any, TypeVar

import pandas as pd

from tools.broker.clock import day, ymd
from tools.broker.money import price_of
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.data.securities import Security
from tools.i18n import _

BAR_FIELDS = ("open", "high", "low", "close", "pre_close", "vol")
LOOKBACK_DAYS = 40  # calendar days searched back for a previous or latest close
NEW_LISTING_DAYS = 20  # listings younger than this many calendar days get their trading-day number counted
# (five trading days and the Spring Festival's closure fit within it)
T = TypeVar("T")


@dataclass(frozen=True)
class Bar:
    trade_date: str
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    pre_close: Decimal | None  # the exchange's reference price when the provider has it
    suspended: bool  # a row with no volume (some providers keep suspended days as rows)


@dataclass(frozen=True)
class Quote:
    """What the rules need about a code for one session."""

    ts_code: str
    name: str | None
    session_bar: Bar | None  # None until the session's bar exists (or the code did not trade that day)
    prev_close: Decimal | None  # the close before the session (the session bar's pre_close when present)
    prev_close_note: str | None  # set when the previous close is the raw close, not the exchange's reference
    last_close: Decimal | None  # the latest close on or before the session date
    last_close_date: str | None
    is_st: bool | None
    st_note: str | None  # set when the session's ST status is carried forward from the data's last day
    listing_day: int | None  # trading-day number since listing (1 = listing day); None: unknown or long listed


def bars(provider: MarketDataProvider, code: str, start: str, end: str) -> list[Bar]:
    """The code's bars between two dates, oldest first; none when it has no rows there."""
    fields = [f for f in BAR_FIELDS if f in provider.available_fields("daily")]
    try:
        frame = provider.daily(code, start, end, fields, warnings=[])
    except DataError:
        return []
    return [_bar(row) for row in frame.to_dict("records")]


def _bar(row: dict) -> Bar:
    pre = row.get("pre_close")
    vol = row.get("vol")
    return Bar(str(row["trade_date"]), price_of(row["open"]), price_of(row["high"]), price_of(row["low"]),
               price_of(row["close"]), None if pre is None or pd.isna(pre) else price_of(pre),
               bool(vol is not None and not pd.isna(vol) and float(vol) == 0.0))


def quote(provider: MarketDataProvider, code: str, session: str, until: str) -> Quote:
    """The code as of `session`, reading bars up to `until` (≤ session; the data's end for a future session):
    its session bar when that exists, else the latest before it."""
    start = ymd(day(until) - timedelta(days=LOOKBACK_DAYS))
    history = [b for b in bars(provider, code, start, until) if not b.suspended or b.trade_date == session]
    session_bar = history[-1] if history and history[-1].trade_date == session else None
    before = [b for b in history if b.trade_date < session and not b.suspended]
    prev_close, note = None, None
    if session_bar is not None and session_bar.pre_close is not None:
        prev_close = session_bar.pre_close
    elif before:
        prev_close = before[-1].close
        note = _("the previous close {close} of {day} is the raw close, not the exchange's reference price: on an "
                 "ex-dividend day the limit check is approximate").format(close=before[-1].close,
                                                                        day=before[-1].trade_date)
    traded = [b for b in history if not b.suspended]
    security = provider.securities([code]).get(code)
    return Quote(
        ts_code=code,
        name=security.name if security else None,
        session_bar=session_bar,
        prev_close=prev_close,
        prev_close_note=note,
        last_close=traded[-1].close if traded else None,
        last_close_date=traded[-1].trade_date if traded else None,
        is_st=security.is_st(session) if security else None,
        st_note=_st_note(security, session),
        listing_day=_listing_day(provider, security.list_date if security else None, session),
    )


def _st_note(security: Security | None, session: str) -> str | None:
    carried = security.st_carried_from(session) if security else None
    if carried is None or security is None:
        return None
    text = (_("ST status carried forward: {code} was ST on {day}, the last day of its ST data") if
            security.is_st(carried) else
            _("ST status carried forward: {code} was not ST on {day}, the last day of its ST data"))
    return text.format(code=security.ts_code, day=carried)


def _listing_day(provider: MarketDataProvider, list_date: str | None, session: str) -> int | None:
    if not list_date or list_date > session or (day(session) - day(list_date)).days > NEW_LISTING_DAYS:
        return None
    return provider.trading_calendar.count(list_date, session)  # not the data's days: the session may be beyond


def closes(provider: MarketDataProvider, codes: list[str], on: str) -> dict[str, tuple[Decimal, str]]:
    """The latest close on or before `on` of each code that has one: (price, its date)."""
    if not codes:
        return {}
    start = ymd(day(on) - timedelta(days=LOOKBACK_DAYS))
    result: dict[str, tuple[Decimal, str]] = {}
    try:
        frame = provider.daily(codes, start, on, ["close"], warnings=[])
    except DataError:
        return result
    frame = frame.dropna(subset=["close"])
    for code, rows in frame.groupby("ts_code"):
        last = rows.iloc[-1]
        result[str(code)] = (price_of(last["close"]), str(last["trade_date"]))
    return result


class Prices:
    """A provider's quotes and closes, each read once while the data's last date stays `data_end` (bars up to it
    do not change): a broker placing many orders reads each code's window once, not once per order."""

    def __init__(self, provider: MarketDataProvider) -> None:
        self.provider = provider
        self._end: str | None = None
        self._seen: dict[tuple[Any, ...], Any] = {}

    def quote(self, code: str, session: str, data_end: str) -> Quote:
        """`quote` of `code` for `session`, reading bars up to the session or the data's end."""
        return self._memo((data_end, "quote", code, session),
                          lambda: quote(self.provider, code, session, min(session, data_end)))

    def closes(self, codes: list[str], on: str, data_end: str) -> dict[str, tuple[Decimal, str]]:
        """`closes` of `codes` on `on`."""
        return self._memo((data_end, "closes", tuple(sorted(codes)), on), lambda: closes(self.provider, codes, on))

    def _memo(self, key: tuple[Any, ...], read: Callable[[], T]) -> T:
        if key[0] != self._end:  # the data grew: earlier reads may lack its new bars
            self._seen, self._end = {}, key[0]
        if key not in self._seen:
            self._seen[key] = read()
        return self._seen[key]
