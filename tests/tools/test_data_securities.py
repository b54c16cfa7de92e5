"""Securities (name, listing date, ST history), trading calendars, last dates and price bases of every provider;
tushare through the loopback fake server."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from graphs import names
from testkit.fakes.tushare_server import GOOD_TOKEN, FakeTushare, TushareServer
from tools.data.cache import CachingProvider
from tools.data.factory import provider_from_settings
from tools.data.local import LocalProvider, SampleProvider, sample_dir
from tools.data.schema import DataError
from tools.data.securities import Security
from tools.data.tushare import TushareProvider
from tools.settings import Settings

SPRING_FESTIVAL_2020 = ["20200120", "20200121", "20200122", "20200123", "20200203", "20200204", "20200205",
                        "20200206", "20200207", "20200210"]  # the 2020 holiday was extended to 20200202

# Rows in tushare's shapes. 600848.SH's name changes are the example of tushare's namechange documentation.
STOCK_BASIC = pd.DataFrame(
    [("600848.SH", "上海临港", "19940324", "L"), ("000001.SZ", "平安银行", "19910403", "L"),
     ("600087.SH", "退市长油", "19970618", "D")],
    columns=["ts_code", "name", "list_date", "list_status"])
NAMECHANGE = pd.DataFrame(
    [("600848.SH", "上海临港", "20151118", None), ("600848.SH", "自仪股份", "20070514", "20151117"),
     ("600848.SH", "ST自仪", "20061026", "20070513"), ("600848.SH", "SST自仪", "20061009", "20061025"),
     ("600848.SH", "ST自仪", "20010508", "20061008"), ("600848.SH", "自仪股份", "19940324", "20010507"),
     ("000001.SZ", "平安银行", "20120802", None), ("000001.SZ", "深发展Ａ", "19910403", "20120801"),
     ("600087.SH", "*ST长油", "20130507", None), ("600087.SH", "长航油运", "19970618", None)],
    columns=["ts_code", "name", "start_date", "end_date"])
EXPECTED = {
    "600848.SH": Security("600848.SH", "上海临港", "19940324", (("20010508", "20070513"),)),
    "600087.SH": Security("600087.SH", "退市长油", "19970618", (("20130507", None),)),
    "000001.SZ": Security("000001.SZ", "平安银行", "19910403", ()),
    "999999.SZ": Security("999999.SZ", None, None, None),
}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def sample() -> SampleProvider:
    return SampleProvider()


@pytest.fixture(scope="module")
def bars() -> pd.DataFrame:
    return pd.read_parquet(sample_dir() / "daily.parquet")


@pytest.fixture(scope="module")
def trade_cal(bars: pd.DataFrame) -> pd.DataFrame:
    days = pd.date_range("2020-01-01", "2020-07-31").strftime("%Y%m%d")
    open_days = set(bars["trade_date"])
    return pd.DataFrame({"exchange": "SSE", "cal_date": days, "is_open": [int(d in open_days) for d in days]})


@pytest.fixture
def server(bars: pd.DataFrame, trade_cal: pd.DataFrame) -> Iterator[TushareServer]:
    tables = {"daily": bars[bars.trade_date < "20200630"], "stock_basic": STOCK_BASIC, "namechange": NAMECHANGE,
              "trade_cal": trade_cal}
    with TushareServer(FakeTushare(tables)) as srv:
        yield srv


def _tushare(server: TushareServer, today: date = date(2020, 6, 30)) -> TushareProvider:
    return TushareProvider(GOOD_TOKEN, server.url, today=lambda: today)


def _calls(server: TushareServer, api_name: str) -> list[dict]:
    """Params (without paging) of the answered requests to one endpoint."""
    return [{k: v for k, v in r["params"].items() if k not in ("limit", "offset")}
            for r in server.fake.requests if r["api_name"] == api_name]


def test_is_st_reads_the_periods_inclusively() -> None:
    security = Security("600848.SH", st_periods=(("20010508", "20070513"), ("20200506", None)))
    assert [security.is_st(day) for day in ("20010507", "20010508", "2007-05-13", "20070514", "20991231")] == [
        False, True, True, False, True]
    assert Security("000001.SZ", st_periods=()).is_st("20200102") is False
    assert Security("000001.SZ").is_st("20200102") is None


def test_sample_names_and_unknown_codes(sample: SampleProvider) -> None:
    found = sample.securities("600519.sh,999999.SZ,000002.SZ")
    assert list(found) == ["600519.SH", "999999.SZ", "000002.SZ"]
    assert found["600519.SH"] == Security("600519.SH", "贵州茅台", None, None)
    assert found["000002.SZ"].name == "万  科Ａ"  # as the source list spells it
    assert found["999999.SZ"] == Security("999999.SZ", None, None, None)
    assert found["600519.SH"].is_st("20200102") is None
    with pytest.raises(DataError, match="malformed ts_code '600519'"):
        sample.securities("600519")


def test_every_sample_code_has_a_name(sample: SampleProvider) -> None:
    names = sample.securities(sorted(sample.known_codes()))
    assert len(names) == 260 and all(s.name for s in names.values())


def test_sample_calendar_and_last_date(sample: SampleProvider) -> None:
    assert sample.calendar("20200120", "2020-02-10") == SPRING_FESTIVAL_2020
    assert sample.calendar("20200820", "20991231") == ["20200820", "20200821", "20200824"]
    assert sample.calendar("20180101", "20181231") == []
    assert sample.last_date() == "20200824"
    with pytest.raises(DataError, match="start date 20200210 is after end date 20200120"):
        sample.calendar("20200210", "20200120")


def test_local_stock_basic_and_namechange_files(tmp_path: Path, sample: SampleProvider) -> None:
    bars = sample.daily("000001.SZ,000002.SZ", "20200102", "20200110").assign(is_st=[1, 0] * 7)
    bars.to_csv(tmp_path / "daily.csv", index=False)
    (tmp_path / "stock_basic.csv").write_text("ts_code,name,list_date\n000001.SZ,平安银行,19910403\n"
                                              "000002.SZ,万科A,\n600848.SH,上海临港,1994-03-24\n", encoding="utf-8")
    NAMECHANGE[NAMECHANGE.ts_code == "600848.SH"].to_csv(tmp_path / "namechange.csv", index=False)
    found = LocalProvider(tmp_path).securities(["600848.SH", "000001.SZ", "000002.SZ", "600000.SH"])
    assert found == {
        "600848.SH": Security("600848.SH", "上海临港", "19940324", (("20010508", "20070513"),)),
        # no name changes listed: ST history from the daily file's is_st column, its last day carried forward
        "000001.SZ": Security("000001.SZ", "平安银行", "19910403", (("20200102", "20200110"),), "20200110"),
        "000002.SZ": Security("000002.SZ", "万科A", None, (), "20200110"),
        "600000.SH": Security("600000.SH", None, None, None),
    }


def test_local_namechange_rows_without_end_dates(tmp_path: Path, sample: SampleProvider) -> None:
    sample.daily("000001.SZ", "20200102", "20200103").to_csv(tmp_path / "daily.csv", index=False)
    NAMECHANGE[NAMECHANGE.ts_code == "600087.SH"].to_parquet(tmp_path / "namechange.parquet")
    found = LocalProvider(tmp_path).securities("600087.SH,000001.SZ")
    assert found["600087.SH"] == Security("600087.SH", None, None, (("20130507", None),))
    assert found["000001.SZ"] == Security("000001.SZ", None, None, None)  # no ST source for it: unknown


def test_local_is_st_flags_become_periods_counting_suspended_days(tmp_path: Path) -> None:
    rows = [("20200102", 1, 0), ("20200103", 1, 1), ("20200106", 0, 1), ("20200107", 1, 0), ("20200108", 1, 1)]
    frame = pd.DataFrame({"ts_code": "000408.SZ", "trade_date": [d for d, _, _ in rows], "close": 10.0,
                          "tradestatus": [t for _, t, _ in rows], "is_st": [s for _, _, s in rows]})
    frame.to_csv(tmp_path / "daily.csv", index=False)
    provider = LocalProvider(tmp_path)
    assert provider.securities("000408.SZ")["000408.SZ"].st_periods == (("20200103", "20200106"),
                                                                        ("20200108", "20200108"))
    assert list(provider.daily("000408.SZ", "20200101", "20200110")["trade_date"]) == [
        "20200102", "20200103", "20200107", "20200108"]  # the suspended day has no bar
    assert provider.calendar("20200101", "20200110") == ["20200102", "20200103", "20200107", "20200108"]


def test_baostock_is_st_history(shared_data: Path) -> None:
    found = LocalProvider(shared_data / "cn_csi300_baostock_qfq").securities("000408.SZ,000792.SZ,000001.SZ")
    assert found["000408.SZ"].st_periods == (("20170103", "20170522"), ("20200506", "20200824"))
    assert found["000792.SZ"].st_periods == (("20190430", "20200824"),)
    assert found["000001.SZ"] == Security("000001.SZ", None, None, (), "20200824")
    assert [found["000408.SZ"].is_st(d) for d in ("20170522", "20170523", "20200506")] == [True, False, True]
    # the session after the data's end (issue 38, item 4): the last known status, said to be carried forward
    assert [found[code].is_st("20200825") for code in ("000408.SZ", "000792.SZ", "000001.SZ")] == [True, True, False]
    assert found["000792.SZ"].st_carried_from("20200825") == "20200824"
    assert found["000792.SZ"].st_carried_from("20200824") is None


def test_price_basis_of_each_provider(tmp_path: Path, sample: SampleProvider) -> None:
    sample.daily("000001.SZ", "20200102", "20200103").to_csv(tmp_path / "daily.csv", index=False)
    assert sample.price_basis == "forward-adjusted"
    assert LocalProvider(tmp_path).price_basis == "unknown"
    assert LocalProvider(tmp_path, price_basis="unadjusted").price_basis == "unadjusted"
    assert TushareProvider(GOOD_TOKEN, "http://127.0.0.1:9").price_basis == "unadjusted"
    assert CachingProvider(sample).price_basis == "forward-adjusted"
    with pytest.raises(DataError, match="price basis 'qfq' is not one of: unadjusted, forward-adjusted, unknown"):
        LocalProvider(tmp_path, price_basis="qfq")  # type: ignore[arg-type]
    settings = Settings(_env_file=None, QUANTDESK_DATA_PROVIDER="local", QUANTDESK_LOCAL_DATA=str(tmp_path),
                        QUANTDESK_LOCAL_PRICE_BASIS="unadjusted")
    assert provider_from_settings(settings).price_basis == "unadjusted"


def test_tushare_securities_ask_every_list_status(server: TushareServer) -> None:
    found = _tushare(server).securities(list(EXPECTED))
    assert found == EXPECTED
    assert _calls(server, "stock_basic") == [{"list_status": "L"}, {"list_status": "D"}, {"list_status": "P"}]
    assert _calls(server, "namechange") == [{"ts_code": "600848.SH"}, {"ts_code": "600087.SH"},
                                            {"ts_code": "000001.SZ"}]


def test_tushare_securities_of_many_codes_read_namechange_once(bars: pd.DataFrame, trade_cal: pd.DataFrame) -> None:
    codes = [f"{600100 + i}.SH" for i in range(21)]
    basics = pd.DataFrame({"ts_code": codes, "name": [f"股票{i}" for i in range(21)], "list_date": "20000101",
                           "list_status": "L"})
    changes = pd.concat([basics.assign(start_date="20000101", end_date=None)[NAMECHANGE.columns],
                         pd.DataFrame([("600107.SH", "*ST股票7", "20190510", "20200612")], columns=NAMECHANGE.columns)])
    with TushareServer(FakeTushare({"stock_basic": basics, "namechange": changes})) as srv:
        found = TushareProvider(GOOD_TOKEN, srv.url).securities(codes)
    assert found["600107.SH"] == Security("600107.SH", "股票7", "20000101", (("20190510", "20200612"),))
    assert found["600100.SH"] == Security("600100.SH", "股票0", "20000101", ())
    assert _calls(srv, "namechange") == [{}]


def test_tushare_lists_every_stocks_name_in_three_calls(server: TushareServer) -> None:
    """Names for requests (贵州茅台 → 600519.SH) come from stock_basic of every list status, through the cache too."""
    expected = {"600848.SH": "上海临港", "000001.SZ": "平安银行", "600087.SH": "退市长油"}
    assert _tushare(server).stock_names() == expected
    assert CachingProvider(_tushare(server)).stock_names() == expected
    assert _calls(server, "stock_basic") == [{"list_status": s} for s in "LDP"] * 2


def test_names_on_tushare_resolve_and_an_outage_is_retried_later(server: TushareServer) -> None:
    now = [0.0]
    server.fake.faults.append(503)
    names.use(TushareProvider(GOOD_TOKEN, server.url, retries=0))
    try:
        assert names.table(lambda: now[0]).codes_for("上海临港") == ()  # tushare failed: nothing resolves
        posts = server.fake.posts
        now[0] = names.RETRY_SECONDS - 1
        assert names.table(lambda: now[0]).codes_for("上海临港") == ()
        assert server.fake.posts == posts  # not asked again within RETRY_SECONDS
        now[0] = names.RETRY_SECONDS + 1
        assert names.table(lambda: now[0]).codes_for("上海临港") == ("600848.SH",)
        assert names.table(lambda: now[0]).codes_for("临港") == ("600848.SH",)
        assert server.fake.posts == posts + 3
    finally:
        names.use(SampleProvider())


def test_tushare_calendar(server: TushareServer) -> None:
    assert _tushare(server).calendar("20200120", "20200210") == SPRING_FESTIVAL_2020
    assert _calls(server, "trade_cal") == [{"exchange": "SSE", "start_date": "20200120", "end_date": "20200210",
                                            "is_open": "1"}]


def test_tushare_last_date_is_the_latest_open_day_with_bars(server: TushareServer) -> None:
    assert _tushare(server).last_date() == "20200629"  # today's bars are not out yet
    assert _calls(server, "trade_cal")[0]["start_date"] == "20200531"
    assert [c["trade_date"] for c in _calls(server, "daily")] == ["20200630", "20200629"]


def test_tushare_last_date_looks_back_ten_open_days(server: TushareServer, bars: pd.DataFrame) -> None:
    server.fake.tables["daily"] = bars[bars.trade_date < "20200601"]
    assert _tushare(server).last_date() is None
    assert [c["trade_date"] for c in _calls(server, "daily")] == [
        "20200630", "20200629", "20200624", "20200623", "20200622", "20200619", "20200618", "20200617",
        "20200616", "20200615"]


def test_cache_passes_the_sample_through(sample: SampleProvider) -> None:
    cached = CachingProvider(sample)
    assert cached.securities("600519.SH,999999.SZ") == {"600519.SH": Security("600519.SH", "贵州茅台"),
                                                        "999999.SZ": Security("999999.SZ")}
    assert cached.calendar("20200120", "20200210") == SPRING_FESTIVAL_2020
    assert cached.last_date() == "20200824"


def test_cache_keeps_securities_and_last_date_for_their_ttls(server: TushareServer) -> None:
    clock = Clock()
    cached = CachingProvider(_tushare(server), recent_ttl=600, securities_ttl=3600, clock=clock)
    assert cached.securities("600848.SH,000001.SZ") == {c: EXPECTED[c] for c in ("600848.SH", "000001.SZ")}
    assert cached.last_date() == "20200629"
    calls = len(server.fake.requests)
    clock.now = 599.0
    assert cached.securities("000001.SZ,600848.SH") == {c: EXPECTED[c] for c in ("000001.SZ", "600848.SH")}
    assert cached.last_date() == "20200629"
    assert len(server.fake.requests) == calls
    assert cached.securities("600848.SH,600087.SH")["600087.SH"] == EXPECTED["600087.SH"]
    assert _calls(server, "namechange")[2:] == [{"ts_code": "600087.SH"}]
    clock.now = 601.0
    server.fake.tables["daily"] = server.fake.tables["daily"][lambda t: t.trade_date < "20200629"]
    assert cached.last_date() == "20200624"
    clock.now = 3601.0
    cached.securities("600848.SH")
    assert _calls(server, "namechange")[3:] == [{"ts_code": "600848.SH"}]
    calendars = len(_calls(server, "trade_cal"))
    assert cached.calendar("20200120", "20200210") == cached.calendar("20200120", "20200210")
    assert len(_calls(server, "trade_cal")) == calendars + 2  # passed through
