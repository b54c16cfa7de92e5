"""Issue 25, what it must show: a console session in Chinese, with no LLM, drives every workflow end to end (signal
with a follow-up change; factor with approve, edit and reject; analyze; rule add, backtest and run; order, approve
and account), and the same session in English gives the same numbers."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

from testkit.console import console_session, english_left
from testkit.console_scripts import CHINESE, RULE

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


def test_a_chinese_console_session_drives_every_workflow_with_the_numbers_of_the_english_one(tmp_path: Path) -> None:
    chinese = console_session(tmp_path / "zh", CHINESE)
    english = console_session(tmp_path / "en", ENGLISH)
    lines = chinese.splitlines()
    assert lines[0] == "今后我用中文回复你。每个线程沿用发起人的语言。"
    for shown in ("信号：ma_cross (fast=5, slow=20)", "信号：ma_cross (fast=10, slow=30)",  # the follow-up re-ran
                  "  夏普比率: 策略 1.58 · 买入持有 2.59", "  最大回撤: 策略 -12.24% · 买入持有 -12.44%",
                  "--- 代码审核：因子 momentum_20（检查通过；沙箱隔离：full）---",
                  "--- 代码审核：因子 reversal_5（检查通过；沙箱隔离：full）---",
                  # the edit is reviewed again, with its diff, before the approve saves it
                  "--- 代码审核：因子 reversal_5_edit_86c6ab（检查通过；沙箱隔离：full）---",
                  "--- 相对最初审核代码的改动 ---", "+return -(close / close.shift(10) - 1)",
                  "--- 审批：买入 100 股 600519.SH 贵州茅台，市价 ---",
                  "--- 审批：买入 1,000 股 000001.SZ 平安银行，市价 ---",
                  "委托已成交", "模拟账户 console"):
        assert shown in lines, shown
    assert any(line.startswith("已拒绝：因子 volatility_20 没有回填也没有保存。") and line.endswith("。理由：不需要")
               for line in lines)
    assert any(line.startswith("因子 reversal_5_edit_86c6ab v1 已保存：") for line in lines)
    assert "600519.SH · 20200824：技术指标（未配置 LLM）" in lines  # analyze, no LLM
    assert sum(line.startswith("  交易费用: 策略 ") for line in lines) == 3  # two signal runs, one rule backtest
    assert not [line for line in lines if line.startswith(("error", "错误"))]
    assert NUMBER.findall(chinese) == NUMBER.findall(english) and len(NUMBER.findall(english)) > 150
    assert english_left(chinese, RULE) == []  # no sentence left in English (the rule's words are the user's)




def test_the_english_sentence_finder_finds_sentences_and_leaves_codes_alone() -> None:
    assert english_left("注：ST status unknown; limits assume not ST") == ["ST status unknown", "limits assume not ST"]
    assert english_left("委托 1 已成交：买入 100 股 600519.SH，按 ma(30) 与 close > ma(30)；`clock next` 推进") == []
    assert english_left("规则：buy when close > ma(30)", "buy when close > ma(30)") == []


PATHS = f"""lang zh
clock
时钟 设置 20200824
规则 添加 600519.SH “{RULE}” size=100
规则 运行 1
批准
规则 日志 1
规则 列表
下单 平安银行 买入 1000股
批准
clock set 20200820
信号 均线交叉 600519.SH 2019年1月2日 2019年12月31日 fast=30 slow=10
取消
因子 动量 2019年3月1日 2020年6月1日 window=0
信号 600519.SH 2019年1月2日 2019年12月31日
取消
下单 600000.SH 买入 150股
"""


def test_a_rule_run_an_order_with_a_fill_the_clock_and_refusals_read_in_chinese(tmp_path: Path) -> None:
    out = console_session(tmp_path / "zh", PATHS)
    lines = out.splitlines()
    for shown in (
            "时钟", "模拟时钟：当前交易日为 20200727（本数据库所有模拟账户共用一个模拟时钟；数据截至 20200824）。",
            "  尚未推进过：新时钟从数据最后一个交易日往前数 20 个交易日开始，留出一个月可供交易。",
            "模拟时钟已从 20200727 推进到 20200824（由 root 操作；本数据库所有模拟账户共用一个模拟时钟）。",
            "规则 1（600519.SH）：买入", "买入条件成立：close > ma(30) · 买入 100 股（规则设定的数量）",
            "  2. 计算: close 在 2020-08-24 = 1696.35 → {\"close\": 1696.35}",
            "  5. 计算: 买入条件 close > ma(30) → 成立 → {\"buy_condition\": true}",
            "  8. 决策：买入（信心 1.00）— 买入条件成立：close > ma(30)",
            "  理由: 规则 1（截至 20200824）：买入条件成立：close > ma(30)（信心 1.00）",
            "注：ST 状态未知；涨跌停按非 ST 计算", "注：成交按前复权价格模拟，并非当日实际成交价",
            "  成交方式: 按最近收盘价模拟成交（20200824）", "  交易授权: 无", "  理由: root 手动下单",
            "委托 2 已成交：买入 1,000 股 000001.SZ，20200824 成交价 14.46（按最近收盘价模拟成交）；"
            "成交金额 14,460.00，交易费用 5.29。", "  委托: 2 (已成交)",
            "错误：时钟不能回退到 20200820：账户 console 的委托 1 日期为 20200824，账户历史不会被撤销"
            "（`account reset NAME` 可清空账户）",
            "? fast（30）必须短于 slow（10）。请回复修正后的值，或回复 `取消`。",
            "无法构建该因子：window 必须在 1 到 500 个交易日之间",
            "- `ma_cross` (fast=5, slow=20): 收盘价快均线在慢均线之上时持有（金叉买入），跌破慢均线时卖出（死叉卖出）",
            "未通过 交易单位：主板买入以 100 股为一手：150 不是 100 的整数倍"):
        assert shown in lines, shown
    execution = next(line.split(": ", 1)[1] for line in lines if line.startswith("  执行编号: "))
    log = lines.index(f"规则 1 · {execution}")  # `规则 日志 1`: the same trace again
    assert lines[log + 1].startswith("8 步（")
    assert lines[log + 9] == "  8. 决策：买入（信心 1.00）— 买入条件成立：close > ma(30)"
    assert english_left(out, RULE) == []


def _cells(text: str) -> int:
    """Terminal cells: East Asian wide and full-width characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def test_the_chinese_help_lines_up_its_summaries_counting_wide_characters_as_two_cells(tmp_path: Path) -> None:
    lines = console_session(tmp_path / "zh", "lang zh\nhelp\n").splitlines()
    usages = ("批准", "编辑 名称=值 …", "拒绝 理由", "语言 zh|en", "帮助", "状态", "待办 [N]", "取消", "codes", "ws",
              "rule list [channel|mine|all]")
    columns = {}
    for usage in usages:
        line = next(line for line in lines if line.startswith(f"  {usage}  "))
        rest = line[2 + len(usage):]
        columns[usage] = _cells(f"  {usage}") + len(rest) - len(rest.lstrip(" "))
    assert set(columns.values()) == {36}, columns  # two spaces, the 34-cell usage column


SWITCH_AND_REFUSALS = """lang zh
你好
交易开关
交易开关 关 测试
交易开关
交易开关 开 测试完毕
账户 a b
账户 重置 x y
下单 平安银行 买入 1000股
拒绝 不要了
"""


def test_the_kill_switch_account_usages_a_rejected_order_and_free_text_without_an_llm_read_in_chinese(
        tmp_path: Path) -> None:
    out = console_session(tmp_path / "zh", SWITCH_AND_REFUSALS)
    lines = out.splitlines()
    for shown in ("无需 LLM 我可以运行这些：", "• `rule run ID`，例如 `rule run 1`",
                  "自然语言请求需要 LLM（OPENAI_API_KEY、OPENAI_BASE_URL）。", "交易已开启。",
                  "错误：用法：`account [NAME]`，或 `account reset NAME`",
                  "错误：用法：`account reset NAME`（然后发送 `account reset NAME confirm` 确认）",
                  "委托被 root 拒绝：不要了。未下单。"):
        assert shown in lines, shown
    assert any(line.startswith("交易已关闭：") and line.endswith("（原因：测试）。（操作人：root）") for line in lines)
    assert any(line.startswith("交易已关闭（由 root 于 ") and line.endswith(" UTC 设置：测试）。") for line in lines)
    assert english_left(out) == []
