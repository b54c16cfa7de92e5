from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from testkit.fakes.tushare_server import (
    DROP,
    GOOD_TOKEN,
    NO_PERMISSION_TOKEN,
    RATE_LIMITED_TOKEN,
    ROW_LIMIT,
    FakeTushare,
    TushareServer,
)
from tools.data.schema import BAR_FIELDS, INDICATOR_FIELDS, DataError
from tools.data.tushare import TushareError, TushareProvider


@pytest.fixture(scope="module")
def bars(shared_data: Path) -> pd.DataFrame:
    frame = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet")
    frame = frame[frame.tradestatus == 1]
    return frame[["ts_code", "trade_date", *BAR_FIELDS]].reset_index(drop=True)


@pytest.fixture(scope="module")
def basics(bars: pd.DataFrame) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    keys = bars[bars.trade_date >= "20200101"][["ts_code", "trade_date"]].reset_index(drop=True)
    values = {f: rng.uniform(1, 100, len(keys)).round(4) for f in INDICATOR_FIELDS}
    return pd.concat([keys, pd.DataFrame(values)], axis=1)


@pytest.fixture
def server(bars: pd.DataFrame, basics: pd.DataFrame) -> Iterator[TushareServer]:
    with TushareServer(FakeTushare({"daily": bars, "daily_basic": basics})) as srv:
        yield srv


def test_daily_pages_through_the_row_limit_and_matches_the_source(server: TushareServer,
                                                                  bars: pd.DataFrame) -> None:
    provider = TushareProvider(GOOD_TOKEN, server.url)
    codes = sorted(bars.ts_code.unique())[:40]
    frame = provider.daily(codes, "20190101", "20191231")
    expected = bars[bars.ts_code.isin(codes) & bars.trade_date.between("20190101", "20191231")]
    assert len(frame) == len(expected) > ROW_LIMIT
    assert len(server.fake.requests) >= 2
    assert {r["params"]["offset"] for r in server.fake.requests} >= {0, ROW_LIMIT}
    merged = frame.merge(expected, on=["ts_code", "trade_date"], suffixes=("", "_src"))
    assert len(merged) == len(expected)
    for field in BAR_FIELDS:
        np.testing.assert_allclose(merged[field], merged[f"{field}_src"])
    request = server.fake.requests[0]
    assert request["api_name"] == "daily" and request["token"] == GOOD_TOKEN
    assert request["fields"].split(",") == ["ts_code", "trade_date", *BAR_FIELDS]


def test_many_codes_are_batched(server: TushareServer, bars: pd.DataFrame) -> None:
    provider = TushareProvider(GOOD_TOKEN, server.url)
    codes = sorted(bars.ts_code.unique())[:120]
    close = provider.wide("close", codes, "20200601", "20200610")
    assert list(close.columns) == codes
    assert max(len(r["params"]["ts_code"].split(",")) for r in server.fake.requests) <= 50


def test_daily_basic_fields(server: TushareServer, basics: pd.DataFrame) -> None:
    provider = TushareProvider(GOOD_TOKEN, server.url)
    frame = provider.daily_basic("000001.SZ,600519.SH", "20200101", "20200301", ["pe", "pb", "total_mv"])
    assert list(frame.columns) == ["ts_code", "trade_date", "pe", "pb", "total_mv"]
    src = basics.set_index(["ts_code", "trade_date"]).loc[("600519.SH", frame.trade_date.iloc[-1]), "pe"]
    assert frame[frame.ts_code == "600519.SH"]["pe"].iloc[-1] == src


def test_bad_token_is_not_retried(server: TushareServer) -> None:
    waits: list[float] = []
    with pytest.raises(TushareError, match="rejected the token .*TUSHARE_TOKEN"):
        TushareProvider("wrong", server.url, sleep=waits.append).daily("000001.SZ", "20200101", "20200201")
    assert server.fake.posts == 1 and waits == []


def test_no_permission(server: TushareServer) -> None:
    with pytest.raises(TushareError, match="no permission for tushare daily_basic"):
        TushareProvider(NO_PERMISSION_TOKEN, server.url).daily_basic("000001.SZ", "20200101", "20200201")
    assert server.fake.posts == 1


def test_server_errors_and_dropped_connections_are_retried_with_backoff(server: TushareServer,
                                                                        bars: pd.DataFrame) -> None:
    waits: list[float] = []
    server.fake.faults = [500, DROP, 503]
    provider = TushareProvider(GOOD_TOKEN, server.url, sleep=waits.append, retry_backoff=0.5)
    frame = provider.daily("000001.SZ", "20200101", "20200201")
    expected = bars[(bars.ts_code == "000001.SZ") & bars.trade_date.between("20200101", "20200201")]
    assert len(frame) == len(expected) > 10
    assert waits == [0.5, 1.0, 2.0]
    assert server.fake.posts == 4 and len(server.fake.requests) == 1


def test_retries_are_bounded(server: TushareServer) -> None:
    waits: list[float] = []
    server.fake.faults = [502] * 10
    provider = TushareProvider(GOOD_TOKEN, server.url, sleep=waits.append, retries=2, retry_backoff=0.01)
    with pytest.raises(TushareError, match="HTTP 502 for daily .*gave up after 3 attempts"):
        provider.daily("000001.SZ", "20200101", "20200201")
    assert server.fake.posts == 3 and len(waits) == 2 and server.fake.requests == []


@pytest.mark.parametrize("status", [400, 401, 404])
def test_client_errors_are_not_retried(server: TushareServer, status: int) -> None:
    waits: list[float] = []
    server.fake.faults = [status, status]
    with pytest.raises(TushareError, match=f"HTTP {status} for daily$"):
        TushareProvider(GOOD_TOKEN, server.url, sleep=waits.append).daily("000001.SZ", "20200101", "20200201")
    assert server.fake.posts == 1 and waits == []


def test_rate_limit_is_retried_then_reported(server: TushareServer) -> None:
    waits: list[float] = []
    server.fake.rate_limited_calls = 2
    provider = TushareProvider(RATE_LIMITED_TOKEN, server.url, sleep=waits.append)
    assert len(provider.daily("000001.SZ", "20200101", "20200201")) > 10
    assert len(waits) == 2 and waits[1] > waits[0]
    server.fake.rate_limited_calls = 100
    with pytest.raises(TushareError, match="rate limit"):
        provider.daily("000002.SZ", "20200101", "20200201")


def test_unreachable_server_is_retried_then_a_clear_error() -> None:
    waits: list[float] = []
    provider = TushareProvider(GOOD_TOKEN, "http://127.0.0.1:9", timeout=2, sleep=waits.append)
    with pytest.raises(TushareError, match="cannot reach tushare at http://127.0.0.1:9: ConnectError .*4 attempts"):
        provider.daily("000001.SZ", "20200101", "20200201")
    assert waits == [1.0, 2.0, 4.0]


def test_unknown_code_is_named(server: TushareServer) -> None:
    with pytest.raises(DataError, match="no daily rows for 999999.SZ"):
        TushareProvider(GOOD_TOKEN, server.url).daily("999999.SZ", "20200101", "20200201")


def test_token_never_in_repr() -> None:
    assert GOOD_TOKEN not in repr(TushareProvider(GOOD_TOKEN, "http://127.0.0.1:9"))
