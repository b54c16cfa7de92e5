"""Point-in-time fundamentals from local files, the loopback tushare fake and a market-data provider."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from testkit.fakes.tushare_server import GOOD_TOKEN, NO_PERMISSION_TOKEN, FakeTushare, TushareServer
from tools.data.fundamentals import (
    NO_FUNDAMENTALS,
    ChainedFundamentals,
    FundamentalsSource,
    LocalFundamentals,
    MarketDataFundamentals,
    SourceResult,
    TushareFundamentals,
    fundamentals_source,
)
from tools.data.local import SampleProvider
from tools.data.schema import DataError
from tools.data.tushare import TushareProvider

CODE = "600519.SH"

INCOME_COLUMNS = ["ts_code", "ann_date", "f_ann_date", "end_date", "report_type", "update_flag", "total_revenue",
                  "revenue", "operate_profit", "total_profit", "n_income", "n_income_attr_p", "basic_eps"]
# Hand-made statements in tushare's shape (amounts in 元). The 20220630 report has two versions: the original
# (announced 20220803) and a restatement (f_ann_date 20221028, ann_date kept at 20220803); 20210930 lacks
# f_ann_date (falls back to ann_date); a report_type 2 (single quarter) row must never show; another stock too.
INCOME = pd.DataFrame([
    [CODE, "20211023", None, "20210930", "1", "1", 7.7e10, 7.6e10, 5.0e10, 5.0e10, 3.7e10, 3.5e10, 27.95],
    [CODE, "20220331", "20220331", "20211231", "1", "1", 1.09e11, 1.06e11, 7.4e10, 7.4e10, 5.6e10, 5.2e10, 41.76],
    [CODE, "20220421", "20220421", "20220331", "1", "1", 3.3e10, 3.2e10, 2.4e10, 2.4e10, 1.8e10, 1.7e10, 13.48],
    [CODE, "20220803", "20220803", "20220630", "1", "0", 6.1e10, 5.9e10, 4.2e10, 4.2e10, 3.1e10, 2.9e10, 23.24],
    [CODE, "20220803", "20221028", "20220630", "1", "1", 6.1e10, 5.9e10, 4.2e10, 4.2e10, 3.1e10, 3.0e10, 23.30],
    [CODE, "20221020", "20221020", "20220930", "1", "1", 9.0e10, 8.8e10, 6.2e10, 6.2e10, 4.6e10, 4.4e10, 35.09],
    [CODE, "20221020", "20221020", "20220930", "2", "1", 2.9e10, 2.8e10, 2.0e10, 2.0e10, 1.5e10, 1.4e10, 11.85],
    [CODE, "20230331", "20230331", "20221231", "1", "1", 1.27e11, 1.24e11, 8.7e10, 8.7e10, 6.5e10, 6.3e10, 49.93],
    ["000001.SZ", "20221025", "20221025", "20220930", "1", "1", 1.4e11, 1.4e11, 4.2e10, 4.2e10, 3.4e10, 3.4e10, 1.64],
], columns=INCOME_COLUMNS)

FINA_COLUMNS = ["ts_code", "ann_date", "end_date", "update_flag", "eps", "roe", "roe_dt", "roa",
                "grossprofit_margin", "netprofit_margin", "debt_to_assets", "netprofit_yoy", "or_yoy"]
FINA = pd.DataFrame([
    [CODE, "20220331", "20211231", "1", 41.76, 29.9, 29.9, 23.0, 91.9, 52.5, 22.8, 12.3, 11.7],
    [CODE, "20220421", "20220331", "1", 13.48, 9.5, 9.5, 7.6, 92.4, 54.9, 17.6, 23.6, 18.2],
    [CODE, "20220803", "20220630", "0", 23.24, 15.6, 15.6, 12.7, 91.9, 53.0, 17.2, 20.9, 17.0],
    [CODE, "20221028", "20220630", "1", 23.30, 15.7, 15.7, 12.8, 91.9, 53.1, 17.2, 21.0, 17.0],
    [CODE, "20221020", "20220930", "1", 35.09, 22.9, 22.9, 18.5, 91.8, 52.4, 17.9, 19.1, 16.6],
], columns=FINA_COLUMNS)

BASIC_COLUMNS = ["ts_code", "trade_date", "close", "turnover_rate", "volume_ratio", "pe", "pe_ttm", "pb", "ps",
                 "ps_ttm", "dv_ratio", "dv_ttm", "total_share", "float_share", "free_share", "total_mv", "circ_mv"]
BASIC = pd.DataFrame([
    [CODE, "20220901", 1890.0, 0.21, 0.9, 38.1, 36.2, 11.2, 17.8, 16.9, 1.1, 1.2, 125619.78, 125619.78,
     56504.59, 237421.38e4, 237421.38e4],
    [CODE, "20221215", 1741.0, 0.28, 1.1, 34.5, 32.0, 10.1, 16.3, 15.1, 1.3, 1.4, 125619.78, 125619.78,
     56504.59, 218704.04e4, 218704.04e4],
    [CODE, "20221216", 1762.0, 0.31, 1.2, 34.9, None, 10.2, 16.5, 15.3, 1.3, 1.4, 125619.78, 125619.78,
     56504.59, 221342.05e4, 221342.05e4],
    [CODE, "20221219", 1730.5, 0.25, 0.8, 34.3, 31.8, 10.0, 16.2, 15.0, 1.3, 1.4, 125619.78, 125619.78,
     56504.59, 217385.23e4, 217385.23e4],
    [CODE, "20221220", 1715.0, 0.30, 1.0, 34.0, 31.5, 9.9, 16.0, 14.9, 1.3, 1.4, 125619.78, 125619.78,
     56504.59, 215437.92e4, 215437.92e4],
], columns=BASIC_COLUMNS)

TABLES = {"daily_basic": BASIC, "income": INCOME, "fina_indicator": FINA}
AS_OFS = ["20210101", "20211023", "20220415", "20220803", "20221015", "20221020", "20221027", "20221028",
          "20221218", "20221220", "20230401"]


def truncated(tables: dict[str, pd.DataFrame], as_of: str) -> dict[str, pd.DataFrame]:
    """The tables with every row published after `as_of` deleted (written here, independent of the code)."""
    income = tables["income"]
    announced = income["f_ann_date"].fillna(income["ann_date"])
    return {"daily_basic": tables["daily_basic"][tables["daily_basic"]["trade_date"] <= as_of],
            "income": income[announced <= as_of],
            "fina_indicator": tables["fina_indicator"][tables["fina_indicator"]["ann_date"] <= as_of]}


def write(root: Path, tables: dict[str, pd.DataFrame], suffix: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        if suffix == ".csv":
            frame.to_csv(root / f"{name}.csv", index=False)
        else:
            frame.to_parquet(root / f"{name}.parquet", index=False)
    return root


@pytest.fixture
def server() -> Iterator[TushareServer]:
    with TushareServer(FakeTushare(dict(TABLES))) as srv:
        yield srv


@pytest.fixture(params=["csv", "parquet", "tushare"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FundamentalsSource]:
    """Each test using it runs on local CSV files, local Parquet files and the tushare fake."""
    if request.param == "tushare":
        with TushareServer(FakeTushare(dict(TABLES))) as srv:
            yield TushareFundamentals(TushareProvider(GOOD_TOKEN, srv.url))
    else:
        yield LocalFundamentals(write(tmp_path / "data", TABLES, f".{request.param}"))


def periods(result: SourceResult) -> list[tuple[str | float | None, ...]]:
    return [(r["end_date"], r["f_ann_date"] if "f_ann_date" in r else r["ann_date"], r["update_flag"])
            for r in result.rows]


def test_restated_statement_later_version_announced_after_as_of_is_not_seen(source: FundamentalsSource) -> None:
    result = source.income(CODE, "20221015")
    assert result.gap is None
    # 20220930 ends before the as-of day but is announced on 20221020: not visible; 20220630 is the original.
    assert periods(result) == [("20220630", "20220803", "0"), ("20220331", "20220421", "1"),
                               ("20211231", "20220331", "1"), ("20210930", None, "1")]
    assert result.rows[0]["n_income_attr_p"] == 2.9e10 and result.rows[0]["basic_eps"] == 23.24
    assert result.rows[3]["ann_date"] == "20211023"  # no f_ann_date: selected by ann_date
    assert result.units["revenue"] == "元" and result.units["basic_eps"] == "元/股"


def test_restated_statement_both_versions_announced_returns_the_restatement(source: FundamentalsSource) -> None:
    result = source.income(CODE, "20221220", periods=2)
    assert periods(result) == [("20220930", "20221020", "1"), ("20220630", "20221028", "1")]
    assert result.rows[0]["revenue"] == 8.8e10  # the consolidated statement, not the single-quarter one
    assert result.rows[1]["n_income_attr_p"] == 3.0e10 and result.rows[1]["basic_eps"] == 23.30


def test_fina_indicator_is_selected_by_ann_date(source: FundamentalsSource) -> None:
    before = source.fina_indicator(CODE, "20221027")
    assert periods(before) == [("20220930", "20221020", "1"), ("20220630", "20220803", "0"),
                               ("20220331", "20220421", "1"), ("20211231", "20220331", "1")]
    assert before.rows[1]["roe"] == 15.6 and before.units["roe"] == "%"
    after = source.fina_indicator(CODE, "20221028", periods=2)
    assert periods(after) == [("20220930", "20221020", "1"), ("20220630", "20221028", "1")]
    assert after.rows[1]["roe"] == 15.7 and after.rows[1]["netprofit_yoy"] == 21.0


def test_daily_basic_is_the_latest_row_on_or_before_as_of(source: FundamentalsSource) -> None:
    weekend = source.daily_basic(CODE, "20221218")  # a Sunday: Friday's row
    assert [r["trade_date"] for r in weekend.rows] == ["20221216"]
    row = weekend.rows[0]
    assert row["close"] == 1762.0 and row["pe"] == 34.9 and row["pe_ttm"] is None
    assert row["total_share"] == 125619.78 and row["total_mv"] == 221342.05e4
    assert weekend.units["total_mv"] == "万元" and weekend.units["total_share"] == "万股"
    assert weekend.units["turnover_rate"] == "%"
    assert source.daily_basic(CODE, "2022-12-20").rows[0]["close"] == 1715.0
    stale = source.daily_basic(CODE, "20221101")  # the last row, 20220901, is two months old
    assert stale.rows == [] and stale.gap is not None
    assert "no daily_basic row for 600519.SH in the 30 days up to 20221101" in stale.gap


def test_nothing_announced_yet_is_a_gap(source: FundamentalsSource) -> None:
    result = source.income(CODE, "20210101")
    assert result.rows == [] and result.units == {}
    assert result.gap is not None and result.gap.startswith(
        "no income statements for 600519.SH announced on or before 20210101")
    assert source.fina_indicator("000002.SZ", "20221220").gap is not None


def answers(source: FundamentalsSource, as_of: str) -> list[SourceResult]:
    return [source.daily_basic(CODE, as_of), source.income(CODE, as_of), source.fina_indicator(CODE, as_of, 3)]


@pytest.mark.parametrize("kind", ["csv", "parquet"])
def test_local_results_do_not_change_when_later_rows_are_deleted(tmp_path: Path, kind: str) -> None:
    full = LocalFundamentals(write(tmp_path / "full", TABLES, f".{kind}"))
    for as_of in AS_OFS:
        cut_root = write(tmp_path / as_of, truncated(TABLES, as_of), f".{kind}")
        for whole, part in zip(answers(full, as_of), answers(LocalFundamentals(cut_root), as_of), strict=True):
            assert whole.rows == part.rows and whole.units == part.units, as_of
            assert whole.gap == (part.gap and part.gap.replace(str(cut_root), str(tmp_path / "full"))), as_of
    assert [len(r.rows) for r in answers(full, "20221220")] == [1, 4, 3]  # not trivially empty
    assert [r.gap is None for r in answers(full, "20210101")] == [False, False, False]


def test_tushare_results_do_not_change_when_later_rows_are_deleted(server: TushareServer) -> None:
    full = TushareFundamentals(TushareProvider(GOOD_TOKEN, server.url))
    with TushareServer(FakeTushare({})) as cut_server:
        cut = TushareFundamentals(TushareProvider(GOOD_TOKEN, cut_server.url))
        for as_of in AS_OFS:
            cut_server.fake.tables = truncated(TABLES, as_of)
            assert answers(full, as_of) == answers(cut, as_of), as_of


def test_tushare_requests_end_at_as_of(server: TushareServer) -> None:
    source = TushareFundamentals(TushareProvider(GOOD_TOKEN, server.url))
    source.daily_basic(CODE, "20221218")
    source.income(CODE, "20221015")
    source.fina_indicator(CODE, "20221015")
    sent = {r["api_name"]: r for r in server.fake.requests}
    assert sent["daily_basic"]["params"] | {"limit": 0} == {
        "ts_code": CODE, "start_date": "20221118", "end_date": "20221218", "limit": 0, "offset": 0}
    assert sent["income"]["params"]["end_date"] == "20221015" and sent["income"]["params"]["report_type"] == "1"
    assert sent["income"]["fields"].split(",") == INCOME_COLUMNS
    assert sent["fina_indicator"]["params"]["end_date"] == "20221015"  # a report period: ends before its notice
    assert sent["fina_indicator"]["fields"].split(",") == FINA_COLUMNS
    assert sent["daily_basic"]["fields"].split(",") == BASIC_COLUMNS


def test_tushare_fina_indicator_pages_through_its_100_row_limit() -> None:
    quarters = [f"{year}{md}" for year in range(1991, 2023) for md in ("0331", "0630", "0930", "1231")]
    history = pd.DataFrame({c: None for c in FINA_COLUMNS} | {"ts_code": "000001.SZ", "end_date": quarters,
                                                              "update_flag": "1", "eps": 1.0})
    history["ann_date"] = history["end_date"].str[:4] + "1231"  # announced at the year's end, 128 rows
    with TushareServer(FakeTushare({"fina_indicator": history})) as srv:
        result = TushareFundamentals(TushareProvider(GOOD_TOKEN, srv.url)).fina_indicator("000001.SZ", "20221231")
        offsets = [r["params"]["offset"] for r in srv.fake.requests]
    assert [r["end_date"] for r in result.rows] == ["20221231", "20220930", "20220630", "20220331"]
    assert result.rows[0]["eps"] == 1.0 and result.rows[0]["roe"] is None  # tushare's null stays null
    assert offsets == [0, 100]


def test_tushare_refusal_is_a_gap(server: TushareServer) -> None:
    result = TushareFundamentals(TushareProvider(NO_PERMISSION_TOKEN, server.url)).income(CODE, "20221220")
    assert result.rows == [] and result.gap is not None
    assert "no permission for tushare income" in result.gap


def test_missing_local_files_are_gaps(tmp_path: Path) -> None:
    write(tmp_path / "some", {"income": INCOME}, ".csv")
    source = LocalFundamentals(tmp_path / "some")
    assert source.income(CODE, "20221220").rows
    assert source.daily_basic(CODE, "20221220").gap == (
        f"no daily_basic.parquet or daily_basic.csv in {tmp_path / 'some'}")
    assert source.fina_indicator(CODE, "20221220").gap == (
        f"no fina_indicator.parquet or fina_indicator.csv in {tmp_path / 'some'}")
    nowhere = LocalFundamentals(tmp_path / "absent").income(CODE, "20221220")
    assert nowhere.rows == [] and nowhere.gap == f"the fundamentals directory {tmp_path / 'absent'} does not exist"


def test_unconfigured_source_answers_with_a_gap() -> None:
    source = fundamentals_source()
    for result in (source.daily_basic(CODE, "20221220"), source.income(CODE, "20221220"),
                   source.fina_indicator(CODE, "20221220")):
        assert result.rows == [] and result.gap == NO_FUNDAMENTALS
    assert "QUANTDESK_FUNDAMENTALS_DIR" in NO_FUNDAMENTALS


def test_bad_arguments_raise() -> None:
    source = fundamentals_source()
    with pytest.raises(DataError, match="malformed ts_code"):
        source.income("600519", "20221220")
    with pytest.raises(DataError, match="not a date"):
        source.income(CODE, "yesterday")
    with pytest.raises(DataError, match="periods must be at least 1"):
        source.income(CODE, "20221220", periods=0)


def test_market_data_provider_serves_daily_basic_only() -> None:
    source = MarketDataFundamentals(SampleProvider())
    result = source.daily_basic("000001.SZ", "20190105")  # a Saturday
    assert [r["trade_date"] for r in result.rows] == ["20190104"]
    assert result.rows[0]["turnover_rate"] == pytest.approx(0.862631)
    assert result.rows[0]["close"] == pytest.approx(9.485083)
    assert result.rows[0]["pe"] is None  # the sample has no pe
    income = source.income("000001.SZ", "20190105")
    assert income.rows == [] and income.gap is not None and "bundled sample" in income.gap


def test_factory_chains_local_files_before_the_market_provider(tmp_path: Path) -> None:
    write(tmp_path, {"income": INCOME}, ".csv")
    source = fundamentals_source(directory=tmp_path, market=SampleProvider())
    assert isinstance(source, ChainedFundamentals)
    assert source.income(CODE, "20221220").source == f"local files in {tmp_path}"
    basic = source.daily_basic("000001.SZ", "20190104")
    assert basic.source == "the bundled sample market-data provider" and basic.rows[0]["trade_date"] == "20190104"
    fina = source.fina_indicator(CODE, "20221220")
    assert fina.rows == [] and fina.gap is not None
    assert fina.gap.startswith(f"no fina_indicator.parquet or fina_indicator.csv in {tmp_path}; ")
    assert fina.gap.endswith("has no fina_indicator rows; set a fundamentals directory or a tushare token")
