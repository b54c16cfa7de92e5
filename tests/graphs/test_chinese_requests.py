"""Issue 25, item 4: Chinese requests read with no LLM. A table of realistic Chinese and mixed requests, each with
the workflow it starts and what its grammar reads (or the question it asks); Chinese dates, stock names from the
provider (an ambiguous one asks which), sentences around the keywords, and Chinese command words."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from graphs import names
from graphs.analyze.grammar import DecisionGrammarError, parse_request
from graphs.factor import spec as factor
from graphs.grammar import normalize, unused_question
from graphs.order.grammar import OrderGrammarError, parse_order
from graphs.registry import command_for, workflow_for
from graphs.signal import grammar as signal
from tools.data.factory import provider_from_settings
from tools.settings import Settings


@pytest.fixture(autouse=True, scope="module")
def _sample_names() -> Iterator[None]:
    names.use(provider_from_settings(Settings(QUANTDESK_DATA_PROVIDER="sample")))
    yield


def reading(text: str) -> tuple[object, ...]:
    """The workflow `text` starts and what its grammar makes of it; an error's message counts as its reading."""
    workflow = workflow_for(text)
    name = workflow.name if workflow else None
    if name == "signal":
        r = signal.parse(text)
        return name, r.strategy, r.codes, r.start, r.end, r.params, r.unknown_words
    if name == "factor":
        f = factor.parse(text)
        return name, f.kind, f.codes, f.start, f.end, f.params, f.unknown_words
    if name == "order":
        try:
            o = parse_order(text)
        except OrderGrammarError as exc:
            return name, str(exc)
        return name, o.ts_code, o.side, o.quantity, o.limit_price
    if name == "analyze":
        try:
            d = parse_request(text)
        except DecisionGrammarError as exc:
            return name, str(exc)
        return name, d.ts_code, d.trade_date, d.end_date, d.depth
    return (name,)


MAOTAI, PINGAN = "600519.SH", "000001.SZ"
TABLE = [
    # signal
    ("信号 均线交叉 600519.SH 20190102 20191231", ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {}, ())),
    ("信号 均线交叉 贵州茅台 2019年1月2日 2019年12月31日",
     ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {}, ())),
    ("帮我生成一个均线交叉信号 600519.SH", ("signal", "ma_cross", (MAOTAI,), None, None, {}, ())),
    ("帮我生成一个均线交叉信号 茅台 2019-1-2 到 2019-12-31 fast＝10 slow＝30",
     ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {"fast": "10", "slow": "30"}, ())),
    ("信号 动量 600519.SH，000001.SZ 2019年1月2日至2019年12月31日 top＝0.3",
     ("signal", "momentum", (MAOTAI, PINGAN), "20190102", "20191231", {"top": "0.3"}, ())),
    ("信号 布林带 平安银行 20190102 20191231 k=2", ("signal", "bollinger", (PINGAN,), "20190102", "20191231",
                                                {"k": "2"}, ())),
    ("信号 相对强弱 五粮液 2019/01/02 2019/12/31", ("signal", "rsi", ("000858.SZ",), "20190102", "20191231", {}, ())),
    ("信号 均值回归 600519.SH 20190102 20191231。", ("signal", "mean_reversion", (MAOTAI,), "20190102", "20191231",
                                                   {}, ())),
    ("均线交叉 600519.SH 20190102 20191231 快线=10", ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231",
                                                   {"fast": "10"}, ())),
    ("信号 均线交叉 平安 20190102 20191231", ("signal", "ma_cross", (), "20190102", "20191231", {}, ("平安",))),
    ("signal ma_cross 600519.SH 20190102 20191231 fast＝10 slow＝30",
     ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {"fast": "10", "slow": "30"}, ())),
    ("信号 均线交叉 600519.SH 20190102 20191231 香蕉", ("signal", "ma_cross", (MAOTAI,), "20190102", "20191231", {},
                                                     ("香蕉",))),
    # factor
    ("因子 动量 2019年3月1日 2020年6月1日 window＝20", ("factor", "momentum", (), "20190301", "20200601",
                                                    {"window": "20"}, ())),
    ("帮我算一个反转因子 20190301 20200601", ("factor", "reversal", (), "20190301", "20200601", {}, ())),
    ("因子 波动率 贵州茅台，平安银行 20190102 20191231 name＝vol20",
     ("factor", "volatility", (MAOTAI, PINGAN), "20190102", "20191231", {"name": "vol20"}, ())),
    ("因子 动量 20190102 20191231 窗口=60", ("factor", "momentum", (), "20190102", "20191231", {"window": "60"}, ())),
    # order
    ("下单 600519.SH 买入 100", ("order", MAOTAI, "buy", 100, None)),
    ("下单 贵州茅台 买 100股 limit＝1700", ("order", MAOTAI, "buy", 100, "1700.00")),
    ("下单 平安银行 卖出 1，000 limit＝14.5", ("order", PINGAN, "sell", 1000, "14.50")),
    ("order 600519.SH 买 100", ("order", MAOTAI, "buy", 100, None)),
    ("下单 平安 买入 100", ("order", "平安 is not one stock (which one: 000001.SZ 平安银行, 601318.SH 中国平安?): "
                                    "give its ts_code")),
    # analyze
    ("分析 600519.SH", ("analyze", MAOTAI, None, None, 1)),
    ("分析 贵州茅台 2020年6月30日 depth＝2", ("analyze", MAOTAI, "20200630", None, 2)),
    ("请分析贵州茅台", ("analyze", MAOTAI, None, None, 1)),
    ("分析 600519.SH 2020年1月2日..2020年6月30日", ("analyze", MAOTAI, "20200102", "20200630", 1)),
    # rule
    ("规则 运行 1", ("rule",)),
    ("规则 run １", ("rule",)),
    # not a request of any workflow: commands and answers
    ("账户", (None,)),
    ("委托 全部", (None,)),
    ("2020年1月2日 2020年6月30日", (None,)),
    ("帮我生成香蕉信号 600519.SH", (None,)),
]


@pytest.mark.parametrize(("text", "expected"), TABLE)
def test_a_chinese_request_reads_as_expected(text: str, expected: tuple[object, ...]) -> None:
    assert reading(text) == expected


def test_the_table_is_at_least_thirty_requests() -> None:
    assert len(TABLE) >= 30


@pytest.mark.parametrize(("line", "usage", "args"), [
    ("账户", "account [NAME]", []), ("委托 全部", "orders [open|today|all] [NAME]", ["all"]),
    ("时钟 设置 2020年6月1日", "clock [next | set DATE]", ["set", "20200601"]),
    ("规则 回测 1 2020年1月2日 2020-06-30", "rule backtest ID START END", ["1", "20200102", "20200630"]),
    ("规则 列表", "rule list", []), ("交易开关 关", "trading [on|off]", ["off"]),
    ("规则 添加 600519.SH 「收盘价上穿30日均线买入」", "rule add", ["600519.SH", "收盘价上穿30日均线买入"]),
])
def test_chinese_commands_and_their_arguments(line: str, usage: str, args: list[str]) -> None:
    found = command_for(line)
    assert found is not None and found[0].usage.startswith(usage) and found[1] == args  # a rule's words as typed


def test_an_ambiguous_name_asks_which_stock() -> None:
    assert unused_question(["平安"], []) == (
        "I did not understand `平安` (which one: 000001.SZ 平安银行, 601318.SH 中国平安?), so nothing was run. Reply "
        "with what you meant, `ignore` to run without it, or `cancel`.")


@pytest.mark.parametrize(("typed", "read"), [("2020年6月1日", "20200601"), ("2020年06月01号", "20200601"),
                                             ("2020-6-1", "20200601"), ("2020/06/01", "20200601"),
                                             ("2020.6.1", "20200601"), ("20200601", "20200601"),
                                             ("2020-06-01至2020-06-30", "20200601 20200630"),
                                             ("limit=1700.50", "limit=1700.50")])
def test_chinese_dates(typed: str, read: str) -> None:
    assert normalize(typed) == read
