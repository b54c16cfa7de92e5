"""The trading calendar past the data (tools/data/calendar.py): tushare's trade_cal where a token is set, else
exchange-calendars' XSHG, weekdays past their horizon with a note; the rule schedules and a new listing's day count
use it too."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal as D
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine

from testkit.fakes.tushare_server import GOOD_TOKEN, FakeTushare, TushareServer
from tools.broker.checks import RiskLimits
from tools.broker.clock import SHANGHAI, trading_days
from tools.broker.fees import DEFAULT_RATES
from tools.broker.orders import OrderRequest
from tools.broker.paper import PaperBroker, PaperConfig
from tools.data.factory import provider_from_settings
from tools.data.local import LocalProvider
from tools.data.tushare import TushareProvider
from tools.rules.schedule import due_ticks, trading_day_checker
from tools.rules.store import Rule
from tools.settings import Settings

# the exchanges' published 2026 closures on weekdays (REFERENCE.md, "Trading calendars")
CLOSED_2026 = {date(2026, 1, 1), date(2026, 1, 2), date(2026, 2, 16), date(2026, 2, 17), date(2026, 2, 18),
               date(2026, 2, 19), date(2026, 2, 20), date(2026, 2, 23), date(2026, 4, 6), date(2026, 5, 1),
               date(2026, 5, 4), date(2026, 5, 5), date(2026, 6, 19), date(2026, 9, 25), date(2026, 10, 1),
               date(2026, 10, 2), date(2026, 10, 5), date(2026, 10, 6), date(2026, 10, 7)}
# a 2027 calendar as tushare would publish it (made up for the test: no exchange has published 2027 yet)
CLOSED_2027 = {date(2027, 1, 1), date(2027, 2, 8), date(2027, 2, 9), date(2027, 2, 10), date(2027, 2, 11),
               date(2027, 2, 12)}


def _local(root: Path, days: list[str], code: str = "600000.SH", list_date: str = "20000104") -> LocalProvider:
    rows = [{"ts_code": code, "trade_date": d, "open": 10.0, "high": 10.5, "low": 9.5, "close": 10.0,
             "pre_close": 10.0, "vol": 1000.0, "amount": 1000.0, "is_st": 0} for d in days]
    pd.DataFrame(rows).to_csv(root / "daily.csv", index=False)
    (root / "stock_basic.csv").write_text(f"ts_code,name,list_date\n{code},新股,{list_date}\n", encoding="utf-8")
    return LocalProvider(root)


def _trade_cal(closed: set[date], start: date, end: date) -> pd.DataFrame:
    """tushare's trade_cal rows for SSE: every date listed, is_open 0 on weekends and on `closed`."""
    dates = pd.date_range(start, end)
    return pd.DataFrame({"exchange": "SSE", "cal_date": [d.strftime("%Y%m%d") for d in dates],
                         "is_open": [int(d.weekday() < 5 and d.date() not in closed) for d in dates]})


@pytest.fixture
def tushare() -> Iterator[TushareServer]:
    table = _trade_cal(CLOSED_2026 | CLOSED_2027, date(2026, 1, 1), date(2027, 12, 31))
    with TushareServer(FakeTushare({"trade_cal": table})) as server:
        yield server


def _weekdays(year: int) -> list[date]:
    return [d.date() for d in pd.bdate_range(f"{year}-01-01", f"{year}-12-31")]


def test_2026_sessions_are_the_weekdays_without_the_published_closures(tmp_path: Path) -> None:
    calendar = _local(tmp_path, ["20251231"]).trading_calendar
    assert [d for d in _weekdays(2026) if not calendar.is_session(d)] == sorted(CLOSED_2026)
    days, note = calendar.sessions("20260101", "20261231")
    assert len(days) == len(_weekdays(2026)) - len(CLOSED_2026) and note is None


def test_past_2026_every_weekday_is_assumed_and_said(tmp_path: Path) -> None:
    calendar = _local(tmp_path, ["20261231"]).trading_calendar
    assert [d for d in _weekdays(2027) if not calendar.is_session(d)] == []
    days, note = calendar.sessions("20261230", "20270105")
    assert days == ["20261230", "20261231", "20270101", "20270104", "20270105"]
    assert note is not None and "20270101 to 20270105" in note and "assumed" in note


def test_a_token_makes_tushares_published_calendar_the_one_used(tushare: TushareServer, tmp_path: Path) -> None:
    provider = TushareProvider(GOOD_TOKEN, tushare.url)
    assert [d for d in _weekdays(2027) if not provider.trading_calendar.is_session(d)] == sorted(CLOSED_2027)
    assert trading_days(provider, "20270205", 2) == (["20270205", "20270215"], None)
    # local bars with a token: the calendar is still tushare's
    _local(tmp_path, ["20261231"])
    settings = Settings(_env_file=None, TUSHARE_TOKEN=GOOD_TOKEN, TUSHARE_API_URL=tushare.url,
                        QUANTDESK_DATA_PROVIDER="local", QUANTDESK_LOCAL_DATA=str(tmp_path))
    assert not provider_from_settings(settings).trading_calendar.is_session(date(2027, 2, 8))


def test_a_failing_published_calendar_falls_back_to_the_exchange_calendar(tushare: TushareServer) -> None:
    calendar = TushareProvider("a-wrong-token", tushare.url, retries=0).trading_calendar
    assert not calendar.is_session(date(2026, 10, 6))  # XSHG
    assert calendar.is_session(date(2027, 2, 8))  # past XSHG: a weekday


def test_schedules_do_not_fire_on_holidays_after_the_data(tmp_path: Path) -> None:
    is_trading_day = trading_day_checker(_local(tmp_path, ["20260212"]))  # the data ends before the Spring Festival
    since = datetime(2026, 2, 1, tzinfo=UTC)
    rule = Rule(id=1, symbol="600000.SH", source="llm", requirements="r", owner="U1", channel="C1",
                runtime_status={}, schedule="30 9 * * 1-5", timezone="Asia/Shanghai", scheduled_since=since,
                enabled=True, size=100, value_cny=None, threshold=0.5, account=None, consecutive_failures=0,
                paused_reason=None, created_at=since, updated_at=since)
    ticks = due_ticks(rule, datetime(2026, 2, 25, 2, tzinfo=UTC), datetime(2026, 2, 12, 2, tzinfo=UTC),
                      is_trading_day=is_trading_day)
    assert [t.astimezone(SHANGHAI).date() for t in ticks] == [date(2026, 2, 13), date(2026, 2, 24),
                                                               date(2026, 2, 25)]
    assert is_trading_day(date(2027, 2, 8))  # past the exchange calendar: weekdays


@pytest.mark.parametrize("list_date, days, now, limits", [
    # listed Monday 03-02, day 5 (Friday 03-06) is the data's last: Monday 03-09 is day 6, with limits
    ("20260302", ["20260302", "20260303", "20260304", "20260305", "20260306"], "2026-03-09 08:00",
     (D("11.00"), D("9.00"))),
    # listed Tuesday 02-10, day 4 (02-13) is the data's last: after the Spring Festival, 02-24 is day 5, no limit
    ("20260210", ["20260210", "20260211", "20260212", "20260213"], "2026-02-24 08:00", (None, None)),
])
def test_a_new_listings_day_after_the_data_is_counted_on_the_exchange_calendar(
        sqlite_engine: Engine, tmp_path: Path, list_date: str, days: list[str], now: str,
        limits: tuple[D | None, D | None]) -> None:
    provider = _local(tmp_path, days, code="603999.SH", list_date=list_date)
    config = PaperConfig(DEFAULT_RATES, RiskLimits(D("1000000"), D("1"), D("0.05")), D("100000"), "open", 7,
                         timedelta(minutes=30))
    moment = datetime.strptime(now, "%Y-%m-%d %H:%M").replace(tzinfo=SHANGHAI)
    paper = PaperBroker(sqlite_engine, provider, "new-listing", config, now=lambda: moment)
    preview = paper.preview(OrderRequest("nl-1", "603999.SH", "buy", 100, "market", None, reason="t",
                                         approved_by="U1"))
    assert preview.session_date == moment.strftime("%Y%m%d")
    assert (preview.limit_up, preview.limit_down) == limits  # ±10 % of 10.00 from day 6
    failed = [c.detail for c in preview.failed]
    assert failed == ([] if limits[0] else ["no daily price limit that day (a new listing): use a limit order"])
