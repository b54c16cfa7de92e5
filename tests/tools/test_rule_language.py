"""The structured rule language: parsing, canonical text, errors pointing at their column, and decisions equal to
hand computations."""

from __future__ import annotations

import builtins
from decimal import Decimal

import pandas as pd
import pytest

from tools.data.local import SampleProvider
from tools.rules.evaluator import evaluate
from tools.rules.explanation import explain
from tools.rules.parser import parse_rule
from tools.rules.syntax import (
    And,
    Arith,
    Compare,
    Cross,
    Field,
    Indicator,
    Lookback,
    Neg,
    Not,
    Number,
    Or,
    Rule,
    RuleSyntaxError,
)

ISSUE_EXAMPLE = "buy when close > ma(30) and rsi(14) < 70; sell when close < ma(30) or rsi(14) > 80"

# 600000.SH, 2019-01-02 .. 2019-03-05 (40 bars), forward-adjusted closes of the bundled sample
SAMPLE_DATES = ["20190102", "20190103", "20190104", "20190107", "20190108", "20190109", "20190110", "20190111",
                "20190114", "20190115", "20190116", "20190117", "20190118", "20190121", "20190122", "20190123",
                "20190124", "20190125", "20190128", "20190129", "20190130", "20190131", "20190201", "20190211",
                "20190212", "20190213", "20190214", "20190215", "20190218", "20190219", "20190220", "20190221",
                "20190222", "20190225", "20190226", "20190227", "20190228", "20190301", "20190304", "20190305"]
SAMPLE_CLOSES = [8.9218175, 9.02299275, 9.160959, 9.1793545, 9.160959, 9.18855225, 9.160959, 9.24373875,
                 9.2529365, 9.29892525, 9.31732075, 9.35411175, 9.59325325, 9.51967125, 9.42769375, 9.44608925,
                 9.5472645, 9.6576375, 9.5840555, 9.7312195, 9.6576375, 9.86918575, 9.90597675, 9.8415925,
                 9.859988, 9.9887565, 9.9519655, 9.8048015, 9.970361, 9.93357, 9.96116325, 9.92437225,
                 10.12672275, 10.963718, 10.71537875, 10.88093825, 10.7981585, 11.0556955, 11.0556955, 11.0189045]


def _bars(closes: list[float], **columns: list[float]) -> pd.DataFrame:
    index = pd.DatetimeIndex(pd.date_range("2024-01-01", periods=len(closes), freq="D"), name="trade_date")
    return pd.DataFrame({"close": closes, **columns}, index=index)


def _error(text: str) -> RuleSyntaxError:
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule(text)
    return caught.value


# ---------------------------------------------------------------------------------------------------- parsing


def test_the_issues_example_parses_to_its_tree() -> None:
    ma30, rsi14, close = Indicator("ma", (30,)), Indicator("rsi", (14,)), Field("close")
    assert parse_rule(ISSUE_EXAMPLE) == Rule(
        buy=And((Compare(">", close, ma30), Compare("<", rsi14, Number(Decimal(70))))),
        sell=Or((Compare("<", close, ma30), Compare(">", rsi14, Number(Decimal(80))))),
    )
    assert parse_rule(ISSUE_EXAMPLE).describe() == ISSUE_EXAMPLE


def test_describe_is_canonical_and_parses_back() -> None:
    text = "SELL WHEN Close<MA(30)  ;  buy when (close>ma(20)*1.020) AND NOT(rsi(14)>=70 or kdj.j>100);"
    rule = parse_rule(text)
    canonical = ("buy when close > ma(20) * 1.02 and not (rsi(14) >= 70 or kdj(9,3,3).j > 100); "
                 "sell when close < ma(30)")
    assert rule.describe() == canonical
    assert parse_rule(canonical) == rule


@pytest.mark.parametrize(("text", "canonical"), [
    ("buy when macd.hist > 0", "buy when macd(12,26,9).hist > 0"),
    ("buy when macd(5, 10).dif > macd.dea", "buy when macd(5,10,9).dif > macd(12,26,9).dea"),
    ("buy when close < boll.lower", "buy when close < boll(20,2).lower"),
    ("buy when close > boll(10, 2.50).upper", "buy when close > boll(10,2.5).upper"),
    ("buy when (close - open) / (high - low) > 0.5", "buy when (close - open) / (high - low) > 0.5"),
    ("buy when close - (open - low) > 1", "buy when close - (open - low) > 1"),
    ("buy when (close - open) - low > 1", "buy when close - open - low > 1"),
    ("buy when -(close + 1) * -2 < 3", "buy when -(close + 1) * -2 < 3"),
    ("buy when ((close > 1)) or volume > volume[1] and not not atr(5) > 0.2",
     "buy when close > 1 or volume > volume[1] and not not atr(5) > 0.2"),
    ("buy when (close > 1 or close > 2) and close > 3", "buy when (close > 1 or close > 2) and close > 3"),
    ("buy when ema(5) crosses ABOVE ema(20)", "buy when ema(5) crosses above ema(20)"),
    ("buy when 1.50 > 007", "buy when 1.5 > 7"),
])
def test_canonical_forms(text: str, canonical: str) -> None:
    rule = parse_rule(text)
    assert rule.describe() == canonical
    assert parse_rule(canonical) == rule


def test_trees_of_arithmetic_lookback_and_crosses() -> None:
    rule = parse_rule("sell when -macd.hist crosses below close[2] / 2; buy when not open == 3")
    assert rule == Rule(
        buy=Not(Compare("==", Field("open"), Number(Decimal(3)))),
        sell=Cross("below", Neg(Indicator("macd", (12, 26, 9), "hist")),
                   Arith("/", Lookback(Field("close"), 2), Number(Decimal(2)))),
    )


def test_indicators_needed_and_warmup() -> None:
    rule = parse_rule("buy when close > ma(30) and rsi(14) < 70 and close > ma(30)[2]; "
                      "sell when macd.hist crosses below 0 or close[3] > boll.upper or atr(10) > kdj.k")
    assert rule.indicators_needed() == (
        Indicator("ma", (30,)), Indicator("rsi", (14,)), Indicator("macd", (12, 26, 9), "hist"),
        Indicator("boll", (20, Decimal(2)), "upper"), Indicator("atr", (10,)), Indicator("kdj", (9, 3, 3), "k"),
    )
    assert [i.warmup for i in rule.indicators_needed()] == [29, 14, 33, 19, 10, 8]
    # macd(12,26,9) starts at bar 33 and a cross also reads the previous bar: 34 bars before the first decision
    assert rule.warmup == 34
    assert parse_rule("buy when close > ma(30)[2]").warmup == 31
    assert parse_rule("buy when close > close[5]").warmup == 5
    assert parse_rule("buy when close crosses above 10").warmup == 1
    assert parse_rule("sell when close > 10").warmup == 0


# ---------------------------------------------------------------------------------------------------- errors


@pytest.mark.parametrize(("text", "message", "column"), [
    ("buy when ma(30) rsi(14) < 70", "expected a comparison operator after 'ma(30)'", 17),
    ("buy when close", "expected a comparison operator after 'close'", 15),
    ("buy when ma(0) > 1", "ma's n must be a whole number from 2 to 1000, got 0", 13),
    ("buy when ema(2.5) > 1", "ema's n must be a whole number from 2 to 1000, got 2.5", 14),
    ("buy when boll(20,0.05).upper > 1", "boll's k must be a number from 0.1 to 10, got 0.05", 18),
    ("buy when foo(3) > 1",
     "unknown indicator 'foo'; known indicators: ma, ema, rsi, macd, boll, atr, kdj", 10),
    ("buy when price > 1",
     "unknown name 'price'; expected a price field (open, high, low, close, volume), an indicator "
     "(ma, ema, rsi, macd, boll, atr, kdj) or a number", 10),
    ("buy when ma(5,10) > 1", "ma(n) takes 1 parameter, got 2", 15),
    ("buy when macd(1,2,3,4).dif > 1", "macd(fast, slow, signal) takes 3 parameters, got 4", 21),
    ("buy when ma > 1", "ma needs its n parameter, as in ma(n)", 10),
    ("buy when ma() > 1", "expected a number as a parameter of ma", 13),
    ("buy when ma(5 > 1", "expected ',' or ')' in the parameters of ma", 15),
    ("buy when macd > 0", "macd has several lines: use macd.dif, macd.dea or macd.hist", 15),
    ("buy when macd.signal > 0", "macd has no line 'signal': use macd.dif, macd.dea or macd.hist", 15),
    ("buy when macd(26,12,9).dif > 0", "macd's fast period (26) must be shorter than its slow period (12)", 10),
    ("buy when rsi.value > 50", "rsi has a single line: nothing may follow it after '.'", 13),
    ("buy when close(5) > 1", "close is a price field and takes no parameters", 15),
    ("", "expected 'buy when' or 'sell when'", 1),
    ("hold when close > 1", "expected 'buy when' or 'sell when'", 1),
    ("buy close > 1", "expected 'when' after 'buy'", 5),
    ("buy when close > 1; buy when close > 2", "a rule has at most one buy clause", 21),
    ("buy when close > 1;; sell when close < 1", "expected 'buy when' or 'sell when'", 20),
    ("buy when close > 1 sell when close < 1",
     "expected 'and', 'or', ';' or the end of the rule after 'close > 1'", 20),
    ("buy when 1 < close < 2", "expected 'and', 'or', ';' or the end of the rule after '1 < close'", 20),
    ("buy when (close > 1", "expected ')' to close the '(' of column 10", 20),
    ("buy when close >", "expected a number, a price field or an indicator", 17),
    ("buy when close > and", "expected a number, a price field or an indicator", 18),
    ("buy when close = 1", "unexpected character '=' (compare with '==')", 16),
    ("buy when close > 1 && open > 1", "unexpected character '&' (use 'and')", 20),
    ("buy when close crosses ma(5)", "expected 'above' or 'below' after 'crosses'", 24),
    ("buy when (close > 1) + 1 > 2", "expected a value, not the condition '(close > 1)'", 10),
    ("buy when close > (open < 1)", "expected a value, not the condition '(open < 1)'", 18),
    ("buy when not close", "expected a comparison operator after 'close'", 19),
    ("buy when close > 1 and open", "expected a comparison operator after 'open'", 28),
    ("buy when close[1.5] > 1", "expected a whole number of bars from 1 to 250 inside '[...]'", 16),
    ("buy when close[0] > 1", "expected a whole number of bars from 1 to 250 inside '[...]'", 16),
    ("buy when close[2 > 1", "expected ']' after the number of bars", 18),
])
def test_errors_point_at_their_column(text: str, message: str, column: int) -> None:
    error = _error(text)
    assert isinstance(error, ValueError)
    assert (error.problem, error.column) == (message, column)
    assert str(error) == f"{message} at column {column}\n{text}\n{' ' * (column - 1)}^"


def test_the_error_message_layout() -> None:
    assert str(_error("buy when ma(30) rsi(14) < 70")) == (
        "expected a comparison operator after 'ma(30)' at column 17\n"
        "buy when ma(30) rsi(14) < 70\n"
        + " " * 16 + "^"
    )
    # whitespace other than spaces is shown as spaces, so the caret stays under its character
    assert str(_error("buy when\tclose >\n")) == (
        "expected a number, a price field or an indicator at column 18\n"
        "buy when close > \n"
        + " " * 17 + "^"
    )


@pytest.mark.parametrize(("text", "column"), [
    ("__import__('os')", 1),
    ("__import__('os').system('echo hi')", 1),
    ("buy when __import__('os').system('x') > 1", 10),
    ("buy when close.__class__ > 1", 15),
    ("buy when close > 1; sell when eval('1') > 0", 31),
    ("buy when [c for c in ()] > 1", 10),
    ("buy when close > 'x'", 18),
    ("buy when lambda: 1", 10),
])
def test_python_is_never_run(text: str, column: int, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the parser must not run Python")

    for name in ("eval", "exec", "compile"):
        monkeypatch.setattr(builtins, name, refuse)
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule(text)
    assert caught.value.column == column


# ---------------------------------------------------------------------------------------------------- evaluation


def _wilder_rsi(closes: list[float], n: int) -> list[float | None]:
    """RSI from its definition: Wilder's smoothing seeded with the mean of the first n gains and losses."""
    changes = [b - a for a, b in zip(closes, closes[1:], strict=False)]
    gains, losses = [max(c, 0.0) for c in changes], [max(-c, 0.0) for c in changes]
    out: list[float | None] = [None] * len(closes)
    avg_gain, avg_loss = sum(gains[:n]) / n, sum(losses[:n]) / n
    out[n] = 100 * avg_gain / (avg_gain + avg_loss)
    for i in range(n + 1, len(closes)):
        avg_gain = (avg_gain * (n - 1) + gains[i - 1]) / n
        avg_loss = (avg_loss * (n - 1) + losses[i - 1]) / n
        out[i] = 100 * avg_gain / (avg_gain + avg_loss)
    return out


def test_decisions_equal_a_hand_computation_over_real_history() -> None:
    sample = SampleProvider().daily("600000.SH", "20190102", "20190305", ["close"])
    assert list(sample["trade_date"]) == SAMPLE_DATES
    assert sample["close"].tolist() == pytest.approx(SAMPLE_CLOSES, abs=1e-12)
    closes = SAMPLE_CLOSES
    ma10: list[float | None] = [None] * 9 + [sum(closes[i - 9:i + 1]) / 10 for i in range(9, len(closes))]
    rsi6 = _wilder_rsi(closes, 6)
    # two hand-checked values: MA(10) on the 10th bar, and RSI(6) on the 7th (gains 0.28513025, losses 0.04598875)
    assert ma10[9] == pytest.approx(9.15911945, abs=1e-12)
    assert rsi6[6] == pytest.approx(775 / 9, abs=1e-9)
    expected = []
    for close, ma, rsi in zip(closes, ma10, rsi6, strict=True):
        buy = ma is not None and rsi is not None and close > ma and rsi < 70
        sell = (ma is not None and close < ma) or (rsi is not None and rsi > 80)
        expected.append("buy" if buy and not sell else "sell" if sell and not buy else "hold")
    bars = pd.DataFrame({"close": closes}, index=pd.DatetimeIndex(pd.to_datetime(SAMPLE_DATES, format="%Y%m%d")))
    frame = evaluate("buy when close > ma(10) and rsi(6) < 70; sell when close < ma(10) or rsi(6) > 80", bars)
    assert frame["action"].tolist() == expected
    assert "".join(a[0] for a in expected) == "hhhhhhssssssssbbhsbhbhhbhhhsbbbbhshhhhhh"
    assert frame["ma(10)"].tolist()[9:] == pytest.approx(ma10[9:], abs=1e-9)
    assert frame["rsi(6)"].tolist()[6:] == pytest.approx(rsi6[6:], abs=1e-9)
    assert frame["ma(10)"].iloc[:9].isna().all() and frame["rsi(6)"].iloc[:6].isna().all()
    assert frame["warming_up"].tolist() == [True] * 9 + [False] * 31


def test_evaluate_columns_and_reasons() -> None:
    frame = evaluate("buy when close > ma(3) and close[1] < 12; sell when close < ma(3)",
                     _bars([10.0, 11.0, 12.0, 13.0, 9.0]))
    assert list(frame.columns) == ["action", "reason", "buy_condition", "sell_condition", "warming_up", "close",
                                   "ma(3)", "close > ma(3)", "close[1]", "close[1] < 12", "close < ma(3)"]
    # ma(3): -, -, 11, 12, 34/3; close[1]: -, 10, 11, 12, 13
    assert frame["ma(3)"].tolist()[2:] == pytest.approx([11.0, 12.0, 34 / 3])
    assert frame["close > ma(3)"].tolist()[2:] == [True, True, False]
    assert frame["close > ma(3)"].iloc[:2].isna().all()
    assert frame["action"].tolist() == ["hold", "hold", "buy", "hold", "sell"]
    assert frame["reason"].tolist() == [
        "warming up: ma(3), close[1] have no value yet; neither condition holds",
        "warming up: ma(3) has no value yet; neither condition holds",
        "the buy condition holds: close > ma(3) and close[1] < 12",
        "neither condition holds",
        "the sell condition holds: close < ma(3)",
    ]


def test_crosses_above_and_below() -> None:
    closes = [1.0, 2.0, 3.0, 4.0, 5.0, 4.0, 3.0, 2.0, 3.0, 4.0]
    # ma(3) from bar 2: 2, 3, 4, 13/3, 4, 3, 8/3, 3; close - ma: 1, 1, 1, -1/3, -1, -1, 1/3, 1
    frame = evaluate("buy when close crosses above ma(3); sell when close crosses below ma(3)", _bars(closes))
    assert frame["action"].tolist() == ["hold"] * 5 + ["sell", "hold", "hold", "buy", "hold"]
    # bar 2 has ma(3) but not the previous bar's: the cross is unknown, still warming up
    assert frame["warming_up"].tolist() == [True, True, True] + [False] * 7
    assert frame["close crosses above ma(3)"].iloc[:3].isna().all()


def test_a_cross_counts_from_touching() -> None:
    frame = evaluate("buy when close crosses above 3; sell when close crosses below 3",
                     _bars([2.0, 3.0, 4.0, 3.0, 2.0, 3.0, 3.0, 4.0]))
    assert frame["action"].tolist() == ["hold", "hold", "buy", "hold", "sell", "hold", "hold", "buy"]


def test_a_conflict_holds() -> None:
    frame = evaluate("buy when close > 1; sell when close > 2", _bars([1.0, 2.0, 3.0]))
    assert frame["action"].tolist() == ["hold", "buy", "hold"]
    assert frame["buy_condition"].tolist() == [False, True, True]
    assert frame["sell_condition"].tolist() == [False, False, True]
    assert frame["reason"].iloc[2] == "conflict: both the buy and the sell conditions hold, so the rule holds"


def test_not_of_a_warming_comparison_stays_unknown() -> None:
    frame = evaluate("buy when not close > ma(3)", _bars([5.0, 4.0, 3.0, 2.0]))
    # ma(3) on bars 2 and 3: 4 and 3; close 3 and 2 are below it, so "not close > ma(3)" holds there
    assert frame["action"].tolist() == ["hold", "hold", "buy", "buy"]
    assert frame["reason"].iloc[0] == "warming up: ma(3) has no value yet; the buy condition does not hold"
    assert frame["reason"].iloc[2] == "the buy condition holds: not close > ma(3)"


def test_or_with_one_side_known_decides() -> None:
    frame = evaluate("sell when close < ma(3) or close > 4", _bars([5.0, 3.0, 3.0, 3.5]))
    # bar 0: 5 > 4 decides although ma(3) is missing; bar 1: unknown or false; bar 2: 3 < 11/3; bar 3: 3.5 > 19/6
    assert frame["action"].tolist() == ["sell", "hold", "sell", "hold"]
    assert frame["warming_up"].tolist() == [True, True, False, False]


def test_volume_reads_the_vol_column_and_ohlc_indicators() -> None:
    bars = _bars([10.0, 11.0, 12.0], high=[10.5, 11.5, 12.5], low=[9.5, 10.5, 11.5], vol=[100.0, 300.0, 200.0])
    frame = evaluate("buy when volume > volume[1] * 2 and atr(1) >= 1.5", bars)
    # atr(1) from bar 1: TR = max(high, prev close) - min(low, prev close) = 11.5 - 10 = 1.5, then 12.5 - 11 = 1.5
    assert frame["atr(1)"].tolist()[1:] == [1.5, 1.5]
    assert frame["volume[1] * 2"].tolist()[1:] == [200.0, 600.0]
    assert frame["action"].tolist() == ["hold", "buy", "hold"]


def test_missing_columns_are_named() -> None:
    with pytest.raises(ValueError, match="the bars have no high column"):
        evaluate("buy when kdj.k > 50", _bars([1.0, 2.0]))


def test_no_look_ahead() -> None:
    frame = SampleProvider().daily("600000.SH", "20190102", "20190830", ["open", "high", "low", "close", "vol"])
    bars = frame.set_index(pd.DatetimeIndex(pd.to_datetime(frame["trade_date"], format="%Y%m%d")))
    rule = ("buy when macd.hist crosses above 0 and kdj.j < 80 and close > boll.mid; "
            "sell when ema(12) crosses below ema(26) or rsi(14) > 75 or close < close[1] - 2 * atr(14)")
    before = evaluate(rule, bars)
    t = 120
    changed = bars.copy()
    changed.iloc[t + 1:, changed.columns.get_indexer(["open", "high", "low", "close"])] *= 1.7
    changed.iloc[t + 5, changed.columns.get_loc("close")] = float("nan")
    after = evaluate(rule, changed)
    pd.testing.assert_frame_equal(before.iloc[:t + 1], after.iloc[:t + 1])
    assert not before.iloc[t + 1:].equals(after.iloc[t + 1:])
    assert set(before["action"].iloc[:t + 1]) == {"buy", "sell", "hold"}


# ---------------------------------------------------------------------------------------------------- explanation


def test_explain_logs_every_step() -> None:
    steps = explain("buy when close > ma(3) and close[1] < 12", _bars([10.0, 11.0, 12.0, 13.0, 9.0]), "2024-01-04")
    assert steps == [
        {"step": 1, "type": "calculation", "reasoning": "close on 2024-01-04 = 13",
         "action": {"name": "price", "params": {"field": "close"}}, "intermediate_result": {"close": 13.0}},
        {"step": 2, "type": "calculation", "reasoning": "ma(3) on 2024-01-04 = 12",
         "action": {"name": "ma", "params": {"n": 3}}, "intermediate_result": {"ma(3)": 12.0}},
        {"step": 3, "type": "calculation", "reasoning": "close=13, ma(3)=12 → close > ma(3) true",
         "action": {"name": "compare", "params": {"expression": "close > ma(3)"}},
         "intermediate_result": {"close": 13.0, "ma(3)": 12.0, "close > ma(3)": True}},
        {"step": 4, "type": "calculation", "reasoning": "close[1] on 2024-01-04 = 12",
         "action": {"name": "price", "params": {"field": "close", "bars_ago": 1}},
         "intermediate_result": {"close[1]": 12.0}},
        {"step": 5, "type": "calculation", "reasoning": "close[1]=12 → close[1] < 12 false",
         "action": {"name": "compare", "params": {"expression": "close[1] < 12"}},
         "intermediate_result": {"close[1]": 12.0, "close[1] < 12": False}},
        {"step": 6, "type": "calculation", "reasoning": "buy when close > ma(3) and close[1] < 12 → false",
         "action": {"name": "condition", "params": {"clause": "buy", "expression": "close > ma(3) and close[1] < 12"}},
         "intermediate_result": {"buy_condition": False}},
        {"step": 7, "type": "decision", "reasoning": "buy when close > ma(3) and close[1] < 12", "action": "hold",
         "reason": "the buy condition does not hold", "confidence": 1.0},
    ]


def test_explain_shows_warm_up_crosses_and_arithmetic() -> None:
    bars = _bars([3.0, 1.0, 1.0, 6.0])
    steps = explain("sell when close * 2 crosses above ma(2) + 1", bars, "2024-01-02")
    assert steps[3] == {
        "step": 4, "type": "calculation", "reasoning": "ma(2) + 1 on 2024-01-02 = 3",
        "action": {"name": "arithmetic", "params": {"expression": "ma(2) + 1"}},
        "intermediate_result": {"ma(2) + 1": 3.0}}
    # on 2024-01-02 ma(2) = 2 has no previous value: the cross is unknown
    assert steps[4]["reasoning"] == ("close * 2=2 (previous bar 6), ma(2) + 1=3 (previous bar no value) → "
                                     "close * 2 crosses above ma(2) + 1 unknown (warming up)")
    assert steps[4]["intermediate_result"] == {
        "close * 2": 2.0, "ma(2) + 1": 3.0, "close * 2 (previous bar)": 6.0, "ma(2) + 1 (previous bar)": None,
        "close * 2 crosses above ma(2) + 1": None}
    assert steps[-1]["reason"] == "warming up: ma(2) has no value yet; the sell condition does not hold"
    last = explain("sell when close * 2 crosses above ma(2) + 1", bars)  # the last bar: 12 > 4.5 after 2 <= 2
    assert last[4]["intermediate_result"]["close * 2 crosses above ma(2) + 1"] is True
    assert last[-1]["action"] == "sell"


def test_explain_reads_nothing_after_its_bar() -> None:
    bars = _bars([10.0, 11.0, 12.0, 13.0])
    later = bars.copy()
    later.iloc[3, 0] = 1000.0
    rule = "buy when close > ma(3)"
    assert explain(rule, bars, "2024-01-03") == explain(rule, later, "2024-01-03")
    with pytest.raises(ValueError, match="no bar on 2024-02-01"):
        explain(rule, bars, "2024-02-01")


def test_full_width_forms_of_a_chinese_input_method_read_as_ascii_and_refusals_point_into_the_rule_as_typed() -> None:
    typed = "buy when close ＞ ma（30）； sell when close ＜ ma（３０）"
    assert parse_rule(typed) == parse_rule("buy when close > ma(30); sell when close < ma(30)")
    with pytest.raises(RuleSyntaxError) as caught:
        parse_rule("buy when close ＝ 3")
    assert caught.value.column == 16 and str(caught.value).splitlines()[1] == "buy when close ＝ 3"
