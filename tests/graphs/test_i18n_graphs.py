"""Issue 25: what the order, rule and signal graphs and the router say reaches a Chinese user in Chinese (an order's
refusals, edits, expiry and rejection; an approval's edit problems; a rule run's hold reasons and a scheduled run's
root; the signal nodes' failures; the router's answer without an LLM), and the English texts are unchanged."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from graphs.home_panels import decision_text, order_text, rating_lines, rule_text
from graphs.interrupts import APPROVAL, TRADERS, approval_refusal, validate_args
from graphs.main import no_route
from graphs.rule.background import run_title
from graphs.rule.nodes.plan import _action, _decision
from graphs.signal.nodes.signal_generate import check_signal
from testkit.console import english_left
from testkit.graph_thread import GraphThread
from testkit.paper import interrupt_value, paper_context
from tools.broker.orders import Fill, Order
from tools.data.local import SampleProvider
from tools.desk.log import Decision, RatingScore
from tools.i18n import using
from tools.rules.store import Rule
from tools.sandbox import Sandbox

TRADER = "UTRADER"


def _schema(quantity: str, price: str) -> dict[str, dict[str, Any]]:
    """An order card's editable arguments, titled as the card (in its language) titles them."""
    return {"quantity": {"type": "integer", "title": quantity, "minimum": 100, "multiple_of": 100},
            "limit_price": {"type": "number", "title": price, "minimum": 13.01, "maximum": 15.91, "decimals": 2}}


def test_an_orders_refusals_edits_expiry_and_rejection_read_in_chinese(sqlite_url: str, sqlite_engine: Engine,
                                                                      sandbox: Sandbox) -> None:
    ctx = paper_context(sqlite_engine, sandbox, SampleProvider(), traders={TRADER}, admins={"UALICE"})
    thread = GraphThread(sqlite_url, ctx, requester="UALICE")
    with using("zh-CN"):
        out = thread.say("下单 000001.SZ 买入 100 limit=14.50 account=z1")
        again = thread.decide(out, {"type": "approve"}, user="UALICE")
        refused = interrupt_value(again)["description"]
        lot = thread.decide(again, {"type": "edit", "edited_action": {"name": "place_order",
                                                                    "args": {"quantity": 150, "side": "sell"}}},
                            user=TRADER)
        edit = interrupt_value(lot)["description"]
        late = thread.decide(lot, {"type": "approve"}, user=TRADER, decided_at="2999-01-01T00:00:00+00:00")
        rejected_thread = GraphThread(sqlite_url, thread.ctx, requester="UALICE")
        rejected = rejected_thread.decide(rejected_thread.say("下单 000001.SZ 买入 100 account=z1"),
                                          {"type": "reject"}, user=TRADER)
    refusal = next(line for line in refused.splitlines() if line.startswith("未受理："))  # not 已拒绝: not rejected
    assert refusal.startswith("未受理：UALICE 不是账户 z1 的交易员，不能批准其委托")
    (problem,) = [line for line in edit.splitlines() if line.startswith("未受理：")][1:]
    assert problem == ("未受理：修改未生效：数量（股）必须是 100 的整数倍；side 不可修改。"
                       "卡片仍在等待处理，委托保持原样。")
    expired = late["result"]["message"]
    assert expired.startswith("这笔委托的审批卡片已于 ") and expired.endswith(
        f"过期，早于 {TRADER} 的批准；未下单。请重新下单以重新检查。")
    assert rejected["result"]["message"] == f"委托被 {TRADER} 拒绝：未说明原因。未下单。"
    assert english_left("\n".join([refusal, problem, expired, rejected["result"]["message"]])) == []


def test_an_approvals_edit_problems_and_refusals_in_chinese_and_english() -> None:
    edits = {"quantity": "150", "limit_price": "99.123", "side": "sell"}
    chinese = _schema("数量（股）", "限价（元）")
    with using("zh-CN"):
        _args, problems = validate_args(chinese, {"quantity": 100, "limit_price": 14.5}, edits)
        many = validate_args(chinese, {}, {"quantity": "many", "limit_price": ""})[1]
    assert problems == ["side 不可修改", "数量（股）必须是 100 的整数倍", "限价（元）不能大于 15.91",
                        "限价（元）最多保留 2 位小数"]
    assert many == ["数量（股）必须是整数，而不是 'many'", "限价（元）不能为空"]
    with using("en"):
        _args, problems = validate_args(_schema("Quantity (shares)", "Limit price (CNY)"),
                                        {"quantity": 100, "limit_price": 14.5}, edits)
    assert problems == ["side cannot be edited", "Quantity (shares) must be a multiple of 100",
                        "Limit price (CNY) must be at most 15.91", "Limit price (CNY) must have at most 2 decimals"]
    card = {"type": APPROVAL, "deciders": TRADERS, "expires_at": "2020-08-24T07:00:00+00:00"}
    now = datetime(2020, 8, 24, 8, tzinfo=UTC)
    with using("zh-CN"):
        assert approval_refusal(card, "UALICE", "approve", frozenset({TRADER}), now) == (
            "只有交易员可以批准或修改委托（`roles` 列出交易员）；你可以拒绝它。")
        assert approval_refusal(card, TRADER, "approve", frozenset(), now) == (
            "目前没有交易员（由管理员授予：`roles grant trader USER`），因此没人能批准或修改这笔委托。")
        assert approval_refusal(card, TRADER, "approve", frozenset({TRADER}), now) == (
            "该审批卡片已于 2020-08-24 07:00 UTC 过期，不能再批准。请拒绝它，或重新提交以重新检查。")
    with using("en"):
        assert approval_refusal(card, TRADER, "approve", frozenset({TRADER}), now) == (
            "This proposal expired at 2020-08-24 07:00 UTC: it cannot be approved any more. Reject it, or propose it "
            "again for a fresh check.")


def _rule() -> Rule:
    now = datetime(2024, 10, 8, tzinfo=UTC)
    return Rule(id=3, symbol="600519.SH", source="language", requirements="buy when close > ma(30)", owner="UOWNER",
                channel="C1", runtime_status={}, schedule="30 9 * * 1-5", timezone="Asia/Shanghai",
                scheduled_since=now, enabled=True, size=100, value_cny=None, threshold=0.6, account=None,
                consecutive_failures=0, paused_reason=None, created_at=now, updated_at=now)


def test_a_rule_runs_hold_reasons_and_a_scheduled_runs_root_in_chinese() -> None:
    tick = datetime(2024, 10, 8, 1, 30, tzinfo=UTC)
    with using("zh-CN"):
        assert run_title(_rule(), tick, None) == "规则 3（600519.SH）：2024-10-08 01:30 UTC 的定时运行，所有者 UOWNER"
        assert run_title(_rule(), tick, "20200824") == (
            "规则 3（600519.SH）：模拟交易日 20200824 的定时运行（2024-10-08 01:30 UTC），所有者 UOWNER")
        problems = []
        for answer in ({"type": "guess", "action": {}}, {"type": "decision", "action": "buy"}):
            with pytest.raises(ValueError) as raised:
                _action(answer)
            problems.append(str(raised.value))
        for body in ({"action": "short"}, {"action": "buy"}, {"action": "buy", "confidence": 2}):
            with pytest.raises(ValueError) as raised:
                _decision({"action": body, "reasoning": ""})
            problems.append(str(raised.value))
    assert problems == ["type 必须是 tool_call、calculation 或 decision，而不是 'guess'", "action 必须是一个对象",
                        "决策的动作必须是 buy、sell 或 hold，而不是 'short'", "决策需要 0 到 1 之间的信心值",
                        "信心值必须在 0 到 1 之间，而不是 2.0"]
    with using("en"):
        english = run_title(_rule(), tick, None)
    assert english == "Rule 3 (600519.SH): scheduled run for 2024-10-08 01:30 UTC, owner UOWNER"


def test_the_signal_nodes_failures_and_the_routers_answer_without_an_llm_in_chinese() -> None:
    with using("zh-CN"):
        assert check_signal(pd.Series([1.0])) == "`signal` 必须是 DataFrame（日期 × 代码），实际是 Series"
        routed = no_route()
    assert routed.startswith("无需 LLM 我可以运行这些：\n• `signal STRATEGY CODES START END [name=value ...]`，例如 "
                             "`signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20`\n")
    assert routed.endswith("自然语言请求需要 LLM（OPENAI_API_KEY、OPENAI_BASE_URL）。")
    assert english_left(routed) == []
    with using("en"):
        english = no_route()
    assert english.startswith("I can run these without an LLM:\n• `signal STRATEGY CODES START END [name=value ...]`, "
                              "e.g. `signal ma_cross 000001.SZ,600000.SH 20200101 20200630 fast=5 slow=20`\n")
    assert english.endswith("\nPlain-language requests need an LLM (OPENAI_API_KEY, OPENAI_BASE_URL).")


def _filled_order() -> Order:
    fill = Fill(id=1, order_id=7, ts_code="600519.SH", side="buy", quantity=100, price=Decimal("1696.35"),
                value=Decimal("169635.00"), commission=Decimal("42.41"), stamp_duty=Decimal(0),
                transfer_fee=Decimal("3.39"), handling_fee=Decimal(0), regulator_fee=Decimal(0), trade_date="20200824",
                basis="simulated fill at the last available close (20200824)")
    return Order(id=7, client_order_id="c7", account="console", ts_code="600519.SH", name=None, side="buy",
                 quantity=100, price_type="market", limit_price=None, session_date="20200824", fill_at="close",
                 status="filled", reserved=Decimal(0), thread_id=None, approved_by="root", reason="", note="",
                 created="2020-08-24T07:00:00+00:00", fills=(fill,))


def _decision_record() -> Decision:
    at = datetime(2020, 8, 24, 7, tzinfo=UTC)
    return Decision(id="d1", namespace="desk", ts_code="600519.SH", trade_date="20200824", as_of=at,
                    rating="Overweight", target_position=Decimal("0.1"), confidence=0.7, price=Decimal("1696.35"),
                    report_ids={}, universe=[], thread_id="t1", summary={}, created_at=at, resolutions=())


def test_the_homes_order_rule_and_decision_rows_say_stored_words_in_chinese_and_english_as_before() -> None:
    """The Home shows an order's side, status and fill basis, a rule's last action and a decision's rating, all
    stored in English, in the reader's language."""
    last = {"action": {"action": "hold", "confidence": 0.5}}
    with using("zh-CN"):
        order, rule, decision = (order_text(_filled_order()), rule_text(_rule(), last, "-"),
                                 decision_text(_decision_record()))
    assert "买入 100 600519.SH" in order and "已成交" in order and "按最近收盘价模拟成交（20200824）" in order
    assert "上次：持有" in rule and "增持" in decision
    assert [english_left(text) for text in (order, rule, decision)] == [[], [], []]
    with using("en"):
        english = order_text(_filled_order()), rule_text(_rule(), last, "-"), decision_text(_decision_record())
    assert english[0] == ("Order 7: buy 100 600519.SH market, filled; filled 100 at 1696.35 (simulated fill at the "
                          "last available close (20200824)) · session 20200824")
    assert "last: HOLD (confidence 0.50)" in english[1] and "600519.SH on 20200824: Overweight" in english[2]
    scores = [RatingScore("Buy", 5, 3, Decimal("0.0123"), Decimal("-0.004"), 2, 3),
              RatingScore("Buy", 20, 1, Decimal("-0.05"), None, 0, 0)]
    with using("en"):
        assert rating_lines(scores) == ["Buy · 5d: 3 decision(s), mean +1.23%, excess -0.40%, 2 of 3 hit · "
                                        "20d: 1 decision(s), mean -5.00%, 0 of 0 hit"]
    with using("zh-CN"):
        (line,) = rating_lines(scores)
    assert line.startswith("买入 · ") and english_left(line) == []
