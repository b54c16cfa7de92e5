"""Issue 25: refusals a person reads when what they typed or what the code computed cannot be used (a rule the
parser refuses, a factor whose output fails its checks) are in their language, and English stays as it was."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

from tools.factors.checks import check_factor
from tools.factors.ic import EvaluationError, evaluate_factor
from tools.i18n import using
from tools.rules.parser import parse_rule
from tools.rules.store import RuleError, check_schedule, check_threshold, check_timezone
from tools.rules.syntax import RuleSyntaxError


@pytest.mark.parametrize(("rule", "english", "chinese"), [
    ("buy when close = 3", "unexpected character '=' (compare with '==') at column 16",
     "意外的字符 '='（比较请用 '=='）（第 16 列）"),
    ("buy when close > ma(0)", "ma's n must be a whole number from 2 to 1000, got 0 at column 21",
     "ma 的 n 必须是 2 到 1000 之间的整数，实际为 0（第 21 列）"),
    ("buy when macd(12,26,9,1) > 0", "macd(fast, slow, signal) takes 3 parameters, got 4 at column 23",
     "macd(fast, slow, signal) 需要 3 个参数，实际给了 4 个（第 23 列）"),
    ("hold when close > 1", "expected 'buy when' or 'sell when' at column 1",
     "此处应为 'buy when' 或 'sell when'（第 1 列）"),
])
def test_a_refused_rule_says_why_in_the_readers_language(rule: str, english: str, chinese: str) -> None:
    for language, said in (("en", english), ("zh-CN", chinese)):
        with using(language), pytest.raises(RuleSyntaxError) as caught:
            parse_rule(rule)
        first, shown, caret = str(caught.value).splitlines()
        assert (first, shown) == (said, rule) and caret.endswith("^")


def test_a_factor_that_fails_its_checks_is_told_so_in_the_readers_language() -> None:
    dates = pd.date_range("2020-01-01", periods=30)
    reference = pd.DataFrame(np.arange(90.0).reshape(30, 3), index=dates, columns=["A", "B", "C"])
    constant = pd.DataFrame(1.0, index=dates, columns=reference.columns)
    with using("zh-CN"):
        assert check_factor(constant, reference, 0).problems == [
            "在 30 个日期中有 30 个日期所有股票的因子值相同：无法对股票排序"]
        assert check_factor(constant["A"], reference, 0).problems == [
            "compute_factor 必须返回 DataFrame，实际返回 Series（这是 Series：请返回“日期 × 股票代码”的 DataFrame，"
            "例如去掉 .stack() 或列选择）"]
    with using("en"):
        assert check_factor(constant, reference, 0).problems == [
            "the factor is the same for every code on 30 of 30 dates: it cannot rank stocks"]


def test_a_factor_that_cannot_be_evaluated_is_told_why_in_the_readers_language() -> None:
    dates = pd.date_range("2020-01-01", periods=30)
    factor = pd.DataFrame(np.arange(90.0).reshape(30, 3), index=dates, columns=["A", "B", "C"])
    prices = pd.DataFrame(10.0, index=dates + pd.Timedelta(days=400), columns=factor.columns)
    for language, said in (("en", "the factor and the prices share no dates or no codes (check date types and "
                                  "ts_code)"),
                           ("zh-CN", "因子与价格没有共同的日期或股票代码（请检查日期类型和 ts_code）")):
        with using(language), pytest.raises(EvaluationError, match=f"^{re.escape(said)}$"):
            evaluate_factor(factor, prices)


@pytest.mark.parametrize(("check", "value", "english", "chinese"), [
    (check_schedule, "bad cron", "schedule 'bad cron' is not a cron expression: give five fields, minute hour day "
     "month weekday, like '30 9 * * 1-5' (09:30 on weekdays)",
     "定时 'bad cron' 不是 cron 表达式：请给出五个字段（分 时 日 月 星期），例如 '30 9 * * 1-5'（工作日 09:30）"),
    (check_timezone, "Mars/Base", "unknown timezone 'Mars/Base': use an IANA name like Asia/Shanghai or UTC",
     "未知时区 'Mars/Base'：请使用 IANA 时区名，例如 Asia/Shanghai 或 UTC"),
    (check_threshold, 2.0, "threshold is the confidence a decision needs, between 0 and 1, not 2.0",
     "threshold 是决策所需的信心值，必须在 0 到 1 之间，而不是 2.0"),
])
def test_a_rules_schedule_timezone_and_threshold_are_refused_in_the_readers_language(
        check: Callable[[Any], object], value: object, english: str, chinese: str) -> None:
    for language, said in (("en", english), ("zh-CN", chinese)):
        with using(language), pytest.raises(RuleError) as caught:
            check(value)
        assert str(caught.value) == said
