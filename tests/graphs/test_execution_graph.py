"""The execution agent (seed 002): a seed-shaped trace from a scripted model (tool_call → MA30 → RSI14 → buy 0.75),
every step logged with the values computed in code, the order proposed for a trader's approval and the rule's
position following the fill; the limits (rounds, malformed answers, tool errors); rule-language rules with no
LLM; one order card per rule at a time; a queued scheduled run of a paused rule does nothing."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pandas as pd
import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.rule.background import scheduled_request
from graphs.rule.commands import show_command
from graphs.rule.routes import MAX_ROUNDS
from graphs.workflow import CommandCall
from testkit.fakes.chat import ScriptedChatModel, answer
from testkit.graph_thread import GraphThread
from testkit.rules import add_scheduled
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.proposal_claims import APPLY_GRACE, ProposalClaim, live_claims
from tools.data.klines import AShareKlines
from tools.data.local import SampleProvider, sample_dir
from tools.rules.schedule import execution_id_for
from tools.rules.store import RuleStore, order_tag
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

TRADER, OWNER = "UTRADER", "UOWNER"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.5"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))
CODE = "600519.SH"
TICK = datetime(2026, 11, 23, 1, 30, tzinfo=UTC)  # a scheduled minute: 09:30 in Shanghai


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


@pytest.fixture(scope="module")
def closes() -> list[float]:
    """The sample's closes of 600519.SH up to 20200727, oldest first (the raw data, read without the code under
    test): a rule run decides as of the simulated session, and a new clock starts 20 sessions before the sample's
    last day, 20200824."""
    frame = pd.read_parquet(sample_dir() / "daily.parquet")
    frame = frame[(frame["ts_code"] == CODE) & (frame["trade_date"] <= "20200727")]
    return frame.sort_values("trade_date")["close"].tolist()


def _ctx(engine: Engine, sandbox: Sandbox, provider: SampleProvider, llm: Any = None) -> WorkflowContext:
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           llm=llm, paper=CONFIG, traders=frozenset({TRADER}),
                           admins=frozenset({OWNER}),  # rule owners name their accounts (account=)
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by),
                           rules=RuleStore(engine, frozenset()), klines=lambda symbol: AShareKlines(provider))


def _claims(ctx: WorkflowContext, rule_id: int) -> list[ProposalClaim]:
    """The rule's order card claims in force now."""
    return live_claims(ctx.engine, order_tag(rule_id), datetime.now(UTC))


def _step(kind: str, step: int, action: dict[str, Any], reasoning: str = "scripted") -> Any:
    return answer(json.dumps({"type": kind, "step": step, "reasoning": reasoning, "action": action,
                              "next_step": "continue"}))


def _hand_rsi(closes: list[float], n: int = 14) -> float:
    """Wilder's RSI from the definition: the first average is the mean of the first n changes."""
    changes = [b - a for a, b in zip(closes, closes[1:], strict=False)]
    gain = sum(max(c, 0.0) for c in changes[:n]) / n
    loss = sum(max(-c, 0.0) for c in changes[:n]) / n
    for change in changes[n:]:
        gain = (gain * (n - 1) + max(change, 0.0)) / n
        loss = (loss * (n - 1) + max(-change, 0.0)) / n
    return 100.0 * gain / (gain + loss)


def test_a_seed_shaped_trace_is_logged_computed_in_code_and_ends_in_an_approval(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, closes: list[float]) -> None:
    llm = ScriptedChatModel(script=[
        _step("tool_call", 1, {"tool_name": "get_kline_data", "params": {"symbol": CODE, "timeframe": "1d",
                                                                          "limit": 100}}),
        _step("calculation", 2, {"calculation_type": "MA", "params": {"period": 30}}, "MA30 from the rule"),
        _step("calculation", 3, {"calculation_type": "RSI", "params": {"period": 14}}, "RSI14 from the rule"),
        _step("decision", 4, {"action": "buy", "reason": "close above MA30, RSI not overbought", "confidence": 0.75}),
    ])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "seedchan", CODE, "buy when the price is above its 30-day average and RSI14 < 70",
                         size=100, threshold=0.7)  # type: ignore[union-attr]
    thread = GraphThread(db_url, ctx, requester=OWNER)
    out = thread.say(f"rule run {rule.id}")
    (pending,) = out["__interrupt__"]
    card = pending.value
    assert card["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"
    assert "confidence 0.75" in card["args"]["why"]
    steps = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
    assert [(s.step, s.action_type) for s in steps] == [(1, "tool_call"), (2, "calculation"), (3, "calculation"),
                                                        (4, "decision")]
    last100 = closes[-100:]
    assert steps[0].result_data["bars"] == 100
    assert steps[1].result_data["ma30"] == pytest.approx(sum(last100[-30:]) / 30, abs=1e-6)
    assert steps[1].result_data["close"] == pytest.approx(last100[-1], abs=1e-6)
    assert steps[2].result_data["rsi14"] == pytest.approx(_hand_rsi(last100), abs=1e-6)
    assert steps[3].action_data["action"] == {"action": "buy", "reason": "close above MA30, RSI not overbought",
                                              "confidence": 0.75}
    done = thread.decide(out, {"type": "approve"}, user=TRADER)
    assert done["result"]["decision"]["action"] == "buy" and done["result"]["order"]["status"] == "filled"
    assert ctx.rules.get(rule.id).runtime_status["position"] == 100  # type: ignore[union-attr]
    # the model saw every earlier step's result, and no prices it had to pass itself
    last_prompt = llm.prompts[-1]
    assert "Step 3 result" in str(last_prompt[-2].content) and '"rsi14"' in str(last_prompt[-2].content)


def test_below_the_threshold_a_decision_is_logged_and_nothing_is_proposed(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    llm = ScriptedChatModel(script=[_step("decision", 1, {"action": "buy", "reason": "weak", "confidence": 0.4})])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "c", CODE, "buy on strength", size=100, threshold=0.6)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert "__interrupt__" not in out
    assert out["result"]["decision"]["note"] == "confidence 0.40 is below the rule's threshold 0.60: no order"
    assert [s.action_type for s in ctx.rules.steps(rule.id)] == ["decision"]  # type: ignore[union-attr]


def test_malformed_answers_get_one_second_chance_then_hold(db_url: str, engine: Engine, sandbox: Sandbox,
                                                           provider: SampleProvider) -> None:
    llm = ScriptedChatModel(script=[answer("I think you should buy"), answer("{not json")])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "c", CODE, "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    decision = out["result"]["decision"]
    assert decision["action"] == "hold" and decision["reason"].startswith("the model's answer could not be used twice")
    assert "could not be used" in str(llm.prompts[1][-1].content)  # the first error went back to the model
    (step,) = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
    assert step.action_type == "decision" and step.result_data["decision"]["failure"] is True


def test_failed_scheduled_runs_count_toward_auto_pause_and_manual_ones_do_not(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    """Auto-pause guards the unattended schedule: a manual run's failure is seen by whoever ran it and is not
    counted; two failed ticks in a row pause the rule (QUANTDESK_RULE_MAX_FAILURES 2 here); a run that decides
    resets the count, manual or not."""
    malformed = [answer("I think you should buy"), answer("{not json")]
    hold = [_step("decision", 1, {"action": "hold", "reason": "flat", "confidence": 0.5})]
    llm = ScriptedChatModel(script=[*malformed, *malformed, *hold, *malformed, *malformed])
    ctx = _ctx(engine, sandbox, provider, llm)
    ctx.rules = RuleStore(engine, frozenset(), max_failures=2)
    rule = add_scheduled(ctx.rules, OWNER, "c", CODE, "buy on strength", "30 9 * * 1-5", size=100)
    since = rule.scheduled_since
    assert since is not None
    ticks = [scheduled_request(rule.id, execution_id_for(rule.id, since + timedelta(minutes=n))) for n in (1, 2, 3)]

    def failures() -> int:
        return ctx.rules.get(rule.id).consecutive_failures  # type: ignore[union-attr]

    GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert failures() == 0  # manual: not counted
    GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", ticks[0])
    assert failures() == 1
    GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")  # decides hold: the rule works
    assert failures() == 0
    GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", ticks[1])
    out = GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", ticks[2])
    assert out["result"]["paused"] is True and failures() == 2
    assert ctx.rules.get(rule.id).enabled is False  # type: ignore[union-attr]


def test_a_tool_error_goes_back_to_the_model_and_the_rounds_are_capped(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    script = [_step("calculation", 1, {"calculation_type": "MA", "params": {"period": 30}})]  # no bars fetched yet
    script.append(_step("tool_call", 2, {"tool_name": "get_kline_data", "params": {"symbol": CODE, "limit": 60}}))
    script += [_step("calculation", i, {"calculation_type": "FOO", "params": {}}) for i in range(3, MAX_ROUNDS + 1)]
    llm = ScriptedChatModel(script=script)
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "c", CODE, "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert out["result"]["decision"]["reason"] == f"no decision within {MAX_ROUNDS} steps"
    steps = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
    assert len(steps) == MAX_ROUNDS + 1
    assert steps[0].result_data == {"error": "no bars were fetched yet: call get_kline_data first"}
    assert steps[1].result_data["bars"] == 60
    assert steps[2].result_data["error"].startswith("unknown calculation 'FOO'")


def test_a_rule_language_rule_runs_without_an_llm_and_matches_a_hand_computation(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, closes: list[float]) -> None:
    ctx = _ctx(engine, sandbox, provider)
    rule = ctx.rules.add(OWNER, "c", CODE, "buy when close > ma(30); sell when close < ma(30)",  # type: ignore[union-attr]
                         source="language", size=100)
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    ma30 = sum(closes[-30:]) / 30
    expected = "buy" if closes[-1] > ma30 else "sell"
    if expected == "buy":
        assert out["__interrupt__"][0].value["args"]["order"].startswith("BUY 100 600519.SH")
    else:
        assert out["result"]["decision"]["note"] == "sell: the rule holds no position, so there is nothing to sell"
    steps = ctx.rules.steps(rule.id)  # type: ignore[union-attr]
    assert steps[0].action_type == "tool_call" and steps[-1].action_type == "decision"
    assert steps[-1].action_data["action"]["action"] == expected
    ma_step = next(s for s in steps if "ma(30)" in s.result_data and len(s.result_data) == 1)
    assert ma_step.result_data["ma(30)"] == pytest.approx(ma30, abs=1e-6)


@pytest.mark.parametrize("text, reply", [
    ("rule run 999999", "There is no rule 999999"),
    ("rule run", "Usage: `rule run ID"),
])
def test_a_run_of_no_rule_says_so(db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider,
                                  text: str, reply: str) -> None:
    out = GraphThread(db_url, _ctx(engine, sandbox, provider), requester=OWNER).say(text)
    assert out["final_reply"].startswith(reply)


def test_an_impossible_decision_or_bad_tool_arguments_do_not_crash_the_run(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    llm = ScriptedChatModel(script=[
        _step("tool_call", 1, {"tool_name": "get_kline_data", "params": {"symbol": CODE, "limit": "abc"}}),
        _step("tool_call", 2, {"tool_name": "get_kline_data", "params": {"symbol": CODE, "limit": 40}}),
        _step("calculation", 3, {"calculation_type": "BOLL", "params": {"period": 20, "k": "x"}}),
        _step("calculation", 4, {"calculation_type": "MA", "params": {"period": 1}}),
        _step("decision", 5, {"action": "buy", "reason": "sure", "confidence": 1.5}),  # malformed: sent back
        _step("decision", 5, {"action": "hold", "reason": "unclear", "confidence": 0.5}),
    ])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "c", CODE, "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert out["result"]["decision"]["action"] == "hold"
    errors = [s.result_data.get("error") for s in ctx.rules.steps(rule.id)[:4]]  # type: ignore[union-attr]
    assert errors == ["limit must be a whole number of bars, not 'abc'", None,
                      "k must be a number of standard deviations, not 'x'",
                      "period must be a whole number from 2 to 1000, not 1"]
    assert "confidence must be between 0 and 1, not 1.5" in str(llm.prompts[-1][-1].content)


def test_the_rules_position_is_what_its_orders_filled(db_url: str, engine: Engine, sandbox: Sandbox,
                                                      provider: SampleProvider) -> None:
    """Buy, approved and filled: the rule holds 100; a second buy proposes nothing; a sell proposes those 100."""
    llm = ScriptedChatModel(script=[
        _step("decision", 1, {"action": "buy", "reason": "up", "confidence": 0.9}),
        _step("decision", 1, {"action": "buy", "reason": "still up", "confidence": 0.9}),
        _step("decision", 1, {"action": "sell", "reason": "down", "confidence": 0.9}),
    ])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = ctx.rules.add(OWNER, "c", CODE, "trade the trend", size=100,  # type: ignore[union-attr]
                         account=f"rule-pos-{uuid.uuid4().hex[:8]}")
    first = GraphThread(db_url, ctx, requester=OWNER)
    done = first.decide(first.say(f"rule run {rule.id}"), {"type": "approve"}, user=TRADER)
    assert done["result"]["order"]["status"] == "filled" and done["result"]["position"] == 100
    again = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert again["result"]["decision"]["note"] == "buy: the rule already holds 100 shares"
    sell = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert sell["__interrupt__"][0].value["args"]["order"] == "SELL 100 600519.SH 贵州茅台 at market"
    assert ctx.rules.get(rule.id).runtime_status["position"] == 100  # type: ignore[union-attr]


def test_one_order_card_per_rule_until_the_first_is_decided_or_expires(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    """Two runs of one rule (two ticks, or a tick and a manual run) both decide buy: only the first puts up an
    order card, since a trader approving both would double the position. Once it is rejected, or expires, a new
    run proposes again."""
    llm = ScriptedChatModel(script=[_step("decision", 1, {"action": "buy", "reason": f"up {n}", "confidence": 0.9})
                                    for n in range(4)])
    ctx = _ctx(engine, sandbox, provider, llm)
    rule = add_scheduled(ctx.rules, OWNER, "c", CODE, "trade the trend", "30 9 * * 1-5",  # type: ignore[arg-type]
                         size=100, account=f"rule-claim-{uuid.uuid4().hex[:8]}")
    first = GraphThread(db_url, ctx, requester=OWNER)
    card = first.say(f"rule run {rule.id}")
    held = ctx.rules.steps(rule.id)[0].execution_id  # type: ignore[union-attr]
    scheduled = execution_id_for(rule.id, rule.scheduled_since + timedelta(minutes=1))  # type: ignore[operator]
    second = GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", scheduled_request(rule.id, scheduled))
    assert "__interrupt__" not in second
    assert second["result"]["decision"]["note"] == (
        f"buy: an order proposal of this rule (execution {held}) is waiting for a trader's approval; no new order "
        "until it is decided or expires")
    assert second["result"]["order"] == {}
    (claim,) = _claims(ctx, rule.id)
    assert (claim.account, claim.ts_code, claim.holder) == (rule.account, CODE, held)
    expires = datetime.fromisoformat(card["__interrupt__"][0].value["expires_at"])
    assert expires < claim.expires_at <= expires + APPLY_GRACE  # it outlives the proposal, then lapses by itself
    shown = dict(show_command(CommandCall(ctx, [str(rule.id)], OWNER, "c")).facts)
    assert shown["Order proposal"] == (f"waiting for a trader's approval (execution {held}; no new order until it "
                                       f"is decided or {claim.expires_at:%Y-%m-%d %H:%M} UTC)")

    rejected = first.decide(card, {"type": "reject", "message": "not today"}, user=TRADER)
    assert rejected["result"]["order"]["status"] == "rejected"
    assert _claims(ctx, rule.id) == []
    assert "Order proposal" not in dict(show_command(CommandCall(ctx, [str(rule.id)], OWNER, "c")).facts)
    third = GraphThread(db_url, ctx, requester=OWNER)
    again = third.say(f"rule run {rule.id}")
    assert again["__interrupt__"][0].value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"

    late = (datetime.fromisoformat(again["__interrupt__"][0].value["expires_at"]) + timedelta(seconds=1)).isoformat()
    expired = third.decide(again, {"type": "approve"}, user=TRADER, decided_at=late)
    assert expired["result"]["order"]["status"] == "expired" and expired["result"]["position"] == 0
    fourth = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert fourth["__interrupt__"][0].value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"


def test_a_queued_scheduled_run_of_a_paused_rule_does_nothing_and_a_manual_run_still_runs(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    llm = ScriptedChatModel(script=[_step("decision", 1, {"action": "hold", "reason": "flat", "confidence": 0.5})])
    ctx = _ctx(engine, sandbox, provider, llm)
    store = ctx.rules
    assert store is not None
    rule = add_scheduled(store, OWNER, "c", CODE, "trade the trend", "30 9 * * 1-5", size=100)
    queued = scheduled_request(rule.id, execution_id_for(rule.id, TICK))  # what the scheduler enqueued
    store.pause(rule.id, OWNER)
    typed = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id} execution={queued['execution']}")
    assert typed["final_reply"].startswith("Usage: `rule run ID")  # a person cannot type a scheduled run
    out = GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", queued)
    assert out["final_reply"] == f"Rule {rule.id} was paused after this run was queued; nothing was run."
    store.resume(rule.id, OWNER)
    store.update_schedule(rule.id, OWNER, None)
    out = GraphThread(db_url, ctx, requester=OWNER).say("scheduled run", queued)
    assert out["final_reply"] == (f"Rule {rule.id} was taken off its schedule after this run was queued; nothing "
                                  "was run.")
    assert store.steps(rule.id) == [] and llm.prompts == []

    store.pause(rule.id, OWNER)  # a manual run of a paused rule runs, as it always did
    manual = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert manual["result"]["decision"]["action"] == "hold"
    assert [s.action_type for s in store.steps(rule.id)] == ["decision"]
    assert store.steps(rule.id)[0].execution_id.startswith(f"rule{rule.id}-m")
