from __future__ import annotations

import sys
from collections.abc import Iterator
from datetime import UTC, datetime

import pandas as pd
import pytest

from testkit.fakes.exchange_server import HOUR_MS, SPOT_PATHS, T0, ExchangeServer, FakeBinance, kline_row
from tools.data.klines import (
    TIMEFRAMES,
    AShareKlines,
    CryptoKlines,
    KlineError,
    KlineFetchError,
    klines_for,
    symbol_kind,
)
from tools.data.local import SampleProvider
from tools.settings import Settings

ADJUSTED = ("prices are forward-adjusted (bundled sample provider)",)


@pytest.fixture(scope="module")
def ashare() -> AShareKlines:
    return AShareKlines(SampleProvider())


@pytest.fixture
def server() -> Iterator[ExchangeServer]:
    with ExchangeServer() as srv:
        yield srv


@pytest.fixture
def crypto(server: ExchangeServer) -> CryptoKlines:
    return CryptoKlines("binance", server.url, timeout=5)


def rows(frame: pd.DataFrame) -> list[tuple]:
    return [(str(t), *bar) for t, bar in zip(frame.index, frame.itertuples(index=False), strict=True)]


# --- A-share daily from the bundled sample ---------------------------------------------------------------


def test_ashare_last_bars_up_to_the_providers_last_date(ashare: AShareKlines) -> None:
    result = ashare.klines("600519.sh", "1d", limit=3)
    assert (result.symbol, result.timeframe, result.source, result.notes) == (
        "600519.SH", "1d", "bundled sample", ADJUSTED)
    assert list(result.frame.columns) == ["open", "high", "low", "close", "volume"]
    assert result.frame.index.name == "time" and str(result.frame.index.tz) == "Asia/Shanghai"
    # volume in shares: the sample's vol 22382.33, 25082.41 and 30933.44 lots times 100
    assert rows(result.frame) == [
        ("2020-08-20 00:00:00+08:00", 1674.0, 1679.0, 1656.0, 1664.0, 2238233.0),
        ("2020-08-21 00:00:00+08:00", 1673.0, 1698.0, 1671.0, 1676.0, 2508241.0),
        ("2020-08-24 00:00:00+08:00", 1700.0, 1708.0, 1691.01, 1696.35, 3093344.0),
    ]


def test_ashare_start_and_end_select_trade_dates_inclusively(ashare: AShareKlines) -> None:
    result = ashare.klines("600519.SH", "1d", start="2019-01-02", end="20190104")
    assert rows(result.frame) == [
        ("2019-01-02 00:00:00+08:00", 594.14003936, 596.107584, 579.55878032, 583.42568736, 6228649.0),
        ("2019-01-03 00:00:00+08:00", 584.38997904, 586.03609312, 570.5879456, 574.67888, 3097735.0),
        ("2019-01-04 00:00:00+08:00", 572.02951296, 591.89002544, 566.90610464, 586.367264, 3768347.0),
    ]


def test_ashare_limit_counts_trading_days_back_from_end(ashare: AShareKlines) -> None:
    # 2019-04-05 was Qingming: the four trading days up to 2019-04-09 skip it and the weekend
    result = ashare.klines("600519.SH", "1d", limit=4, end=datetime(2019, 4, 9))
    assert [t.strftime("%Y%m%d") for t in result.frame.index] == ["20190403", "20190404", "20190408", "20190409"]
    within = ashare.klines("600519.SH", "1d", limit=2, start="20190401", end="20190412")
    assert [t.strftime("%Y%m%d") for t in within.frame.index] == ["20190411", "20190412"]


def test_ashare_defaults_and_short_ranges(ashare: AShareKlines) -> None:
    default = ashare.klines("600519.SH", "1d")
    assert len(default.frame) == 100 and str(default.frame.index[0]) == "2020-03-30 00:00:00+08:00"
    from_start = ashare.klines("600519.SH", "1d", start="20190601")
    assert len(from_start.frame) == 301 and from_start.notes == ADJUSTED
    short = ashare.klines("600519.SH", "1d", limit=5, end="20190103")
    assert len(short.frame) == 2
    assert short.notes == (*ADJUSTED, "only 2 of the 5 bars asked for exist between the first bar and "
                                      "2019-01-03 00:00:00+08:00")


def test_ashare_refuses_other_timeframes_and_bad_codes(ashare: AShareKlines) -> None:
    with pytest.raises(KlineError) as err:
        ashare.klines("600519.SH", "1h")
    assert str(err.value) == ("A-share klines are daily only: ask for timeframe 1d, not 1h "
                              "(the bundled sample provider has no intraday or weekly bars)")
    with pytest.raises(KlineError) as err:
        ashare.klines("600519", "1d")
    assert str(err.value) == ("malformed ts_code '600519': expected six digits and an exchange suffix, "
                              "like 000001.SZ, 600000.SH or 430047.BJ")
    with pytest.raises(KlineError) as err:
        ashare.klines("600519.SH", "1d", end="20181231")
    assert str(err.value).startswith("no daily rows for 600519.SH between ")


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"timeframe": "1H"}, f"unknown timeframe '1H'; did you mean 1h? use one of {', '.join(TIMEFRAMES)}"),
    ({"timeframe": "2d"}, f"unknown timeframe '2d'; use one of {', '.join(TIMEFRAMES)}"),
    ({"limit": 0}, "limit 0 is out of range; ask for 1 to 1000 bars"),
    ({"limit": 1001}, "limit 1001 is out of range; ask for 1 to 1000 bars"),
    ({"limit": 2.5}, "limit 2.5 is not a whole number of bars; ask for 1 to 1000"),
    ({"limit": True}, "limit True is not a whole number of bars; ask for 1 to 1000"),
    ({"start": "someday"}, "start 'someday' is not a date or time; use e.g. 20240301, 2024-03-01 or "
                           "2024-03-01T08:00"),
    ({"start": "20200105", "end": "20200102"},
     "start 2020-01-05 00:00:00+08:00 is after end 2020-01-02 00:00:00+08:00"),
])
def test_bad_requests_say_what_to_change(ashare: AShareKlines, kwargs: dict, message: str) -> None:
    args = {"timeframe": "1d", **kwargs}
    with pytest.raises(KlineError) as err:
        ashare.klines("600519.SH", args.pop("timeframe"), **args)
    assert str(err.value) == message
    assert isinstance(err.value, ValueError)


# --- crypto against the fake Binance ---------------------------------------------------------------------


def test_crypto_last_bars_come_from_the_spot_endpoints_only(server: ExchangeServer, crypto: CryptoKlines) -> None:
    result = crypto.klines("BTC/USDT", "1h", limit=3)
    assert (result.symbol, result.timeframe, result.source, result.notes) == ("BTC/USDT", "1h", "binance", ())
    assert str(result.frame.index.tz) == "UTC"
    assert rows(result.frame) == [
        ("2024-03-01 02:00:00+00:00", 61605.21, 62050.0, 61532.0, 61954.39, 1410.3095),
        ("2024-03-01 03:00:00+00:00", 61954.4, 62012.88, 61611.11, 61741.8, 980.11235),
        ("2024-03-01 04:00:00+00:00", 61741.8, 61990.0, 61602.5, 61932.06, 871.40011),
    ]
    assert server.fake.requests == [
        ("/api/v3/exchangeInfo", {}),
        ("/api/v3/klines", {"interval": "1h", "limit": "3", "symbol": "BTCUSDT"}),
    ]
    assert server.fake.unexpected == []
    # every API host of the exchange points at the fake, so nothing else could be contacted
    assert crypto.exchange.urls["api"]["public"] == f"{server.url}/api/v3"
    assert crypto.exchange.urls["api"]["fapiPublic"] == f"{server.url}/fapi/v1"
    assert crypto.exchange.urls["api"]["dapiPublic"] == f"{server.url}/dapi/v1"


def test_crypto_compact_symbol_and_range(server: ExchangeServer, crypto: CryptoKlines) -> None:
    result = crypto.klines(" btcusdt ", "1h", start="2024-03-01T01:00", end=datetime(2024, 3, 1, 3, tzinfo=UTC))
    assert result.symbol == "BTC/USDT"
    assert [(str(t), close) for t, close in result.frame["close"].items()] == [
        ("2024-03-01 01:00:00+00:00", 61605.21),
        ("2024-03-01 02:00:00+00:00", 61954.39),
        ("2024-03-01 03:00:00+00:00", 61741.8),
    ]
    assert server.fake.requests[-1] == ("/api/v3/klines", {
        "interval": "1h", "limit": "1000", "symbol": "BTCUSDT", "startTime": str(T0 + HOUR_MS),
        "endTime": str(T0 + 3 * HOUR_MS)})
    assert server.fake.paths == ["/api/v3/exchangeInfo", "/api/v3/klines"]


def test_crypto_long_range_keeps_its_last_1000_bars_with_a_note() -> None:
    bars = [kline_row(T0 + i * HOUR_MS, HOUR_MS, ("1.0", "2.0", "0.5", "1.5", "10.0")) for i in range(1200)]
    with ExchangeServer(FakeBinance(klines={("BTCUSDT", "1h"): bars})) as srv:
        result = CryptoKlines(api_url=srv.url).klines("BTC/USDT", "1h", start=pd.Timestamp(T0, unit="ms"),
                                                      end=pd.Timestamp(T0 + 1199 * HOUR_MS, unit="ms"))
        assert srv.fake.requests[-1][1] == {"interval": "1h", "limit": "1000", "symbol": "BTCUSDT",
                                            "endTime": str(T0 + 1199 * HOUR_MS)}
    assert len(result.frame) == 1000
    assert (str(result.frame.index[0]), str(result.frame.index[-1])) == (
        "2024-03-09 08:00:00+00:00", "2024-04-19 23:00:00+00:00")
    assert result.notes == ("the range holds more than 1000 bars; these are its last 1000 (narrow start/end)",)


def test_crypto_notes_a_bar_still_forming() -> None:
    hour_ms = int(datetime.now(UTC).timestamp() * 1000) // HOUR_MS * HOUR_MS
    bars = [kline_row(hour_ms + i * HOUR_MS, HOUR_MS, ("1.0", "2.0", "0.5", "1.5", "10.0")) for i in (-1, 0)]
    with ExchangeServer(FakeBinance(klines={("BTCUSDT", "1h"): bars})) as srv:
        result = CryptoKlines(api_url=srv.url).klines("BTC/USDT", "1h", limit=2)
    opened = pd.Timestamp(hour_ms, unit="ms")
    assert result.notes == (f"the last bar (opened {opened:%Y-%m-%d %H:%M} UTC) is still forming",)


def test_crypto_unknown_and_empty_symbols(server: ExchangeServer, crypto: CryptoKlines) -> None:
    with pytest.raises(KlineError) as err:
        crypto.klines("ETH/USDC", "1h", limit=3)
    assert str(err.value) == ("unknown symbol ETH/USDC on binance (spot markets); "
                              "did you mean ETH/USDT, ETH/BTC, BTC/USDT?")
    with pytest.raises(KlineError) as err:
        crypto.klines("XYZ/QQQ", "1h", limit=3)
    assert str(err.value) == "unknown symbol XYZ/QQQ on binance (spot markets); use BASE/QUOTE like BTC/USDT"
    with pytest.raises(KlineError) as err:
        crypto.klines("ETH/USDT", "1h", limit=3)
    assert str(err.value) == "no 1h klines for ETH/USDT from binance"
    with pytest.raises(KlineError) as err:
        crypto.klines("BTC/USDT/X", "1h")
    assert str(err.value) == ("malformed crypto symbol 'BTC/USDT/X': use BASE/QUOTE like BTC/USDT, "
                              "or the exchange's id like BTCUSDT")
    assert server.fake.paths == ["/api/v3/exchangeInfo", "/api/v3/klines"]


@pytest.mark.parametrize(("status", "message"), [
    (429, "binance is rate-limiting requests (HTTP 429); wait a minute and ask again"),
    (418, "binance has banned this IP for too many requests (HTTP 418); wait until the ban lifts before "
          "asking again"),
    (500, "binance is unavailable (HTTP 500); ask again later"),
    (503, "binance is unavailable (HTTP 503); ask again later"),
])
def test_crypto_http_faults_are_readable_and_pass(server: ExchangeServer, crypto: CryptoKlines, status: int,
                                                  message: str) -> None:
    server.fake.faults = [status]
    with pytest.raises(KlineFetchError) as err:
        crypto.klines("BTC/USDT", "1h", limit=3)  # the fault hits loading the markets
    assert str(err.value) == message
    crypto.klines("BTC/USDT", "1h", limit=3)
    server.fake.faults = [status]
    with pytest.raises(KlineFetchError) as err:
        crypto.klines("BTC/USDT", "1h", limit=3)  # now it hits the klines themselves
    assert str(err.value) == message
    assert len(crypto.klines("BTC/USDT", "1h", limit=3).frame) == 3
    assert server.fake.paths == ["/api/v3/exchangeInfo", "/api/v3/exchangeInfo", *["/api/v3/klines"] * 3]
    assert server.fake.unexpected == []


def test_crypto_unreachable_exchange() -> None:
    with ExchangeServer() as srv:
        url = srv.url
    with pytest.raises(KlineFetchError) as err:
        CryptoKlines(api_url=url, timeout=2).klines("BTC/USDT", "1h", limit=3)
    assert str(err.value).startswith(f"cannot reach binance at {url}: ")


def test_crypto_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(KlineError) as err:
        CryptoKlines("binanse")
    assert str(err.value).startswith("ccxt knows no exchange 'binanse'; did you mean binance, ")
    with pytest.raises(KlineError) as err:
        CryptoKlines(api_url="127.0.0.1:8080")
    assert str(err.value) == ("crypto API URL '127.0.0.1:8080' is not an http(s) URL like "
                              "https://api.binance.com")
    monkeypatch.setitem(sys.modules, "ccxt", None)  # as if ccxt were not installed
    with pytest.raises(KlineError) as err:
        CryptoKlines()
    assert str(err.value) == "crypto klines need the ccxt package: pip install 'quantdesk[crypto]'"


def test_spot_only_leaves_other_instances_alone(server: ExchangeServer, crypto: CryptoKlines) -> None:
    assert crypto.exchange.options["fetchMarkets"]["types"] == ["spot"]
    assert crypto.exchange.options["defaultType"] == "spot"
    other = CryptoKlines()
    assert other.exchange.urls["api"]["public"] == "https://api.binance.com/api/v3"


# --- choosing a provider ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("symbol", "kind"), [
    ("600519.SH", "a-share"), ("000001.sz", "a-share"), ("430047.BJ", "a-share"),
    ("BTC/USDT", "crypto"), ("btcusdt", "crypto"), ("ETHBTC", "crypto"), ("eth-usdt", "crypto"),
])
def test_symbol_kind(symbol: str, kind: str) -> None:
    assert symbol_kind(symbol) == kind


def test_symbol_kind_refuses_what_it_cannot_place() -> None:
    with pytest.raises(KlineError) as err:
        symbol_kind("600519")
    assert str(err.value) == ("'600519' needs its exchange suffix: 600519.SH (Shanghai), 600519.SZ (Shenzhen) "
                              "or 600519.BJ (Beijing)")
    with pytest.raises(KlineError) as err:
        symbol_kind("AAPL")
    assert str(err.value) == ("cannot tell what 'AAPL' is: use a ts_code like 600519.SH for A-shares, "
                              "or a pair like BTC/USDT for crypto")


def test_klines_for_follows_the_settings(server: ExchangeServer) -> None:
    settings = Settings(_env_file=None, QUANTDESK_CRYPTO_EXCHANGE="binance", QUANTDESK_CRYPTO_API_URL=server.url)
    provider = SampleProvider()
    ashare = klines_for("600519.SH", settings, provider)
    assert isinstance(ashare, AShareKlines) and ashare.provider is provider
    crypto = klines_for("BTCUSDT", settings, provider)
    assert isinstance(crypto, CryptoKlines) and klines_for("ETH/USDT", settings, provider) is crypto
    assert (crypto.exchange_id, crypto.api_url) == ("binance", server.url)
    assert crypto.klines("BTCUSDT", "1h", limit=1).frame["close"].tolist() == [61932.06]
    assert set(server.fake.paths) <= set(SPOT_PATHS)
