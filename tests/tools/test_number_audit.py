"""tools/desk/number_audit.py: figures in analyst text matched to the numbers in tool outputs. Every expected figure and
match below is written by hand from the texts and the tool outputs, never computed by the code under test."""

from __future__ import annotations

import pytest

from tools.desk.number_audit import Figure, audit, extract_figures, flag_text, tool_numbers

# an indicator tool's table and a fundamentals row for Kweichow Moutai on 2022-12-20, as the analyst saw them
INDICATORS = """600519.SH daily indicators (qfq), MA(20) RSI(14) MACD(12,26,9) BOLL(20,2)
trade_date     close      ma20   rsi14      dif      dea  boll_upper  boll_lower
  20221216   1698.50   1695.12   45.91   10.876    8.412     1785.40     1604.84
  20221219   1702.00   1698.80   46.85   11.602    9.050     1788.03     1609.57
  20221220   1715.00   1702.35   48.27   12.345    9.709     1790.12     1614.58
"""
FUNDAMENTALS = {"ts_code": "600519.SH", "trade_date": "20221220", "pe_ttm": 30.12, "pb": 9.87,
                "total_mv": 215432567.8, "turnover_rate": 0.2143, "pct_chg": 0.76}  # total_mv in 万元
OUTPUTS = [INDICATORS, FUNDAMENTALS]

REPORT = """**600519.SH, 2022-12-20**
1. Trend: the close of 1,715.00 sits above MA(20) at 1702.35; the stock gained 0.76% on the day.
2. Momentum: RSI(14) is 48.27, neutral; MACD(12,26,9) DIF 12.345 is above DEA 9.709.
3. Bands: BOLL(20, 2) upper band 1790.12, lower band 1614.58.
4. Valuation: pe_ttm 30.12x, total market value 2.15万亿元 (about 2.15 trillion yuan), turnover 0.21%.
Over the past 3 days the close rose from 1698.50.
"""
REPORT_FIGURES = ["1,715.00", "1702.35", "0.76%", "48.27", "12.345", "9.709", "1790.12", "1614.58", "30.12x",
                  "2.15万亿", "2.15 trillion", "0.21%", "1698.50"]


def _texts(figures: list[Figure]) -> list[str]:
    return [figure.text for figure in figures]


def test_a_report_quoting_only_tool_outputs_is_clean() -> None:
    result = audit(REPORT, OUTPUTS)
    assert _texts(result.checked) == REPORT_FIGURES
    assert result.flagged == [] and result.ok
    assert flag_text(result) == "all figures found in tool outputs (13 checked)"
    assert result.tolerance == ("a figure matches a tool output within 0.5% relative, "
                                "or to the precision it is written at")


@pytest.mark.parametrize(("report", "invented"), [
    (REPORT + "5. Support at 1650.00 held twice.\n", "1650.00"),
    (REPORT.replace("RSI(14) is 48.27", "RSI(14) is 62.1"), "62.1"),
    (REPORT.replace("DEA 9.709", "DEA 9.21"), "9.21"),  # 9.9 would match pb 9.87 within 0.5%
])
def test_one_invented_figure_is_the_only_one_flagged(report: str, invented: str) -> None:
    result = audit(report, OUTPUTS)
    assert _texts(result.flagged) == [invented]
    assert not result.ok
    assert flag_text(result) == f"1 figure not found in tool outputs: {invented}"


def test_derived_figures_are_flagged() -> None:
    text = "The close 1715 is 12.65 above MA20, a 0.74% premium; the band is 175.54 wide."
    result = audit(text, OUTPUTS)
    assert _texts(result.checked) == ["1715", "12.65", "0.74%", "175.54"]
    assert flag_text(result) == "3 figures not found in tool outputs: 12.65; 0.74%; 175.54"


def test_codes_dates_parameters_and_markers_are_never_flagged() -> None:
    text = """1. 600519.SH and 000001.SZ (codes 600519, 000001, 00700.HK) on 2022-12-20, 2022/12/20, 20221220.
2. 2022年12月20日 and 12月20日 at 14:57 and 09:30:00; Q3 2022, 2022Q3, FY2022, in 2022, Dec 20, 2022, 20 Dec.
(3) MA(20), MA20, EMA 12, RSI(14), RSI14, MACD(12,26,9), BOLL(20, 2), KDJ(9,3,3), BOLL（20，2）.
12. The 20-day line, 20日均线, 5日, 3个月, past 30 days, last 3 rounds, 15min bars, 60-minute, 20d.
- (2) the 2nd item, 第3条, #4; 3 signals agree and 7 of 10 stocks rose.
"""
    result = audit(text, [])
    assert result.checked == [] and result.ok


def test_a_year_written_as_a_price_is_audited() -> None:
    assert _texts(extract_figures("收盘2022元，in 2022 the close was ¥2022 or 2022 yuan")) == ["2022", "2022", "2022"]


def test_small_counts_and_declared_parameters_are_skipped() -> None:
    text = "Screened the top 25 stocks at depth 3, limit 50; 12 of them hit limit-up, 2 fell."
    assert _texts(extract_figures(text)) == ["25", "50", "12"]
    assert _texts(extract_figures(text, declared=(25, 50.0))) == ["12"]
    assert _texts(extract_figures("limit 50%", declared=(50,))) == ["50%"]  # declared numbers have no unit


def test_chinese_text_with_glued_numbers() -> None:
    text = "收盘价1715.00元，20日均线1702.35元，RSI(14)为48.27，换手率0.21%，市盈率30.12倍。"
    result = audit(text, OUTPUTS)
    assert [(f.value, f.unit) for f in result.checked] == [(1715.0, ""), (1702.35, ""), (48.27, ""), (0.21, "%"),
                                                           (30.12, "x")]
    assert result.ok


def test_full_width_digits_are_normalised_and_spans_point_at_the_original() -> None:
    text = "收盘价１７１５．００元，涨幅１２．５％，市值１．２亿"
    figures = extract_figures(text)
    assert [(f.text, f.value, f.unit, f.decimals) for f in figures] == [
        ("１７１５．００", 1715.0, "", 2), ("１２．５％", 12.5, "%", 1), ("１．２亿", 1.2, "亿", 1)]
    assert [text[f.start:f.end] for f in figures] == ["１７１５．００", "１２．５％", "１．２亿"]
    assert audit(text, [1715.0, 0.125, 12000]).ok  # 12000 万元 is 1.2亿


def test_figure_fields() -> None:
    assert extract_figures("volume 1,234,567.50 and 12.5 元 and -3.2% and 2.5 billion") == [
        Figure("1,234,567.50", 1234567.5, "", 2, 7, 19),
        Figure("12.5", 12.5, "", 1, 24, 28),
        Figure("-3.2%", -3.2, "%", 1, 35, 40),
        Figure("2.5 billion", 2.5, "billion", 1, 45, 56),
    ]


@pytest.mark.parametrize(("text", "source", "ok"), [
    ("涨幅12.5%", 12.5, True),  # tushare rates are in percent
    ("涨幅12.5%", 0.125, True),  # a fraction
    ("涨幅12.5%", 1.25, False),
    ("1,234.56", 1234.56, True),
    ("3.4万手", 34000, True),
    ("3.4万手", 3.4, True),  # the source in 万
    ("3.4万手", 340000, False),
    ("1.2亿元", 120000000, True),
    ("1.2亿元", 12000, True),  # 万元, as tushare's total_mv
    ("1.2亿元", 120000, True),  # 千元, as tushare's amount
    ("1.2亿元", 1.2, True),  # in 亿
    ("1.2亿元", 1200, False),
    ("总市值2.15万亿元", 215432567.8, True),
    ("2.15 trillion yuan", 215432567.8, True),
    ("2.5x", 2.5, True),
    ("2.5倍", 2.5, True),
    ("2.5x", 25000, False),  # a multiple is compared as it is
    ("12.5 元", 12.5, True),
    ("12.5 元", 125000, False),  # so is a figure without a magnitude unit
])
def test_units(text: str, source: float, ok: bool) -> None:
    assert audit(text, [source]).ok is ok


@pytest.mark.parametrize(("text", "source", "ok"), [
    ("-3.2%", -3.2, True),
    ("-3.2%", -0.032, True),
    ("-3.2%", 3.2, False),
    ("+0.8%", 0.8, True),
    ("+0.8%", -0.8, False),
    ("涨跌幅−3.2%", -3.2, True),  # the Unicode minus sign
    ("3.2%", -3.2, False),
    ("rose 3.2%", -3.2, False),
    ("the stock fell 3.2% on the day", -3.2, True),
    ("closed 3.2% lower", -0.032, True),
    ("下跌3.2%", -3.2, True),
    ("跌幅3.2%", -3.2, True),
    ("fell 3.2%", 3.2, True),  # a magnitude with the direction in words
    ("fell -3.2%", 3.2, False),  # a written sign is kept
    ("fell 1.5% while volume rose 3.2%", -3.2, False),  # the falling word belongs to the other figure
])
def test_signs_and_direction_words(text: str, source: float, ok: bool) -> None:
    assert audit(text, [source]).ok is ok


@pytest.mark.parametrize(("text", "rel_tol", "ok"), [
    ("1715", 0.0, True),
    ("1715.0", 0.0, True),
    ("1,715.00", 0.0, True),
    ("1715.01", 0.0, False),
    ("31.2", 0.0, True),
    ("31.25", 0.0, True),
    ("31.24", 0.0, False),
    ("31.3", 0.0, False),
    ("31.3", 0.005, True),  # 0.0544 from 31.2456 is within 0.5% of it (0.156)
    ("31.4", 0.005, True),
    ("31.41", 0.005, False),
])
def test_precision_and_relative_tolerance(text: str, rel_tol: float, ok: bool) -> None:
    assert audit(text, [1715.004, 31.2456], rel_tol=rel_tol).ok is ok


def test_tolerance_sentence_and_bounds() -> None:
    assert audit("", [], rel_tol=0.01).tolerance.startswith("a figure matches a tool output within 1% relative")
    with pytest.raises(ValueError, match="rel_tol"):
        audit("1715", [1715], rel_tol=1.0)


def test_tool_numbers_walk_structures_and_read_text_without_skips() -> None:
    outputs = [
        {"close": 1715.0, "flags": [True, None, float("nan")], "rows": [{"vol": 34000, "note": "换手 0.21%"}]},
        "600519.SH 20221220 MA(20) 1702.35 -3.2 3.4万 1.2e-05",
        (1, 2.5),
    ]
    assert tool_numbers(outputs) == [1715.0, 34000.0, 0.21, 600519.0, 20221220.0, 20.0, 1702.35, -3.2, 34000.0,
                                     1.2e-05, 1.0, 2.5]
    assert tool_numbers("close 1715.00") == [1715.0]
