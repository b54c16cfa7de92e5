"""The desk's Asia/Shanghai sessions and its report versions (issue 14): a pre-open decision for a day decides on
data up to the previous close and writes and reads the analysts' pre-open summaries, a later post-close decision
reads the post-close ones; before 09:30 on a live trading day a request without a date is a pre-open decision; and
a re-analysis of a day keeps the earlier report, so the earlier decision's report ids still name the text it read."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.present import present_decision
from graphs.checkpointer import open_checkpointer
from testkit.desk import ROLES, account, desk_context, research_answer, risk_answer
from testkit.fakes.chat import ScriptedChatModel, ScriptedModels, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.broker.clock import SHANGHAI
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.desk.memory import MemoryController
from tools.desk.records import AnalystReport
from tools.sandbox import Sandbox
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

CODE = "600519.SH"
# the light model's prompts (tools.desk.memory): each queue holds exactly the summaries that are due
MARKET_CLOSE, NEWS_CLOSE = "most recent market-analyst reports", "long-term memory of the news analyst"
MARKET_OPEN, NEWS_OPEN = "From the market analyst's post-close memory", "From the news analyst's post-close memory"


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _desk(market: str, news: str = "No news could be read.") -> dict[str, list[AIMessage]]:
    """One decision's answers with the market and news analysts, rated Hold (no order)."""
    scripts: dict[str, list[AIMessage]] = {
        "market": [tool_call("get_indicators"), answer(market)], "news": [tool_call("get_news"), answer(news)],
        "research_judge": [research_answer("Hold", 0.0)], "risk_judge": [risk_answer("Hold", 0.0)]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[role] = [answer(f"{role} speaks")]
    return {ROLES[name]: queue for name, queue in scripts.items()}


def _state(db_url: str, thread: GraphThread) -> dict[str, Any]:
    with open_checkpointer(db_url) as saver:
        return build_analyze_graph(saver).get_state(thread.config).values


def _seen(model: ScriptedChatModel) -> str:
    """Everything one decision's agents were shown."""
    return "\n".join(str(m.content) for prompt in model.prompts for m in prompt)


def _tool_outputs(prompts: list[list[BaseMessage]]) -> list[str]:
    return list(dict.fromkeys(str(m.content) for p in prompts for m in p if isinstance(m, ToolMessage)))


def test_a_pre_open_decision_reads_the_previous_close_and_the_pre_open_memory(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    light = models(scripts={MARKET_CLOSE: [answer("market memory of 0821"), answer("market memory of 0824")],
                            NEWS_CLOSE: [answer("news memory of 0821"), answer("news memory of 0824")],
                            MARKET_OPEN: [answer("market brief for the 0824 open")],
                            NEWS_OPEN: [answer("news brief for the 0824 open")]})
    namespace, name = f"test-{uuid.uuid4().hex[:8]}", account()

    def decide(text: str, llm: ScriptedChatModel) -> tuple[GraphThread, dict[str, Any]]:
        ctx = desk_context(engine, sandbox, provider, llm, light, desk_namespace=namespace)
        thread = GraphThread(db_url, ctx, build_analyze_graph)
        return thread, thread.say(f"{text} analysts=market,news account={name}")

    decide(f"analyze {CODE} 20200821", models(scripts=_desk("Close 1676.00 on 20200821.")))

    before_open = models(scripts=_desk("Close 1676.00 on 20200821, before the open."))
    thread, out = decide(f"analyze {CODE} 20200824 session=pre_open", before_open)
    request = out["result"]["request"]
    assert (request["session"], request["session_date"], request["trade_date"]) == ("pre_open", "20200824",
                                                                                    "20200821")
    # nothing of the new day: every tool answers as of the 21st, and the 24th's close (1,696.35) is nowhere
    (indicators,) = _tool_outputs(before_open.prompts_for(ROLES["market"]))
    assert '"as_of": "20200821"' in indicators and '"trade_date": "20200821"' in indicators
    assert "20200824" not in indicators and "1696.35" not in _seen(before_open)
    assert out["result"]["current_price"] == "1676.00"
    # the analyst read the brief the light model wrote for this open, beside the last post-close memory
    system = str(before_open.prompts_for(ROLES["market"])[0][0].content)
    assert "pre-open summary: market brief for the 0824 open" in system
    assert "post-close summary: market memory of 0821" in system and "before the open of 20200824" in system
    fused = _state(db_url, thread)["news_analyst_summary"]
    assert fused["today_report"].startswith("No news could be read.")  # then its data gaps
    assert (fused["memory_summary_pre_open"], fused["memory_summary_post_close"]) == (
        "news brief for the 0824 open", "news memory of 0821")
    assert present_decision(out["result"]).title.startswith(f"贵州茅台 {CODE} · 20200824 pre-open: Hold")

    after_close = models(scripts=_desk("Close 1696.35 on 20200824."))
    thread, out = decide(f"analyze {CODE} 20200824", after_close)
    assert out["result"]["request"]["session"] == "post_close"
    system = str(after_close.prompts_for(ROLES["market"])[0][0].content)
    assert "earlier today: Close 1676.00 on 20200821, before the open." in system
    fused = _state(db_url, thread)["market_analyst_summary"]
    assert fused["today_report"].startswith("Close 1696.35 on 20200824.")
    # the decision reads the memory as it stood before its own report: that report's summary is written beside the
    # debate, for later decisions
    assert (fused["memory_summary_pre_open"], fused["memory_summary_post_close"]) == (
        "market brief for the 0824 open", "market memory of 0821")
    later = MemoryController(engine, "market", namespace).get_memory_summary(CODE, "20200825", "pre_open")
    assert later["memory_summary_post_close"] == "market memory of 0824"
    # the 24th's post-close memory was written from the pre-open and the post-close reports of the day
    (market_summary,) = [p for p in light.prompts_for(MARKET_CLOSE) if "as of 20200824" in str(p[0].content)]
    assert "before the open" in str(market_summary[-1].content) and "1696.35" in str(market_summary[-1].content)


def test_a_pre_open_replay_decides_each_date_on_the_previous_close_and_builds_its_memory(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    dates = ["20200728", "20200729", "20200730"]  # decided before their opens, on the closes of the day before
    scripts = {ROLES["market"]: [m for d in dates for m in (tool_call("get_indicators"), answer(f"Report {d}."))],
               ROLES["research_judge"]: [research_answer("Hold", 0.0) for _ in dates],
               ROLES["risk_judge"]: [risk_answer("Hold", 0.0) for _ in dates]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[ROLES[role]] = [answer(f"{role} speaks") for _ in dates]
    llm = models(scripts=scripts)
    # the first open has no memory; each later open first summarises the day before, then briefs from it
    light = models(scripts={MARKET_CLOSE: [answer("memory of 0728"), answer("memory of 0729")],
                            MARKET_OPEN: [answer("brief for 0729"), answer("brief for 0730")]})
    ctx = desk_context(engine, sandbox, provider, llm, light)
    out = GraphThread(db_url, ctx, build_analyze_graph).say(
        f"analyze {CODE} 20200728..20200730 every=1d analysts=market session=pre_open")
    result = out["result"]
    assert result["stopped"] is None and [s["date"] for s in result["steps"]] == dates
    outputs = _tool_outputs(llm.prompts_for(ROLES["market"]))
    assert [json.loads(o)["last_bar"]["trade_date"] for o in outputs] == ["20200727", "20200728", "20200729"]
    system = str(llm.prompts_for(ROLES["market"])[-1][0].content)
    assert "pre-open summary: brief for 0730" in system and "post-close summary: memory of 0729" in system
    assert "before the open of 20200730 (data up to the close of 20200729" in system
    assert "before its open" in present_decision(result).summary


@pytest.mark.parametrize(("now", "text", "expected"), [
    ((2020, 8, 25, 8, 30), f"analyze {CODE}", ("pre_open", "20200825", "20200824")),  # live data, before the open
    ((2020, 8, 25, 8, 30), f"analyze {CODE} 20200825", ("pre_open", "20200825", "20200824")),
    ((2020, 8, 25, 9, 30), f"analyze {CODE}", ("post_close", "20200824", "20200824")),  # the market is open
    ((2020, 8, 29, 8, 30), f"analyze {CODE}", ("post_close", "20200824", "20200824")),  # a Saturday
    ((2020, 8, 26, 8, 30), f"analyze {CODE}", ("post_close", "20200824", "20200824")),  # the data a day behind
    ((2020, 10, 12, 8, 30), f"analyze {CODE}", ("post_close", "20200824", "20200824")),  # data no longer live
    ((2020, 8, 25, 8, 30), f"analyze {CODE} 20200821", ("post_close", "20200821", "20200821")),  # a past date
    ((2020, 8, 25, 8, 30), f"analyze {CODE} session=post_close", ("post_close", "20200824", "20200824")),
    ((2020, 8, 1, 12, 0), f"analyze {CODE} session=pre_open", ("pre_open", "20200825", "20200824")),  # next open
])
def test_the_session_follows_the_shanghai_clock_on_live_data(
        sqlite_url: str, sandbox: Sandbox, provider: SampleProvider, now: tuple[int, ...], text: str,
        expected: tuple[str, str, str]) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    ctx = desk_context(engine, sandbox, provider, None, now=lambda: datetime(*now, tzinfo=SHANGHAI))
    out = GraphThread(sqlite_url, ctx, build_analyze_graph).say(text)
    request = out["result"]["request"]  # without an LLM: the indicator table, as of the data's day
    assert (request["session"], request["session_date"], request["trade_date"]) == expected
    assert out["result"]["bars"][-1]["trade_date"] == expected[2]
    engine.dispose()


@pytest.mark.parametrize(("text", "expected"), [
    (f"analyze {CODE} 20200823 session=pre_open", "20200823 is not a trading day"),
    (f"analyze {CODE} 20200826 session=pre_open", "the data ends on 20200824; the pre-open of 20200826 needs"),
    (f"analyze {CODE} 20190102 session=pre_open", "no trading day before 20190102 in the data"),  # the first
    (f"analyze {CODE} session=noon", "session= is pre_open (before the day's open"),
])
def test_a_pre_open_request_the_data_cannot_serve_says_why(sqlite_url: str, sandbox: Sandbox,
                                                           provider: SampleProvider, text: str,
                                                           expected: str) -> None:
    engine = make_engine(sqlite_url)
    upgrade(engine)
    out = GraphThread(sqlite_url, desk_context(engine, sandbox, provider, None), build_analyze_graph).say(text)
    assert expected in out["final_reply"] and "session=pre_open|post_close" in out["final_reply"]
    engine.dispose()


def test_a_re_analysis_keeps_the_report_an_earlier_decision_read(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels) -> None:
    light = models(script=[answer("market memory of the day")])  # once a day: the second run writes none
    first_llm = models(scripts={k: v for k, v in _desk("First look: close 1696.35.").items()
                                if k != ROLES["news"]})
    ctx = desk_context(engine, sandbox, provider, first_llm, light)
    first = GraphThread(db_url, ctx, build_analyze_graph).say(f"analyze {CODE} analysts=market")
    second_llm = models(scripts={k: v for k, v in _desk("Second look: close 1696.35.").items()
                                 if k != ROLES["news"]})
    ctx = desk_context(engine, sandbox, provider, second_llm, light, desk_namespace=ctx.desk_namespace)
    thread = GraphThread(db_url, ctx, build_analyze_graph)
    second = thread.say(f"analyze {CODE} analysts=market")
    assert "earlier today: First look" in str(second_llm.prompts_for(ROLES["market"])[0][0].content)
    assert _state(db_url, thread)["market_analyst_summary"]["today_report"].startswith("Second look")

    logged = {d.id: d.report_ids["market"] for d in list_decisions(engine, ctx.desk_namespace, CODE)}
    with Session(engine) as db:
        read = [db.get(AnalystReport, logged[out["result"]["execution_record"]["decision_id"]]).report
                for out in (first, second)]  # type: ignore[union-attr]
    assert [text.split(":")[0] for text in read] == ["First look", "Second look"]
    newest = MemoryController(engine, "market", ctx.desk_namespace).get_memory_summary(CODE, "20200824", "post_close")
    assert newest["today_report"].startswith("Second look")
