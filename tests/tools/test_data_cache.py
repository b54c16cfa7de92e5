"""The data cache in front of the loopback fake tushare server, counting the requests that reach it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from testkit.fakes.tushare_server import GOOD_TOKEN, FakeTushare, TushareServer
from tools.data.cache import CachingProvider
from tools.data.local import LocalProvider
from tools.data.schema import BAR_FIELDS
from tools.data.tushare import TushareProvider

TODAY = date(2020, 6, 30)  # the tests' "today": rows from 20200623 on are recent with recent_days=7


@pytest.fixture(scope="module")
def bars(shared_data: Path) -> pd.DataFrame:
    frame = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet")
    frame = frame[(frame.tradestatus == 1) & frame.ts_code.isin(["000001.SZ", "000002.SZ", "600000.SH"])]
    return frame[["ts_code", "trade_date", *BAR_FIELDS]].reset_index(drop=True)


@pytest.fixture
def server(bars: pd.DataFrame) -> Iterator[TushareServer]:
    with TushareServer(FakeTushare({"daily": bars.copy()})) as srv:
        yield srv


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _ranges(server: TushareServer, since: int = 0) -> list[tuple[str, str, str]]:
    """(codes, start, end) of the requests the server answered, from the `since`-th on."""
    return [(r["params"]["ts_code"], r["params"]["start_date"], r["params"]["end_date"])
            for r in server.fake.requests[since:]]


def test_cache_serves_repeats_and_narrower_ranges(server: TushareServer) -> None:
    cached = CachingProvider(TushareProvider(GOOD_TOKEN, server.url))
    first = cached.wide("close", "000001.SZ,600000.SH", "20200101", "20200630")
    calls = len(server.fake.requests)
    again = cached.wide("close", "000001.SZ,600000.SH", "20200101", "20200630")
    narrower = cached.wide("close", "600000.SH", "20200301", "20200331")
    assert len(server.fake.requests) == calls
    pd.testing.assert_frame_equal(first, again)
    pd.testing.assert_frame_equal(narrower, first.loc["2020-03-01":"2020-03-31", ["600000.SH"]])
    cached.wide("close", "000001.SZ,000002.SZ", "20200101", "20200630")
    assert _ranges(server, calls) == [("000002.SZ", "20200101", "20200630")]


def test_cache_in_front_of_local_files(shared_data: Path) -> None:
    cached = CachingProvider(LocalProvider(shared_data / "cn_csi300_tushare"))
    cached.daily("000001.SZ", "20200101", "20201231")
    cached.daily("000001.SZ", "20200601", "20200630")
    assert cached.misses == 1
    cached.daily("000001.SZ", "20190101", "20201231")
    assert cached.misses == 2
    cached.daily("000001.SZ", "20190301", "20201130")
    assert cached.misses == 2


def test_a_narrower_disjoint_request_does_not_replace_a_wider_range(server: TushareServer) -> None:
    cached = CachingProvider(TushareProvider(GOOD_TOKEN, server.url))
    wide = cached.daily("000001.SZ", "20190101", "20200630")
    january = cached.daily("000001.SZ", "20180101", "20180131")
    assert january["trade_date"].between("20180101", "20180131").all() and len(january) > 15
    calls = len(server.fake.requests)
    again = cached.daily("000001.SZ", "20190101", "20200630")
    assert len(server.fake.requests) == calls
    pd.testing.assert_frame_equal(again, wide)


def test_extending_a_range_fetches_only_the_missing_part(server: TushareServer) -> None:
    inner = TushareProvider(GOOD_TOKEN, server.url)
    cached = CachingProvider(inner)
    cached.daily("000001.SZ,600000.SH", "20200101", "20200331")
    calls = len(server.fake.requests)
    later = cached.daily("000001.SZ,600000.SH", "20200101", "20200630")
    earlier = cached.daily("000001.SZ,600000.SH", "20191201", "20200630")
    assert _ranges(server, calls) == [("000001.SZ,600000.SH", "20200401", "20200630"),
                                      ("000001.SZ,600000.SH", "20191201", "20191231")]
    calls = len(server.fake.requests)
    pd.testing.assert_frame_equal(earlier, inner.daily("000001.SZ,600000.SH", "20191201", "20200630"))
    pd.testing.assert_frame_equal(later, earlier[earlier.trade_date >= "20200101"].reset_index(drop=True))
    cached.daily("000001.SZ", "20191215", "20200615")
    assert len(server.fake.requests) == calls + 1  # only the uncached `inner.daily` above went out


def test_recent_rows_are_refetched_after_the_ttl_and_history_is_not(server: TushareServer,
                                                                   bars: pd.DataFrame) -> None:
    clock = Clock()
    cached = CachingProvider(TushareProvider(GOOD_TOKEN, server.url), recent_days=7, recent_ttl=600,
                             clock=clock, today=lambda: TODAY)
    table = server.fake.tables["daily"]
    server.fake.tables["daily"] = table[table.trade_date < "20200630"]  # today's bars are not published yet
    first = cached.wide("close", "000001.SZ", "20200101", "20200630")
    assert first.index[-1] == pd.Timestamp("2020-06-29")
    revised = table.copy()
    revised.loc[revised.trade_date == "20200102", "close"] = -1.0  # history never changes in practice
    server.fake.tables["daily"] = revised  # ... and the bars of 20200630 are out now
    calls = len(server.fake.requests)

    clock.now = 599.0
    pd.testing.assert_frame_equal(cached.wide("close", "000001.SZ", "20200101", "20200630"), first)
    assert len(server.fake.requests) == calls

    clock.now = 601.0
    fresh = cached.wide("close", "000001.SZ", "20200101", "20200630")
    assert _ranges(server, calls) == [("000001.SZ", "20200623", "20200630")]
    assert fresh.index[-1] == pd.Timestamp("2020-06-30")
    assert fresh.loc["2020-06-30", "000001.SZ"] == 12.80
    assert fresh.loc["2020-01-02", "000001.SZ"] == first.loc["2020-01-02", "000001.SZ"] > 0

    clock.now = 1200.0  # within the TTL of the refetch at 601
    cached.wide("close", "000001.SZ", "20200101", "20200630")
    clock.now = 5000.0
    history = cached.wide("close", "000001.SZ", "20200101", "20200531")
    pd.testing.assert_frame_equal(history, first.loc[:"2020-05-31"])
    assert len(server.fake.requests) == calls + 1


def test_a_zero_ttl_never_serves_recent_rows_from_the_cache(server: TushareServer) -> None:
    cached = CachingProvider(TushareProvider(GOOD_TOKEN, server.url), recent_days=7, recent_ttl=0,
                             clock=Clock(), today=lambda: TODAY)
    cached.daily("000001.SZ", "20200601", "20200630")
    calls = len(server.fake.requests)
    cached.daily("000001.SZ", "20200601", "20200630")
    cached.daily("000001.SZ", "20200601", "20200620")
    assert _ranges(server, calls) == [("000001.SZ", "20200623", "20200630")]
