"""The trading decision desk (issue 14) with scripted agents keyed by role on the sample data: analysts in parallel,
circuit breakers, depth → debate rounds, isolated debates, the number audit on the card, the no-LLM reply, the
token budget, sizing into an order a trader approves, and the decision log."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.nodes.analyst_agent import WRITE_NOW
from graphs.analyze.present import present_decision
from graphs.checkpointer import open_checkpointer
from graphs.order.mandate_command import mandate_command
from graphs.workflow import CommandCall
from testkit.desk import ROLES, TRADER, account, clock_at_data_end, desk_context, desk_scripts, risk_answer
from testkit.fakes.chat import ScriptedChatModel, ScriptedModels, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.broker.records import PaperFill, PaperOrder
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CODE = "600519.SH"
SUMMARY_CALLS = 4  # each analyst's first post-close summary of a day (tools.desk.memory)


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _light(models: ScriptedModels, calls: int = SUMMARY_CALLS) -> ScriptedChatModel:
    return models(script=[answer("summary of the day") for _ in range(calls)])


def _run(db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, llm: ScriptedChatModel | None,
         text: str, light: ScriptedChatModel | None = None, **extra: Any) -> tuple[GraphThread, dict[str, Any]]:
    thread = GraphThread(db_url, desk_context(engine, sandbox, provider, llm, light, **extra), build_analyze_graph,
                         requester="UALICE")
    return thread, thread.say(text)


def test_without_an_llm_the_desk_gives_the_indicator_table_and_says_what_needs_a_model(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider) -> None:
    _, out = _run(db_url, engine, sandbox, provider, None, f"analyze {CODE}")
    result = out["result"]
    assert result["kind"] == "no_llm"
    assert result["request"]["trade_date"] == "20200824"  # the latest trading day of the sample
    table = dict(result["indicators"])
    assert table["MA(20)"] == "1,664.65" and table["RSI(14)"] == "59.31"  # checked by hand on the sample
    assert dict(result["fundamentals"])["turnover_rate"]  # the sample's only daily_basic field
    view = present_decision(result)
    assert "need an LLM" in view.summary and "OPENAI_API_KEY" in view.summary


def test_a_decision_is_sized_in_code_approved_by_a_trader_filled_and_logged(
        own_url: str, own_engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    clock_at_data_end(own_engine, provider)  # the desk decides as of 20200824 and trades there
    name = account()
    llm = models(scripts=desk_scripts())
    thread, out = _run(own_url, own_engine, sandbox, provider, llm, f"analyze {CODE} account={name}", _light(models))
    (pending,) = out["__interrupt__"]
    card = pending.value
    # 20% of 1,000,000 CNY at 1,696.35 is 117.9 shares: one lot of 100
    assert card["type"] == "approval" and card["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"
    out = thread.decide(out, {"type": "approve"}, user=TRADER)
    result = out["result"]
    record = result["execution_record"]
    assert record["status"] == "filled" and record["decided_by"] == TRADER
    assert "= 100 shares" in record["sizing"]
    with Session(own_engine) as session:
        fills = list(session.scalars(select(PaperFill).where(PaperFill.account == name)))
    assert [(f.quantity, f.trade_date) for f in fills] == [(100, "20200824")]
    logged = {d.id: d for d in list_decisions(own_engine, thread.ctx.desk_namespace, CODE)}
    assert logged[record["decision_id"]].rating == "Buy"
    assert set(logged[record["decision_id"]].report_ids) == {"market", "news", "sentiment", "fundamentals"}
    view = present_decision(result)
    assert view.title.endswith("Buy, target 20%") and len(view.artifacts) == 2


def test_the_four_analysts_run_in_parallel(db_url: str, engine: Engine, sandbox: Sandbox,
                                            provider: SampleProvider, models: ScriptedModels) -> None:
    barrier = threading.Barrier(4, timeout=30)  # broken (and the run failed) unless all four wait at once

    class BarrierModel(ScriptedChatModel):
        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            system = str(messages[0].content)
            if any(ROLES[a] in system for a in ("market", "news", "sentiment", "fundamentals")) and \
                    not any(isinstance(m, AIMessage) for m in messages):
                barrier.wait()
            return super()._generate(messages, *args, **kwargs)

    llm = BarrierModel(scripts=desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]))
    models.made.append(llm)
    _, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE} account={account()}", _light(models))
    assert out["result"]["risk_summary"]["rating"] == "Hold" and barrier.n_waiting == 0 and not barrier.broken


def test_each_breaker_trips_at_its_limit_and_the_report_is_still_written(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    def double(name: str) -> AIMessage:  # two calls of one of the analyst's own tools
        return AIMessage(content="", tool_calls=[
            {"name": name, "args": {}, "id": f"{name}{i}", "type": "tool_call"} for i in range(2)])

    # the last answer before the limit asks for two calls: one runs, the other is answered "limit reached"
    greedy_market = [*[tool_call("get_price_bars", days=5) for _ in range(4)], double("get_indicators"),
                     answer("Report from five calls.")]
    greedy_fundamentals = [*[tool_call("get_daily_basic") for _ in range(2)], double("get_daily_basic"),
                           answer("Report from three calls.")]
    llm = models(scripts=desk_scripts(market=greedy_market, fundamentals=greedy_fundamentals,
                                      risk_judge=[risk_answer("Hold", 0.0)]))
    _, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE} account={account()}", _light(models))
    analysts = out["result"]["analysts"]
    assert analysts["market"]["tool_calls"] == 5 and analysts["fundamentals"]["tool_calls"] == 3
    assert analysts["market"]["report"].startswith("Report from five calls.")
    assert analysts["fundamentals"]["report"].startswith("Report from three calls.")
    last_market = llm.prompts_for(ROLES["market"])[-1]
    assert WRITE_NOW.format(limit=5) in str(last_market[-1].content)
    assert "tool-call limit reached" in str(last_market[-2].content)


@pytest.mark.parametrize(("depth", "research", "risk"), [(1, 1, 1), (2, 1, 1), (3, 1, 2), (4, 2, 2), (5, 3, 3)])
def test_depth_sets_the_debate_rounds(sqlite_url: str, sandbox: Sandbox, provider: SampleProvider,
                                      models: ScriptedModels, depth: int, research: int, risk: int) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    llm = models(scripts=desk_scripts((research, risk), risk_judge=[risk_answer("Hold", 0.0)]))
    _, out = _run(sqlite_url, engine, sandbox, provider, llm, f"analyze {CODE} depth={depth}", _light(models))
    turns = {role: len(llm.prompts_for(ROLES[role])) for role in ("bull", "bear", "risky", "safe", "neutral")}
    assert turns == {"bull": research, "bear": research, "risky": risk, "safe": risk, "neutral": risk}
    assert out["result"]["stages"]["research"]["turns"] == 2 * research
    assert out["result"]["stages"]["risk"]["turns"] == 3 * risk


def test_debate_messages_never_reach_the_parent_state_or_its_checkpoint(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    llm = models(scripts=desk_scripts(bull=[answer("BULLSECRET the case for")], bear=[answer("BEARSECRET against")],
                                      risk_judge=[risk_answer("Hold", 0.0)]))
    thread, _ = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE}", _light(models))
    with open_checkpointer(db_url) as saver:
        graph = build_analyze_graph(saver)
        values = graph.get_state(thread.config).values
        checkpoint = saver.get_tuple(thread.config)
    dumped = json.dumps(values, default=str) + json.dumps(checkpoint.checkpoint["channel_values"], default=str)
    assert "BULLSECRET" not in dumped and "BEARSECRET" not in dumped
    assert all(isinstance(m, HumanMessage) for m in values["messages"])
    # the bear did hear the bull: the debate happened, inside its subgraph
    assert "BULLSECRET" in str(llm.prompts_for(ROLES["bear"])[0][-1].content)


def test_an_invented_figure_is_flagged_on_the_card_and_quoted_ones_are_not(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    invented = [tool_call("get_indicators"), answer("MA(20) 1664.65 and RSI(14) 59.31; support at 1610.00.")]
    llm = models(scripts=desk_scripts(market=invented, risk_judge=[risk_answer("Hold", 0.0)]))
    _, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE}", _light(models))
    market = out["result"]["analysts"]["market"]["audit"]
    assert market["flagged"] == ["1610.00"] and market["checked"] == 3
    assert any("1610.00" in w for w in present_decision(out["result"]).warnings)

    honest = models(scripts=desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]))
    _, out = _run(db_url, engine, sandbox, provider, honest, f"analyze {CODE}", _light(models))
    assert out["result"]["analysts"]["market"]["audit"]["flagged"] == []


def test_the_token_budget_stops_the_desk_and_says_where(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    heavy = AIMessage(content="", tool_calls=[{"name": "get_indicators", "args": {}, "id": "c1", "type": "tool_call"}],
                      usage_metadata={"input_tokens": 900, "output_tokens": 100, "total_tokens": 1000})
    llm = models(scripts={ROLES["market"]: [heavy]})
    # no light model is asked: a stopped analyst has no report for its memory to keep or summarise
    _, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE} analysts=market", _light(models, 0),
                  decision_token_budget=1000)
    result = out["result"]
    # the analysts' part is 60 % of the budget: 600 tokens for the one analyst, spent by its first call
    assert "not enough left for another call in its part of this decision's token budget, 600 tokens (1,000 used)" \
        in result["stopped"]
    assert "market analyst" in result["stopped"]
    assert result["risk_summary"] is None and "__interrupt__" not in out
    view = present_decision(result)
    assert view.summary == result["stopped"] and result["stopped"] not in view.warnings  # said once


def test_a_buy_on_a_past_date_places_no_order_and_bad_requests_say_what_to_write(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    llm = models(scripts=desk_scripts())  # Buy, target 20%
    _, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE} 20200823", _light(models))
    result = out["result"]
    assert "__interrupt__" not in out and result["execution_record"]["status"] == "no order"
    assert ("the decision is as of 20200821, but the paper account's simulated clock is at 20200727, where an order "
            "would fill; the desk orders only on the day it decided. `clock set 20200821` moves the clock there; "
            "`analyze 600519.SH 20200727` decides as of the clock's session"  # a new clock: 20 sessions before the end
            ) in result["trader_investment_plan"]
    assert result["request"]["trade_date"] == "20200821"  # the 23rd was a Sunday
    for text, expected in ((f"analyze {CODE} 20300101", "the data ends on 20200824"),
                           ("analyze 600519", "did you mean 600519.SH"),
                           (f"analyze {CODE} depth=7", "depth must be a whole number from 1 to 5")):
        _, out = _run(db_url, engine, sandbox, provider, None, text)
        assert expected in out["final_reply"] and "Usage" in out["final_reply"]


def test_a_later_decision_reads_the_memory_and_the_reflection_of_an_earlier_one(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    first = models(scripts=desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]))
    thread, out = _run(db_url, engine, sandbox, provider, first, f"analyze {CODE} 20200814", _light(models))
    assert out["result"]["risk_summary"]["rating"] == "Hold"
    later = models(scripts=desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]))
    ctx = desk_context(engine, sandbox, provider, later, _light(models), desk_namespace=thread.ctx.desk_namespace)
    out = GraphThread(db_url, ctx, build_analyze_graph).say(f"analyze {CODE} 20200824")
    # 20200814 → 20200821 is five trading days: the sample closes 1,661.00 → 1,676.00 (checked by hand)
    (resolution,) = out["result"]["resolutions"]
    assert resolution["text"].startswith("Decision on 20200814 rated Hold at 1,661.00; 5 trading days later "
                                         "1,676.00 (+0.90%)")  # 1676 / 1661 − 1 = 0.903 %
    system = str(later.prompts_for(ROLES["market"])[0][0].content)
    assert "post-close summary: summary of the day" in system  # the first day's summary, written by the light model
    assert "Decision on 20200814 rated Hold" in system  # the reflection, now knowable


def test_a_new_request_in_the_same_thread_starts_from_nothing_of_the_last_one(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    heavy = AIMessage(content="", tool_calls=[{"name": "get_indicators", "args": {}, "id": "c1", "type": "tool_call"}],
                      usage_metadata={"input_tokens": 900, "output_tokens": 100, "total_tokens": 1000})
    llm = models(scripts={ROLES["market"]: [heavy]})  # the first request stops in the market analyst (600 tokens)
    thread, out = _run(db_url, engine, sandbox, provider, llm, f"analyze {CODE} analysts=market", _light(models, 0),
                       decision_token_budget=1000)
    assert out["result"]["stopped"]
    thread.ctx = desk_context(engine, sandbox, provider, models(scripts={
        **{k: v for k, v in desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]).items() if k != ROLES["market"]}}),
        _light(models, 3), desk_namespace=thread.ctx.desk_namespace)
    out = thread.say(f"analyze {CODE} analysts=news,sentiment,fundamentals")
    result = out["result"]
    assert result["stopped"] is None and result["risk_summary"]["rating"] == "Hold"
    assert set(result["analysts"]) == {"news", "sentiment", "fundamentals"}  # nothing left of the stopped run


def test_free_text_is_read_by_the_light_model_and_every_call_counts_toward_the_budget(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    def used(text: str, tokens: int) -> AIMessage:
        return AIMessage(content=text, usage_metadata={"input_tokens": tokens - 10, "output_tokens": 10,
                                                       "total_tokens": tokens})

    reader = used("", 300).model_copy(update={"tool_calls": [{
        "name": "DeskCommand", "args": {"command": "analyze 600519.SH analysts=market"}, "id": "r1",
        "type": "tool_call"}]})
    light = models(scripts={"[role: request reader]": [reader],  # the market analyst's post-close summary:
                            "most recent market-analyst reports": [used("summary of the day", 200)]})
    scripts = desk_scripts(market=[used("", 1000).model_copy(update={"tool_calls": [
        {"name": "get_indicators", "args": {}, "id": "m1", "type": "tool_call"}]}), used("Trend report.", 1000)],
        risk_judge=[risk_answer("Hold", 0.0)])
    llm = models(scripts={k: v for k, v in scripts.items()
                          if k not in (ROLES["news"], ROLES["sentiment"], ROLES["fundamentals"])})
    _, out = _run(db_url, engine, sandbox, provider, llm, "what should I do with Moutai today?", light)
    result = out["result"]
    assert result["request"]["analysts"] == ["market"] and result["request"]["reader_tokens"] == 300
    assert result["analysts"]["market"]["tokens"] == 2200  # two model calls and the light model's summary
    assert result["tokens"] == 300 + 2200 + result["stages"]["research"]["tokens"] + result["stages"]["risk"]["tokens"]


@pytest.mark.parametrize(("said", "told"), [
    (answer("Moutai looks strong today."), "The model's answer could not be used: it replied in prose instead of the "
                                           'JSON command ("Moutai looks strong today.")'),
    (tool_call("DeskCommand", command=None, reply="Which stock?"), "Which stock?"),
], ids=["prose", "no stock"])
def test_the_request_readers_answer_without_a_command_is_told(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels,
        said: AIMessage, told: str) -> None:
    light = models(scripts={"[role: request reader]": [said]})
    _, out = _run(db_url, engine, sandbox, provider, models(), "what should I do today?", light)
    assert out["final_reply"].startswith(told) and "Usage: `analyze" in out["final_reply"]
    assert out.get("result") is None


def test_one_desk_order_card_per_stock_until_a_trader_decides_it(
        own_url: str, own_engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    """A second decision on the stock while the first card waits proposes nothing (approving both would double
    the position); once the first is rejected, the next decision proposes again."""
    clock_at_data_end(own_engine, provider)  # the desk decides as of 20200824 and trades there
    name = account()
    first, out = _run(own_url, own_engine, sandbox, provider, models(scripts=desk_scripts()),
                      f"analyze {CODE} account={name}", _light(models))
    (card,) = out["__interrupt__"]
    _, second = _run(own_url, own_engine, sandbox, provider, models(scripts=desk_scripts()),
                     f"analyze {CODE} account={name}", _light(models))
    assert "__interrupt__" not in second
    plan = second["result"]["trader_investment_plan"]
    assert plan.startswith(f"no order: an order card of the desk on {CODE} in {name} is still waiting for a trader")
    first.decide(out, {"type": "reject", "message": "not now"}, user=TRADER)
    _, third = _run(own_url, own_engine, sandbox, provider, models(scripts=desk_scripts()),
                    f"analyze {CODE} account={name}", _light(models))
    assert third["__interrupt__"][0].value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"
    assert card.value["args"]["order"] == third["__interrupt__"][0].value["args"]["order"]


def test_the_judges_speak_with_the_deep_model_when_one_is_set(
        own_url: str, own_engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    """QUANTDESK_DEEP_MODEL: the research and risk managers use it (graphs/analyze/models.py), everyone else not."""
    clock_at_data_end(own_engine, provider)  # the desk decides as of 20200824 and trades there
    scripts = desk_scripts()
    judges = {ROLES[name]: scripts.pop(ROLES[name]) for name in ("research_judge", "risk_judge")}
    llm, deep = models(scripts=scripts), models(scripts=judges)
    _thread, out = _run(own_url, own_engine, sandbox, provider, llm, f"analyze {CODE} account={account()}",
                        _light(models), deep_llm=deep)
    assert out["__interrupt__"][0].value["type"] == "approval"  # the desk decided on the judges' verdicts
    assert all(deep.prompts_for(key) for key in judges)
    assert not any(llm.prompts_for(key) for key in judges)


def test_a_decision_to_buy_a_symbol_the_mandate_blocks_proposes_no_card_and_names_the_line(
        own_url: str, own_engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    """Issue 29, item 4, on the desk's path: the desk decides Buy, but the account's mandate blocks the stock, so no
    card is proposed, nothing is placed, and the result says which mandate line stops it."""
    clock_at_data_end(own_engine, provider)  # the desk decides as of 20200824 and trades there
    name = account()
    mandate_command(CommandCall(desk_context(own_engine, sandbox, provider, None), [name, "set", f"block={CODE}"],
                                "UALICE", name))  # UALICE administers accounts in the desk's context
    _, out = _run(own_url, own_engine, sandbox, provider, models(scripts=desk_scripts()),
                  f"analyze {CODE} account={name}", _light(models))
    assert "__interrupt__" not in out
    result = out["result"]
    record = result["execution_record"]
    assert record["order_intent"]["side"] == "buy" and record["order_intent"]["quantity"] == 100  # the desk's Buy
    assert (record["status"], record["order"], record["decided_by"]) == ("refused", None, None)
    assert record["message"] == (f"The order is outside account {name}'s mandate and is not proposed: {CODE} is "
                                 f"blocked (mandate: block {CODE}).")
    with Session(own_engine) as session:
        assert list(session.scalars(select(PaperOrder).where(PaperOrder.account == name))) == []
