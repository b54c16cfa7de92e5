"""Issue 25, items 3 and 4: every grammar reads a normalised copy of the line (full-width forms, Chinese quotes and
punctuation, Chinese command words), and a token no grammar used is named back instead of being dropped."""

from __future__ import annotations

import shlex
import unicodedata
from pathlib import Path

import pytest

from graphs.analyze.grammar import DecisionGrammarError, parse_request
from graphs.factor import spec as factor
from graphs.grammar import first_word, normalize, unquote_marks, unused_question
from graphs.order.grammar import OrderGrammarError, parse_order
from graphs.registry import command_for, workflow_for
from graphs.signal import grammar as signal
from graphs.signal.library import STRATEGIES
from testkit.console import console_lines

REQUESTS = [
    "signal ma_cross 600519.SH,000001.SZ 20190102 20191231 fast=10 slow=30",
    "signal rsi 600519.SH 2019-01-02 2019-12-31 window=14 lower=30 upper=70",
    "factor momentum 600519.SH,000001.SZ 20190102 20200630 window=60 name=mom60",
    "factor combo 0.5*momentum(20) - volatility(20) 20190301 20200601",
    "order 600519.SH buy 1,000 limit=1700.50 account=desk-1 rebalance",
    "order 000001.SZ sell 200",
    "analyze 600519.SH 20200102..20200630 every=5d depth=2 session=post_close",
    "analyze 000001.SZ 20200630 analysts=market,news depth=3",
]
ASCII = "".join(chr(c) for c in range(0x21, 0x7F))


def _full_width(text: str, chars: str) -> str:
    """`text` with each of `chars` typed as a Chinese input method's full-width form (a space as U+3000)."""
    return "".join(("\u3000" if c == " " else chr(ord(c) + 0xFEE0)) if c in chars else c for c in text)


def _readings(text: str) -> tuple[object, ...]:
    """What every grammar makes of `text` (an error's message counts as its reading)."""
    def attempt(read):  # type: ignore[no-untyped-def]
        try:
            return read(text)
        except (OrderGrammarError, DecisionGrammarError) as exc:
            return str(exc)
    return (first_word(text), workflow_for(text), signal.parse(text), factor.parse(text), attempt(parse_order),
            attempt(parse_request))


@pytest.mark.parametrize("request_text", REQUESTS)
@pytest.mark.parametrize("chars", [ASCII + " ", "=", "0123456789", " ", ",", ",.=()*-_ ", "abcdefghSHZ"])
def test_nfkc_equal_requests_read_the_same(request_text: str, chars: str) -> None:
    variant = _full_width(request_text, chars)
    assert unicodedata.normalize("NFKC", variant) == request_text  # the variant is what an input method types
    assert _readings(variant) == _readings(request_text)


@pytest.mark.parametrize(("text", "strategy", "codes", "dates", "params", "unknown"), [
    ("signal ma_cross 600519.SH 20190102 20191231 fast＝10 slow＝30", "ma_cross", ("600519.SH",),
     ("20190102", "20191231"), {"fast": "10", "slow": "30"}, ()),
    ("信号 均线交叉 600519.SH 20190102 20191231", "ma_cross", ("600519.SH",), ("20190102", "20191231"), {}, ()),
    ("信号 动量 600519.SH，000001.SZ 20190102 20191231 top＝0.3", "momentum", ("600519.SH", "000001.SZ"),
     ("20190102", "20191231"), {"top": "0.3"}, ()),
    ("信号 布林带 600519.SH、000001.SZ 20190102 20191231 k＝2", "bollinger", ("600519.SH", "000001.SZ"),
     ("20190102", "20191231"), {"k": "2"}, ()),
    ("信号 相对强弱 ６００５１９.ＳＨ　２０１９０１０２　２０１９１２３１", "rsi", ("600519.SH",),
     ("20190102", "20191231"), {}, ()),
    ("信号 均值回归 600519.SH 20190102 20191231。", "mean_reversion", ("600519.SH",), ("20190102", "20191231"),
     {}, ()),
    ("signal ma_cross 600519.SH 20190102 20191231 banana", "ma_cross", ("600519.SH",), ("20190102", "20191231"),
     {}, ("banana",)),
    ("signal ma_cross 600519.SH 20190102 20191231 fast：10", "ma_cross", ("600519.SH",), ("20190102", "20191231"),
     {}, ("fast:10",)),
    ("均线交叉 600519.SH 20190102 20191231 快线=10", "ma_cross", ("600519.SH",), ("20190102", "20191231"),
     {"fast": "10"}, ()),
    ("fast＝10 slow＝30", None, (), (), {"fast": "10", "slow": "30"}, ()),
])
def test_signal_requests_in_chinese_and_mixed(text: str, strategy: str | None, codes: tuple[str, ...],
                                              dates: tuple[str, ...], params: dict[str, str],
                                              unknown: tuple[str, ...]) -> None:
    request = signal.parse(text)
    assert (request.strategy, request.codes, (request.start, request.end)[:len(dates)], request.params,
            request.unknown_words) == (strategy, codes, dates, params, unknown)


@pytest.mark.parametrize(("text", "kind", "params", "unused"), [
    ("factor momentum 20190102 20191231 window＝60", "momentum", {"window": "60"}, []),
    ("因子 动量 20190102 20191231 window＝60", "momentum", {"window": "60"}, []),
    ("因子 反转 20190102 20191231", "reversal", {}, []),
    ("因子 波动率 600519.SH，000001.SZ 20190102 20191231 name＝vol20", "volatility", {"name": "vol20"}, []),
    ("factor momentum 20190102 20191231 banana", "momentum", {}, ["banana"]),
    ("factor momentum 20190102 20191231 windw=60", "momentum", {"windw": "60"}, ["windw=60"]),
    ("因子 combo 0.5*momentum（20） － volatility（20） 20190301 20200601", "combo", {}, []),
])
def test_factor_requests_in_chinese_and_mixed(text: str, kind: str, params: dict[str, str],
                                              unused: list[str]) -> None:
    request = factor.parse(text)
    assert (request.kind, request.params, request.unused()) == (kind, params, unused)
    assert workflow_for(text) is not None and workflow_for(text).name == "factor"  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "side", "quantity", "limit"), [
    ("order 600519.SH 买 100", "buy", 100, None),
    ("下单 600519.SH 买入 １００ limit＝1700", "buy", 100, "1700.00"),
    ("下单 000001.SZ 卖 200", "sell", 200, None),
    ("order 000001.SZ 卖出 1，000 limit＝14.5", "sell", 1000, "14.50"),
])
def test_orders_in_chinese(text: str, side: str, quantity: int, limit: str | None) -> None:
    intent = parse_order(text)
    assert (intent.side, intent.quantity, intent.limit_price) == (side, quantity, limit)
    assert workflow_for(text) is not None and workflow_for(text).name == "order"  # type: ignore[union-attr]


@pytest.mark.parametrize(("text", "message"), [
    ("order 600519.SH buy 100 limt=1700", "unknown parameter limt (did you mean `limit=1700`?)"),
    ("analyze 600519.SH depht=2", "unknown parameter depht (did you mean `depth=2`?)"),
    ("analyze 600519.SH banana", "cannot read `banana`; nothing was run"),
    ("analyze 600519.SH markt", "cannot read `markt` (did you mean `market`?)"),
])
def test_unused_tokens_are_named_with_a_suggestion(text: str, message: str) -> None:
    with pytest.raises((OrderGrammarError, DecisionGrammarError), match=message.replace("(", r"\(").replace(
            ")", r"\)").replace("?", r"\?")):
        parse_order(text) if text.startswith("order") else parse_request(text)


@pytest.mark.parametrize(("text", "name"), [
    ("分析 600519.SH depth＝2", "analyze"), ("规则 run 1", "rule"), ("信号 rsi 600519.SH 20190102 20191231", "signal"),
    ("动量 600519.SH,000001.SZ 20190102 20191231", "signal"), ("下单 600519.SH 买 100", "order"),
])
def test_chinese_workflow_words_route(text: str, name: str) -> None:
    assert workflow_for(text) is not None and workflow_for(text).name == name  # type: ignore[union-attr]


@pytest.mark.parametrize(("line", "usage"), [
    ("账户", "account [NAME]"), ("持仓", "account [NAME]"), ("委托 all", "orders [open|today|all] [NAME]"),
    ("取消 3", "cancel ORDER"), ("规则 list", "rule list"), ("因子 list", "factor list"),
])
def test_chinese_command_words_are_commands(line: str, usage: str) -> None:
    found = command_for(line)
    assert found is not None and found[0].usage.startswith(usage)


def test_the_question_names_each_unused_token_and_suggests_what_fits() -> None:
    request = signal.parse("signal ma_cross 600519.SH 20190102 20191231 banana ma_cros")
    question = unused_question(request.unknown_words, signal.vocabulary(request.strategy))
    assert question.startswith("I did not understand `banana`, `ma_cros` (did you mean `ma_cross`?), so nothing "
                               "was run.")
    assert "did you mean" not in question.split("`banana`")[1].split(",")[0]  # nothing fits banana
    with pytest.raises(ValueError, match=r"has no parameter slwo \(did you mean `slow=30`\?\)"):
        STRATEGIES["ma_cross"].resolve({"slwo": "30"})


def test_chinese_quotes_and_punctuation_are_read_as_ascii() -> None:
    assert shlex.split(unquote_marks("rule add 600519.SH “buy when close > ma(30)” size=100")) == [
        "rule", "add", "600519.SH", "buy when close > ma(30)", "size=100"]
    assert shlex.split(unquote_marks("rule add 600519.SH 「buy when close > ma(30)」")) == [
        "rule", "add", "600519.SH", "buy when close > ma(30)"]
    assert normalize("fast＝10，slow＝30。") == "fast=10,slow=30 "


def test_a_full_width_equals_sign_runs_the_parameters_typed_in_the_console(tmp_path: Path) -> None:
    """End to end in `quantdesk chat`: fast＝10 slow＝30 runs 10/30; an unknown word and a misspelt parameter are
    named back and nothing runs; `账户` at that question runs the account command and the question stays open;
    `order … 买 100` proposes a buy; a rule in curly quotes is saved with its text."""
    lines = console_lines(tmp_path, "signal ma_cross 600519.SH 20190102 20191231 fast＝10 slow＝30",
                  "signal ma_cross 600519.SH 20190102 20191231 banana slwo=30", "账户", "slow=30",
                  "order 600519.SH 买 100", "拒绝 不要了",
                  "rule add 600519.SH “buy when close > ma(30); sell when close < ma(30)” size＝100", "rule show 1")
    titles = [line for line in lines if line.startswith("Signal: ")]
    assert titles == ["Signal: ma_cross (fast=10, slow=30)", "Signal: ma_cross (fast=5, slow=30)"]
    asked = lines.index("? I did not understand `banana`, `slwo=30` (did you mean `slow=30`?), so nothing was run. "
                        "Reply with what you meant, `ignore` to run without it, or `cancel`.")
    assert lines[asked + 1] == "Paper account console"  # the command ran; it was not taken as the answer
    assert lines.index("Signal: ma_cross (fast=5, slow=30)") > asked + 1
    assert "--- approval: BUY 100 600519.SH 贵州茅台 at market ---" in lines
    assert any(line.startswith("Order rejected by ") and line.endswith(": 不要了. Nothing was placed.")
               for line in lines)
    saved = next(i for i, line in enumerate(lines) if line.startswith("Rule 1 saved, in the rule language"))
    assert lines[saved + 1:saved + 2] == ["  Requirements: buy when close > ma(30); sell when close < ma(30)"]
    assert "  Order size: 100 shares" in lines[saved:]


def test_a_factor_reads_a_full_width_window_and_ignore_runs_without_the_words_named(tmp_path: Path) -> None:
    lines = console_lines(tmp_path, "因子 动量 20190301 20200601 window＝60", "cancel",
                  "factor momentum 20190301 20200601 banana", "ignore", "cancel",
                  "信号 均线交叉 600519.SH 20190102 20191231 slwo=30", "ignore")
    reviews = [line.split(" (")[0] for line in lines if line.startswith("--- code review: ")]
    assert reviews == ["--- code review: factor momentum_60", "--- code review: factor momentum_20"]
    questions = [line for line in lines if line.startswith("? ")]
    assert questions == [
        "? I did not understand `banana`, so nothing was run. Reply with what you meant, `ignore` to run without it, "
        "or `cancel`.",
        "? I did not understand `slwo=30` (did you mean `slow=30`?), so nothing was run. Reply with what you meant, "
        "`ignore` to run without it, or `cancel`."]
    assert lines.index(questions[0]) < next(i for i, line in enumerate(lines) if "momentum_20" in line)
    assert [line for line in lines if line.startswith("Signal: ")] == ["Signal: ma_cross (fast=5, slow=20)"]


def test_a_reason_is_kept_as_typed_even_where_its_words_are_command_words() -> None:
    """`恢复` (resume) and `暂停` (pause) in a reason are the person's words, not keywords to translate; a keyword
    argument still is one."""
    trading = command_for("交易开关 关 暂停 交易 等恢复")
    assert trading is not None and trading[0].usage.startswith("trading")
    assert trading[1] == ["off", "暂停", "交易", "等恢复"]
    pause = command_for("规则 暂停 1 恢复 后再说")
    assert pause is not None and pause[0].usage.startswith("rule pause") and pause[1] == ["1", "恢复", "后再说"]
    orders = command_for("orders 全部")
    assert orders is not None and orders[1] == ["all"]
