from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tools.data.local import LocalProvider, SampleProvider
from tools.data.schema import BAR_FIELDS, DataError, check_range, normalize_codes


@pytest.fixture(scope="module")
def sample() -> SampleProvider:
    return SampleProvider()


@pytest.fixture(scope="module")
def csi300(shared_data: Path) -> LocalProvider:
    return LocalProvider(shared_data / "cn_csi300_tushare")


@pytest.fixture(scope="module")
def baostock(shared_data: Path) -> LocalProvider:
    return LocalProvider(shared_data / "cn_csi300_baostock_qfq")


def test_sample_serves_the_tushare_bar_schema(sample: SampleProvider) -> None:
    frame = sample.daily("000001.SZ,600000.SH", "20200101", "20200331")
    assert list(frame.columns) == ["ts_code", "trade_date", *BAR_FIELDS]
    assert set(frame["ts_code"]) == {"000001.SZ", "600000.SH"}
    assert frame["trade_date"].str.fullmatch(r"\d{8}").all()
    assert frame["trade_date"].is_monotonic_increasing
    assert len(sample.known_codes()) == 260
    assert sample.date_range() == ("20190102", "20200824")


def test_sample_bars_carry_pre_close_and_never_zero_volume(sample: SampleProvider) -> None:
    fields = ["open", "high", "low", "close", "pre_close", "vol"]
    frame = sample.daily("600519.SH", "20190102", "20190103", fields)
    assert list(frame["trade_date"]) == ["20190102", "20190103"]
    np.testing.assert_allclose(frame[fields].to_numpy(), [
        [594.14003936, 596.107584, 579.55878032, 583.42568736, 574.68862032, 62286.49],
        [584.38997904, 586.03609312, 570.5879456, 574.67888, 583.42568736, 30977.35],
    ])
    everything = sample.daily(sorted(sample.known_codes()), "20190102", "20200824", ["vol", "pre_close"])
    assert len(everything) == 103562
    assert (everything["vol"] > 0).all() and everything["pre_close"].notna().all()


def test_real_prices_match_the_published_checks(csi300: LocalProvider) -> None:
    frame = csi300.daily("600519.SH", "20211231", "20221220", ["close"])
    closes = dict(zip(frame["trade_date"], frame["close"], strict=True))
    assert closes["20211231"] == 2050.00
    assert closes["20221220"] == 1715.00


def test_wide_frames_align_dates_and_codes(csi300: LocalProvider) -> None:
    codes = sorted(csi300.known_codes())[:20]
    close = csi300.wide("close", codes, "20220101", "20221220")
    assert list(close.columns) == codes
    assert isinstance(close.index, pd.DatetimeIndex)
    assert close.index.is_monotonic_increasing
    long = csi300.daily(codes, "20220101", "20221220", ["close"])
    assert close.notna().sum().sum() == len(long)
    one = long[(long.ts_code == codes[3])].set_index("trade_date")["close"]
    assert close[codes[3]].dropna().to_numpy().tolist() == one.to_numpy().tolist()


def test_panel_fetches_several_fields(sample: SampleProvider) -> None:
    panel = sample.panel(["close", "vol", "turnover_rate"], "000001.SZ,600519.SH", "20200101", "20200630")
    assert set(panel) == {"close", "vol", "turnover_rate"}
    assert panel["close"].shape == panel["turnover_rate"].shape
    assert (panel["vol"] > 0).all().all()


def test_suspended_rows_are_dropped(baostock: LocalProvider, shared_data: Path) -> None:
    raw = pd.read_parquet(shared_data / "cn_csi300_baostock_qfq" / "daily.parquet")
    suspended = raw[raw.tradestatus == 0].iloc[0]
    code, day = suspended.ts_code, suspended.trade_date
    frame = baostock.daily(code, "20170101", "20200824", ["close"])
    assert day not in set(frame["trade_date"])
    wide = baostock.wide("close", [code, "000001.SZ"], "20170101", "20200824")
    assert np.isnan(wide.loc[pd.Timestamp(day), code])


@pytest.mark.parametrize(
    ("codes", "start", "end", "fields", "message"),
    [
        ("0001.SZ", "20200101", "20200201", None, "malformed ts_code '0001.SZ'"),
        ("000001.XX", "20200101", "20200201", None, "malformed ts_code"),
        ("999999.SZ", "20200101", "20200201", None, "unknown ts_code 999999.SZ"),
        ("000001.SZ", "20200301", "20200201", None, "start date 20200301 is after end date 20200201"),
        ("000001.SZ", "2020-13-01", "20200201", None, "is not a date"),
        ("000001.SZ", "20150101", "20151231", None, "covers 20190102 to 20200824"),
        ("000001.SZ", "20200101", "20200201", ["pe"], "'pe' .*not available from the bundled sample provider;"),
        ("000001.SZ", "20200101", "20200201", ["eps"], "unknown field 'eps'; known fields: open, "),
        ("", "20200101", "20200201", None, "no ts_code given"),
    ],
)
def test_bad_requests_get_clear_errors(sample: SampleProvider, codes: str, start: str, end: str,
                                       fields: list[str] | None, message: str) -> None:
    with pytest.raises(DataError, match=message.replace("(", r"\(")):
        sample.daily(codes, start, end, fields)


def test_daily_joins_the_fields_of_other_datasets(sample: SampleProvider) -> None:
    codes, start, end = "000001.SZ,600519.SH", "20200101", "20200331"
    turnover = sample.daily(codes, start, end, ["turnover_rate"])
    indicators = sample.daily_basic(codes, start, end)
    assert list(turnover.columns) == ["ts_code", "trade_date", "turnover_rate"]
    pd.testing.assert_frame_equal(turnover, indicators)
    both = sample.daily(codes, start, end, ["close", "turnover_rate", "close"])
    assert list(both.columns) == ["ts_code", "trade_date", "close", "turnover_rate"]
    assert both["trade_date"].is_monotonic_increasing and both.notna().all().all()
    bars = sample.daily(codes, start, end, ["close"])
    pd.testing.assert_frame_equal(both[["ts_code", "trade_date", "close"]], bars)
    merged = both.merge(indicators, on=["ts_code", "trade_date"], suffixes=("", "_basic"))
    assert len(merged) == len(both) and (merged["turnover_rate"] == merged["turnover_rate_basic"]).all()


def test_the_dataset_api_names_where_a_field_lives(sample: SampleProvider) -> None:
    with pytest.raises(DataError, match="'turnover_rate' is not part of tushare daily; 'turnover_rate' is in "
                                        "daily_basic"):
        sample.fetch("daily", "000001.SZ", "20200101", "20200201", ["turnover_rate"])


def test_missing_indicator_fields_are_never_filled(csi300: LocalProvider, sample: SampleProvider) -> None:
    with pytest.raises(DataError, match="'pe' .*not available from the bundled sample provider"):
        sample.daily_basic("000001.SZ", "20200101", "20200201", ["pe"])
    with pytest.raises(DataError, match="'vol' .*not available from the local provider"):
        csi300.daily("000001.SZ", "20200101", "20200201", ["vol"])
    with pytest.raises(DataError, match="not available"):
        csi300.wide("pb", "000001.SZ", "20200101", "20200201")


def test_future_dates_are_refused() -> None:
    tomorrow = (date.today() + timedelta(days=1)).strftime("%Y%m%d")
    with pytest.raises(DataError, match="in the future"):
        check_range("20200101", tomorrow)
    with pytest.raises(DataError, match="start date .* in the future"):
        check_range(tomorrow, tomorrow)
    assert check_range("2020-01-02", date(2020, 3, 1)) == ("20200102", "20200301")


def test_code_normalisation_keeps_order_and_dedupes() -> None:
    assert normalize_codes(" 600000.sh,000001.SZ,600000.SH ,430047.BJ") == ["600000.SH", "000001.SZ", "430047.BJ"]


def test_a_late_listing_is_a_nan_column_but_alone_an_error(csi300: LocalProvider) -> None:
    late = csi300.daily(sorted(csi300.known_codes()), "20170901", "20221220", ["close"])
    late_code = late.groupby("ts_code")["trade_date"].min().idxmax()
    wide = csi300.wide("close", ["000001.SZ", late_code], "20170901", "20170910")
    assert wide[late_code].isna().all() and wide["000001.SZ"].notna().all()
    with pytest.raises(DataError, match=f"no daily rows for {late_code} .*not yet listed"):
        csi300.daily(late_code, "20170901", "20170910")


def test_missing_codes_are_handed_to_the_caller_as_warnings(csi300: LocalProvider,
                                                            caplog: pytest.LogCaptureFixture) -> None:
    late = csi300.daily(sorted(csi300.known_codes()), "20170901", "20221220", ["close"])
    late_code = late.groupby("ts_code")["trade_date"].min().idxmax()
    codes = ["000001.SZ", late_code]
    notes: list[str] = []
    with caplog.at_level("WARNING", logger="tools.data.provider"):
        csi300.wide("close", codes, "20170901", "20170910", warnings=notes)
        csi300.daily(codes, "20170901", "20170910", ["close"], warnings=notes)
    assert notes == [f"no daily rows for {late_code} between 20170901 and 20170910 from the local provider "
                     "(not yet listed or suspended); their values are missing (NaN)"] * 2
    assert caplog.records == []
    with caplog.at_level("WARNING", logger="tools.data.provider"):
        csi300.panel(["close"], codes, "20170901", "20170910")
    assert [r.getMessage() for r in caplog.records] == notes[:1]


def test_csv_directory(tmp_path: Path, sample: SampleProvider) -> None:
    frame = sample.daily("000001.SZ", "20200101", "20200131")
    frame.to_csv(tmp_path / "daily.csv", index=False)
    provider = LocalProvider(tmp_path)
    again = provider.daily("000001.SZ", "20200101", "20200131")
    pd.testing.assert_frame_equal(again, frame, check_dtype=False)
    assert provider.available_fields("daily_basic") == ()


def test_directory_without_bars_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DataError, match="no daily.parquet or daily.csv"):
        LocalProvider(tmp_path)


def test_a_universe_with_no_rows_is_named_by_its_first_codes_and_a_count(csi300: LocalProvider) -> None:
    codes = sorted(csi300.known_codes())[:30]
    with pytest.raises(DataError) as caught:
        csi300.daily(codes, "19990101", "19990301")
    said = str(caught.value)
    assert said.startswith(f"no daily rows for {', '.join(codes[:10])} and 20 more between 19990101 and 19990301 ")
    assert codes[10] not in said
