"""Issue 25: the data tools' errors, gaps and notes and the research checks (the look-ahead test, a degenerate
signal, the dates a run covered) reach a zh-CN user in Chinese and an English one as before; the look-ahead test
is recognised in either language, so the evaluation counts a Chinese run's catches as it counts an English one's."""

from __future__ import annotations

import logging
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest

from graphs.measures import RunRecord
from graphs.signal.measures import measure_signal
from testkit.console import console_session, english_left
from tools.data.fundamentals import fundamentals_source
from tools.data.klines import AShareKlines, KlineError, check_limit, symbol_kind
from tools.data.local import LocalProvider, SampleProvider
from tools.data.news import news_source
from tools.data.schema import DataError, normalize_codes
from tools.i18n import N_, using
from tools.research.backtest import degeneracy_warnings, run_backtest
from tools.research.date_span import span_note
from tools.research.lookahead import CutRunError, is_lookahead_problem, lookahead_problem

CODE = "600519.SH"


@pytest.fixture(scope="module")
def sample() -> SampleProvider:
    return SampleProvider()


def _error(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises((DataError, KlineError)) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return str(caught.value)


def test_a_range_before_the_data_an_unknown_code_and_a_field_the_sample_lacks_read_in_chinese(
        sample: SampleProvider) -> None:
    with using("zh-CN"):
        assert _error(sample.fetch, "daily", CODE, "20100101", "20100301") == (
            "内置样本数据 数据源在 20100101 至 20100301 之间没有 600519.SH 的 daily 数据（可能停牌、尚未上市或代码"
            "有误）；其数据覆盖 20190102 至 20200824")
        assert _error(normalize_codes, "600519.SHX") == (
            "ts_code '600519.SHX' 格式有误：应为六位数字加交易所后缀，例如 000001.SZ、600000.SH 或 430047.BJ")
        assert _error(sample.daily, CODE, "20200101", "20200301", ["pe"]).startswith(
            "内置样本数据 数据源不提供字段 'pe'（daily_basic）；它提供：turnover_rate。")
    with using("en"):
        assert _error(sample.fetch, "daily", CODE, "20100101", "20100301") == (
            "no daily rows for 600519.SH between 20100101 and 20100301 from the bundled sample provider (its data "
            "covers 20190102 to 20200824) (suspended, not yet listed, or unknown code)")


def test_a_code_with_no_rows_in_a_universe_is_a_note_in_chinese_and_logged_in_english(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    late = "688981.SH"  # listed after the range asked for
    (tmp_path / "daily.csv").write_text(f"ts_code,trade_date,close\n{CODE},20200102,1130.0\n{late},20200716,95.0\n")
    provider = LocalProvider(tmp_path)
    notes: list[str] = []
    with using("zh-CN"), caplog.at_level(logging.WARNING, logger="tools.data.provider"):
        provider.fetch("daily", [CODE, late], "20200102", "20200110", ["close"], warnings=notes)
        provider.fetch("daily", [CODE, late], "20200102", "20200110", ["close"])
    assert notes == ["本地文件 数据源在 20200102 至 20200110 之间没有 688981.SH 的 daily 数据（尚未上市或停牌）；"
                     "其数值记为缺失（NaN）"]
    assert caplog.messages == ["no daily rows for 688981.SH between 20200102 and 20200110 from the local provider "
                               "(not yet listed or suspended); their values are missing (NaN)"]


def test_kline_refusals_and_notes_read_in_chinese(sample: SampleProvider) -> None:
    klines = AShareKlines(sample)
    with using("zh-CN"):
        assert _error(klines.klines, CODE, "1h") == (
            "A 股K线只有日线：请使用周期 1d，而不是 1h（内置样本数据 数据源没有日内或周线K线）")
        assert _error(symbol_kind, "600519") == (
            "'600519' 需要交易所后缀：600519.SH（上交所）、600519.SZ（深交所）或 600519.BJ（北交所）")
        assert _error(check_limit, 5000) == "limit 5000 超出范围；请取 1 到 1000 根K线"
        assert _error(klines.klines, CODE, "1d", start="20300101", end="20200101").startswith("开始时间 ")
        bars = klines.klines(CODE, "1d", limit=5, end="20190104")
    assert bars.notes == ("价格为前复权价（内置样本数据 数据源）",
                          "请求 5 根K线，实际只有 3 根（第一根K线 至 2019-01-04 00:00:00+08:00）")
    with using("en"):
        assert AShareKlines(sample).klines(CODE, "1d", limit=5, end="20190104").notes == (
            "prices are forward-adjusted (bundled sample provider)",
            "only 3 of the 5 bars asked for exist between the first bar and 2019-01-04 00:00:00+08:00")


def test_fundamentals_and_news_gaps_read_in_chinese(sample: SampleProvider, tmp_path: Path) -> None:
    market = fundamentals_source(market=sample)
    with using("zh-CN"):
        assert market.income(CODE, "20200301").gap == (
            "内置样本数据 行情数据源没有利润表；请设置基本面数据目录或 tushare token")
        assert fundamentals_source().fina_indicator(CODE, "20200301").gap.startswith("未配置基本面数据源（")
        (tmp_path / "daily_basic.csv").write_text(f"ts_code,trade_date,pe\n{CODE},20200102,35.1\n")
        assert fundamentals_source(directory=tmp_path).daily_basic(CODE, "20200301").gap == (
            f"截至 20200301 的 30 天内没有 600519.SH 的 daily_basic 数据（本地文件，位于 {tmp_path}）（可能停牌、尚未"
            "上市或不在数据中）")
        assert news_source().news(CODE, datetime(2020, 3, 1)).gap.startswith("未配置新闻数据源（")
        (tmp_path / "news.csv").write_text("datetime,title,codes\n2020-01-02 09:00:00,茅台公告,600519.SH\n",
                                           encoding="utf-8")
        assert news_source(directory=tmp_path).news(CODE, datetime(2020, 3, 1)).gap == (
            f"2020-02-23 00:00:00 至 2020-03-01 00:00:00 之间没有关于 600519.SH 的新闻或全市场（本地 news 文件，位于 "
            f"{tmp_path}）")
    with using("en"):
        assert market.income(CODE, "20200301").gap == (
            "the bundled sample market-data provider has no income statements; set a fundamentals directory or a "
            "tushare token")


def test_a_degenerate_signal_and_the_dates_a_run_covered_are_told_in_chinese(sample: SampleProvider) -> None:
    close = sample.wide("close", "000001.SZ,600519.SH", "20190102", "20190329")
    always = pd.DataFrame(1.0, index=close.index, columns=close.columns)
    result = run_backtest(always, close)
    with using("zh-CN"):
        warnings = degeneracy_warnings(always, result)
        note = span_note("20180101", "20190329", "20190102", "20190329")
    assert warnings["constant_signal"] == "信号为常数：所有取值都是 1（116 个单元格中有 116 个，其余为 NaN）"
    assert warnings["never_sells"].startswith("从不卖出：开仓 2 次、平仓 0 次")
    assert warnings["always_in_market"] == ("始终满仓：从 20190103 起每只股票在每根K线上都持仓（相当于晚一根K线入场的"
                                            "买入持有）")
    assert note == "请求区间 20180101–20190329；实际运行 20190102–20190329：20190102 之前没有数据。"
    with using("en"):
        assert degeneracy_warnings(always, result)["constant_signal"] == (
            "the signal is constant: every value is 1 (116 of 116 cells, the rest NaN)")
        assert span_note("20180101", "20190329", "20190102", "20190329") == (
            "Asked for 20180101–20190329; ran 20190102–20190329: there is no data before 20190102.")


def test_the_look_ahead_test_reads_in_chinese_and_is_recognised_in_either_language(sample: SampleProvider) -> None:
    series = sample.wide("close", CODE, "20190102", "20190329")[CODE]
    future = series.shift(-1)

    def fails(cut: pd.Timestamp) -> pd.Series:
        raise CutRunError("NameError: name 'x' is not defined")

    with using("zh-CN"):
        chinese = lookahead_problem(lambda cut: series.loc[:cut].shift(-1), future, N_("the signal"))
        failure = lookahead_problem(fails, future, N_("the signal"))
    with using("en"):
        english = lookahead_problem(lambda cut: series.loc[:cut].shift(-1), future, N_("the signal"))
    assert chinese is not None and chinese.startswith("未来函数：删去 20190226 之后的数据后，信号在 20190226 的值发生"
                                                      "变化，说明用到了未来数据")
    assert failure == "信号在截断于 20190226 的数据上运行失败：NameError: name 'x' is not defined"
    assert english is not None and english.startswith("look-ahead: the signal on 20190226 changes when the data after")
    for language in ("zh-CN", "en"):  # what counts does not depend on the language in effect when it is counted
        with using(language):
            assert is_lookahead_problem(f"校验失败：{chinese}")
            assert is_lookahead_problem(f"validation failed: {english}")
            assert not is_lookahead_problem(failure)
    runs = [RunRecord("request", {"error_log": [f"校验失败：{problem}"], "validated": True})
            for problem in (chinese, english)]
    assert measure_signal(runs[0]) == measure_signal(runs[1])
    assert measure_signal(runs[0])["look_ahead_caught"] == 1.0


def test_a_chinese_console_session_hitting_data_errors_reads_in_chinese(tmp_path: Path) -> None:
    out = console_session(tmp_path / "zh", "\n".join([
        "lang zh",
        "bars 600519.SH 20100101 20100301",  # before the data starts
        "bars 600519.SHX 20200101 20200301",  # a malformed code
        "load pe 000001.SZ 20200101 20200331",  # a field the sample lacks
        "信号 均线交叉 600519.SH 2010年1月2日 2010年3月20日",  # a signal over a range with no bars
        "取消",
        "信号 均线交叉 600519.SH 2019年1月2日 2019年1月20日",  # too few bars for the windows
        "取消",
        "信号 均线交叉 600519.SH 2018年1月2日 2019年3月20日",  # the data starts inside the range: it says so
        "因子 动量 2010年3月1日 2010年6月1日",  # a factor before the data
        "因子 动量 600519.SH 2019年3月1日 2019年3月20日 window＝60",  # one code, a window longer than the range
        "取消",
        "",
    ]))
    lines = out.splitlines()
    assert ("错误：内置样本数据 数据源在 20100101 至 20100301 之间没有 600519.SH 的 daily 数据（可能停牌、尚未上市或"
            "代码有误）；其数据覆盖 20190102 至 20200824") in lines
    assert ("? 获取数据失败：内置样本数据 数据源在 20100102 至 20100320 之间没有 600519.SH 的 daily 数据（可能停牌、"
            "尚未上市或代码有误）；其数据覆盖 20190102 至 20200824") in lines
    assert "  注：请求区间 20180102–20190320；实际运行 20190102–20190320：20190102 之前没有数据。" in lines
    assert any(line.startswith("警告：从不卖出：") for line in lines)
    assert any(line.startswith("无法运行该因子：数据：内置样本数据 数据源在 20100118 至 20100601 之间没有 000001.SZ")
               for line in lines)
    assert "警告：1 只股票、5 个分位：分位数收益差意义不大（少于 20 只股票时保存需审批）。" in lines
    assert any(line.startswith("--- 代码审核：因子 momentum_60（检查未通过：预热 60 行之后仍有 100% 的值为 NaN")
               for line in lines)
    assert english_left(out) == []

