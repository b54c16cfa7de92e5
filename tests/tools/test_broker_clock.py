"""The paper account's clock: live or simulated, the session an order fills in, and when a proposal expires."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from tools.broker.clock import SHANGHAI, clock_for, expiry, session_for, trading_days
from tools.data.local import LocalProvider

TTL = timedelta(minutes=120)


def _provider(tmp_path: Path, dates: list[str]) -> LocalProvider:
    rows = [{"ts_code": "600000.SH", "trade_date": d, "open": 10.0, "high": 10.5, "low": 9.5, "close": 10.0,
             "pre_close": 10.0, "vol": 1000.0, "amount": 1000.0} for d in dates]
    pd.DataFrame(rows).to_csv(tmp_path / "daily.csv", index=False)
    return LocalProvider(tmp_path)


def _at(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M").replace(tzinfo=SHANGHAI)


def test_data_ending_long_ago_runs_a_simulated_clock_on_its_last_date(tmp_path: Path) -> None:
    provider = _provider(tmp_path, ["20200821", "20200824"])
    clock = clock_for(provider, 7, _at("2026-11-23 10:00"))
    assert (clock.mode, clock.today, clock.data_end) == ("simulated", "20200824", "20200824")
    session = session_for(clock, provider, "open")
    assert (session.date, session.fill_at) == ("20200824", "close")
    assert session.label == "simulated fill at the last available close (20200824)"
    assert expiry(clock, session, TTL) == _at("2026-11-23 12:00")  # only the configured time applies


def test_recent_data_runs_the_wall_clock_in_shanghai(tmp_path: Path) -> None:
    provider = _provider(tmp_path, ["20261119", "20261120"])  # Thursday, Friday
    clock = clock_for(provider, 7, datetime(2026, 11, 23, 0, 30, tzinfo=SHANGHAI).astimezone(SHANGHAI))
    assert (clock.mode, clock.today) == ("live", "20261123")
    weekend = clock_for(provider, 0, _at("2026-11-23 10:00"))
    assert weekend.mode == "live"  # Friday's bar on Monday morning: no weekday passed


def test_a_holiday_week_keeps_the_clock_live_and_older_data_does_not(tmp_path: Path) -> None:
    provider = _provider(tmp_path, ["20240927", "20240930"])  # National Day: closed 10-01 to 10-07
    assert clock_for(provider, 7, _at("2024-10-08 08:00")).mode == "live"  # five weekdays passed
    assert clock_for(provider, 4, _at("2024-10-08 08:00")).mode == "simulated"
    assert clock_for(provider, 7, _at("2024-10-11 08:00")).mode == "simulated"  # 10-01 … 10-10: eight weekdays


@pytest.mark.parametrize("now, fill_at, session, expires", [
    ("2026-11-23 08:00", "open", "20261123", "2026-11-23 09:15"),  # before the open: today's session, 09:15 first
    ("2026-11-23 09:20", "open", "20261124", "2026-11-23 11:20"),  # the opening auction began: tomorrow; TTL first
    ("2026-11-23 14:00", "close", "20261123", "2026-11-23 14:57"),  # the closing auction still ahead: today
    ("2026-11-23 14:58", "close", "20261124", "2026-11-23 16:58"),
    ("2026-11-27 16:00", "open", "20261130", "2026-11-27 18:00"),  # Friday afternoon: Monday's session
])
def test_live_orders_fill_in_the_next_session_and_expire_before_it_opens(
        tmp_path: Path, now: str, fill_at: str, session: str, expires: str) -> None:
    provider = _provider(tmp_path, ["20261120"])
    clock = clock_for(provider, 7, _at(now))
    chosen = session_for(clock, provider, fill_at)  # type: ignore[arg-type]
    assert chosen.date == session
    assert chosen.calendar_note is None  # beyond the file's dates, exchange-calendars' XSHG covers 2026
    assert expiry(clock, chosen, TTL) == _at(expires)


CLOSED_2026 = ["20260101", "20260102", "20260216", "20260217", "20260218", "20260219", "20260220", "20260223",
               "20260406", "20260501", "20260504", "20260505", "20260619", "20260925", "20261001", "20261002",
               "20261005", "20261006", "20261007"]  # the exchanges' published 2026 closures (weekdays)


def test_past_the_data_the_2026_holidays_are_no_trading_days(tmp_path: Path) -> None:
    provider = _provider(tmp_path, ["20251230", "20251231"])  # local data: its own days stop at 2025
    days, note = trading_days(provider, "20260101", 242)
    weekdays = [d.strftime("%Y%m%d") for d in pd.bdate_range("2026-01-01", "2026-12-31")]
    assert days == [d for d in weekdays if d not in CLOSED_2026] and note is None


@pytest.mark.parametrize("data_end, now, fill_at, session", [
    ("20260212", "2026-02-13 16:00", "open", "20260224"),  # Friday before the Spring Festival: 02-16 to 02-23 closed
    ("20260929", "2026-09-30 15:00", "close", "20261008"),  # National Day, and the Mid-Autumn day before it
    ("20260617", "2026-06-18 10:00", "close", "20260618"),
    ("20260617", "2026-06-18 15:00", "open", "20260622"),  # the Dragon Boat Festival on Friday
])
def test_a_live_order_after_the_data_skips_the_holidays(tmp_path: Path, data_end: str, now: str, fill_at: str,
                                                        session: str) -> None:
    provider = _provider(tmp_path, [data_end])
    clock = clock_for(provider, 7, _at(now))
    chosen = session_for(clock, provider, fill_at)  # type: ignore[arg-type]
    assert (clock.mode, chosen.date, chosen.calendar_note) == ("live", session, None)
    assert expiry(clock, chosen, timedelta(days=30)) == _at(f"{session[:4]}-{session[4:6]}-{session[6:]} "
                                                            + ("09:15" if fill_at == "open" else "14:57"))


def test_past_the_exchange_calendars_horizon_weekdays_are_assumed_with_a_note(tmp_path: Path) -> None:
    provider = _provider(tmp_path, ["20261230", "20261231"])
    days, note = trading_days(provider, "20261231", 4)
    assert days == ["20261231", "20270101", "20270104", "20270105"]  # 2027-01-01 is a holiday nobody knows yet
    assert note is not None and "weekday" in note and "20270101" in note
    clock = clock_for(provider, 7, _at("2027-01-01 10:00"))
    chosen = session_for(clock, provider, "open")
    assert chosen.date == "20270104" and chosen.calendar_note is not None and "weekday" in chosen.calendar_note
