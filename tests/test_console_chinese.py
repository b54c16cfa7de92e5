"""Issue 25, what it must show: a console session in Chinese, with no LLM, drives every workflow end to end (signal
with a follow-up change; factor with approve, edit and reject; analyze; rule add, backtest and run; order, approve
and account), and the same session in English gives the same numbers."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_cli import _quantdesk

CHINESE = """lang zh
信号 均线交叉 贵州茅台 2019年1月2日 2019年12月31日
fast＝10 slow＝30
因子 动量 2019年3月1日 2020年6月1日 window＝20
批准
因子 反转 2019年3月1日 2020年6月1日
编辑
return -(close / close.shift(10) - 1)
.
批准
因子 波动率 2019年3月1日 2020年6月1日
拒绝 不需要
分析 600519.SH
规则 添加 600519.SH “buy when close > ma(30); sell when close < ma(30)” size=100
规则 回测 1 2020年1月2日 2020年6月30日
规则 运行 1
批准
下单 平安银行 买入 1000股
批准
账户
"""
ENGLISH = """signal ma_cross 600519.SH 20190102 20191231
fast=10 slow=30
factor momentum 20190301 20200601 window=20
approve
factor reversal 20190301 20200601
edit
return -(close / close.shift(10) - 1)
.
approve
factor volatility 20190301 20200601
reject not needed
analyze 600519.SH
rule add 600519.SH "buy when close > ma(30); sell when close < ma(30)" size=100
rule backtest 1 20200102 20200630
rule run 1
approve
order 000001.SZ buy 1000
approve
account
"""
NUMBER = re.compile(r"[-+]?\d[\d,]*\.\d+%?")  # every figure with decimals: returns, ratios, prices, money


def _session(folder: Path, script: str) -> str:
    folder.mkdir()
    out = _quantdesk(["chat"], folder, script)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    return out.stdout


def test_a_chinese_console_session_drives_every_workflow_with_the_numbers_of_the_english_one(tmp_path: Path) -> None:
    chinese = _session(tmp_path / "zh", CHINESE)
    english = _session(tmp_path / "en", ENGLISH)
    lines = chinese.splitlines()
    assert lines[0] == "今后我用中文回复你。每个线程沿用发起人的语言。"
    for shown in ("信号：ma_cross (fast=5, slow=20)", "信号：ma_cross (fast=10, slow=30)",  # the follow-up re-ran
                  "  夏普比率（买入持有）: 1.58 (2.59)", "  最大回撤（买入持有）: -12.24% (-12.44%)",
                  "--- 代码审核：因子 momentum_20（检查通过；沙箱隔离：full）---",
                  "--- 代码审核：因子 reversal_5（检查通过；沙箱隔离：full）---",
                  "--- 审批：买入 100 股 600519.SH 贵州茅台，市价 ---",
                  "--- 审批：买入 1,000 股 000001.SZ 平安银行，市价 ---",
                  "委托已成交", "模拟账户 console"):
        assert shown in lines, shown
    assert any(line.startswith("已拒绝：因子 volatility_20 没有回填也没有保存。") and line.endswith(" 理由：不需要")
               for line in lines)
    assert "600519.SH · 20200824：技术指标（未配置 LLM）" in lines  # analyze, no LLM
    assert sum(line.startswith("  交易费用（买入持有）") for line in lines) == 3  # two signal runs, one rule backtest
    assert not [line for line in lines if line.startswith(("error", "错误"))]
    assert NUMBER.findall(chinese) == NUMBER.findall(english) and len(NUMBER.findall(english)) > 150
