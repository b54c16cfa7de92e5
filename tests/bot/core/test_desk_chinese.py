"""Issue 25: the decision desk in Chinese, as a zh user of `quantdesk chat` sees it with the desk's agents
answering from the loopback fake OpenAI server. The agents' own prose is scripted in Chinese; everything the desk
writes around it (the order card, the trader's sizing, a stopped desk's reason, a replay's table and stop, the
Markdown report) holds no English sentence."""

from __future__ import annotations

import json
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from graphs.analyze.grammar import DecisionGrammarError, parse_request
from testkit.console import english_left, model_chat
from testkit.desk import ROLES
from testkit.fakes.chat import answer, tool_call
from testkit.fakes.openai_server import OpenAIServer, Step, http_error
from testkit.llm import LIGHT
from tools.broker.rules import lot_rule
from tools.broker.sizing import size_order
from tools.i18n import using

CODE = "600519.SH"


def _judge(rating: str, target: float) -> Step:
    return answer(json.dumps({"rating": rating, "target_position": target, "bull_points": ["趋势向上"],
                              "bear_points": ["RSI 不低"], "risks": ["急跌"], "confidence": 0.6,
                              "investment_plan": "逐步建仓", "final_trade_decision": "按代码定仓"},
                             ensure_ascii=False))


def _report(text: str) -> str:
    """The Markdown report the console saved."""
    path = next(line.split("：", 1)[1] for line in text.splitlines() if line.strip().startswith("已保存报告："))
    return Path(path).read_text()


def test_a_chinese_decision_its_order_card_and_report_read_in_chinese(tmp_path: Path,
                                                                      openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    fake.script(ROLES["market"], tool_call("get_indicators"), answer("收盘 1696.35，趋势向上。"))
    fake.script(LIGHT, answer("当日记忆"))
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        fake.script(ROLES[role], answer("发言"))
    fake.script(ROLES["research_judge"], _judge("Buy", 0.2))
    fake.script(ROLES["risk_judge"], _judge("Buy", 0.2))
    # the desk decides as of the data's last day, 20200824: the simulated clock (it starts 20 sessions earlier) is
    # moved there first, so the order fills on the day decided
    text = model_chat(tmp_path, openai_server, "lang zh", "时钟 设置 20200824", f"分析 {CODE} analysts=market", "批准")
    lines = text.splitlines()
    for shown in ("  理由: 决策台：买入 600519.SH（截至 20200824），目标仓位 20%（信心 0.60）",
                  "--- 批准 | 编辑 数量=… | 拒绝 理由（拒绝：不提交委托；拒绝及理由会被记录。）---",
                  "  仓位：目标仓位 20.0%（总资产 1,000,000.00 元），价格 1696.35，目标 100 股；"
                  "已持有 0 股。买入 100 股"):
        assert shown in lines, shown
    report = _report(text)
    assert report.startswith("# 决策台：600519.SH，截至 20200824（辩论深度 1）\n")
    for head in ("## 市场分析师（1 次工具调用，", "## 多空研究辩论（2 轮）", "## 风险辩论（3 轮）", "## 投资计划",
                 "## 最终交易决策", "## 交易员"):
        assert head in report, head
    assert english_left(text) == [] and english_left(report) == []


def test_a_chinese_desk_that_stops_says_why_in_chinese(tmp_path: Path, openai_server: OpenAIServer) -> None:
    openai_server.fake.script(ROLES["market"], answer("  "))
    text = model_chat(tmp_path, openai_server, "lang zh", f"分析 {CODE} analysts=market")
    assert text.splitlines()[1:3] == [f"贵州茅台 {CODE} · 20200824：无决策",
                                      "在汇总环节停止：没有分析师写出报告（市场分析师没有写出报告：它最后的回答是空的）"]
    assert english_left(text) == []


def test_a_chinese_replay_shows_its_orders_and_its_stop_in_chinese(tmp_path: Path,
                                                                   openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    fake.script(ROLES["market"],
                *[step for _ in range(3) for step in (tool_call("get_indicators"), answer("趋势向上。"))])
    fake.script(LIGHT, *[answer("当日记忆")] * 3)
    fake.script(ROLES["bull"], answer("多头发言"), answer("多头发言"), http_error(401))  # the third date stops
    for role in ("bear", "risky", "safe", "neutral"):
        fake.script(ROLES[role], *[answer("发言")] * 2)
    for judge in ("research_judge", "risk_judge"):
        fake.script(ROLES[judge], _judge("Buy", 0.2), _judge("Hold", 0.0))
    text = model_chat(tmp_path, openai_server, "lang zh", f"分析 {CODE} 20200728..20200730 every=1d analysts=market")
    rows = [line.split(maxsplit=4) for line in text.splitlines() if line.lstrip().startswith("202007")]
    assert [row[4] for row in rows] == [
        "回放账户自动成交：买入 100 股，20200728 成交价 1670.00，交易费用 45.09",
        "目标仓位 0.0%（总资产 1,000,154.91 元），价格 1672.00，目标 0 股；已持有 100 股。持有：不下单",
        "已停止（见警告）"]
    assert ("警告：在 20200730 停止：在多空研究辩论（多头）处停止：模型接口拒绝了 API 密钥（HTTP 401）；请检查 "
            "OPENAI_API_KEY。") in text.splitlines()
    assert "  成交笔数: 1" in text.splitlines()
    assert english_left(text) == []


def test_the_desks_grammar_refuses_in_the_readers_language() -> None:
    with using("zh-CN"):
        for text, said in (
                ("分析 600519.SH depth=9", "depth 必须是 1 到 5 的整数，而不是 '9'"),
                ("分析 600519.SH 000001.SZ",
                 "请只给出一个股票代码（找到 600519.SH, 000001.SZ），例如 `analyze 600519.SH`"),
                ("分析 600519.SH 20200630..20200101", "回放开始日期晚于结束日期（20200630..20200101）"),
                ("分析 600519.SH analysts=macro",
                 "未知的分析师 macro；可选 market, news, sentiment, fundamentals")):
            with pytest.raises(DecisionGrammarError) as caught:
                parse_request(text)
            assert str(caught.value) == said
    with using("en"), pytest.raises(DecisionGrammarError, match=r"^depth must be a whole number from 1 to 5, not '9'$"):
        parse_request("analyze 600519.SH depth=9")


def test_the_traders_sizing_is_told_in_the_readers_language() -> None:
    lot = lot_rule(CODE, date(2020, 8, 24))
    with using("zh-CN"):
        sizing = size_order("Overweight", Decimal("0.9"), Decimal("0.3"), Decimal("1000000"), Decimal("1696.35"), 0, 0,
                            Decimal("100000"), lot)
    assert sizing.explanation == ("目标仓位 30.0%（总资产 1,000,000.00 元，受账户上限 30% 限制），价格 1696.35，"
                                  "目标 100 股；已持有 0 股。增持，但可用资金 100,000.00 元不足买入一手：不下单")
    with using("en"):
        assert size_order("Hold", Decimal("0"), Decimal("0.3"), Decimal("1000000"), Decimal("1696.35"), 100, 100,
                          Decimal("0"), lot).explanation == (
            "target 0.0% of 1,000,000.00 CNY at 1696.35 = 0 shares; held 100. Hold: no order")
