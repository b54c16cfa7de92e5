"""An analyst whose last answer is no report (issue 28, items 18 and 19): it writes no report and no memory, the
light model is not asked to summarise anything of it, the debate goes on and is told which analyst is missing and
why, and the reason names what the model did (an empty answer, a call to a tool that does not exist)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.present import present_decision
from testkit.desk import ROLES, account, desk_context, desk_scripts, risk_answer
from testkit.fakes.chat import ScriptedModels, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.desk.memory import MemoryController
from tools.sandbox import Sandbox

CODE = "600519.SH"
BROKEN_CALL = AIMessage(content="", invalid_tool_calls=[
    {"name": "get_weather", "args": '{"city": "Guiyang', "id": "call_broken", "error": None,
     "type": "invalid_tool_call"}])
BAD_ARGUMENTS = AIMessage(content="", invalid_tool_calls=[
    {"name": "get_news", "args": '{"lookback_days": 7', "id": "call_bad", "error": None, "type": "invalid_tool_call"}])
ANSWERS = {
    "empty": ([tool_call("get_news"), answer("")], "the news analyst wrote no report: its last answer was empty"),
    "unknown tool": ([tool_call("get_news"), BROKEN_CALL],
                     "the news analyst wrote no report: it called a tool that does not exist: get_weather"),
    "bad arguments": ([BAD_ARGUMENTS], "the news analyst wrote no report: it called get_news with arguments that "
                                       "could not be read: '{\"lookback_days\": 7'"),
}


@pytest.mark.parametrize("kind", ANSWERS)
def test_an_analyst_without_a_report_keeps_no_memory_and_the_debate_hears_it_is_missing(
        kind: str, sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, models: ScriptedModels) -> None:
    news, why = ANSWERS[kind]
    scripts = desk_scripts(news=news, risk_judge=[risk_answer("Hold", 0.0)])
    llm = models(scripts={k: v for k, v in scripts.items() if k not in (ROLES["sentiment"], ROLES["fundamentals"])})
    light = models(script=[answer("market memory of the day")])  # the market analyst's summary only
    ctx = desk_context(sqlite_engine, sandbox, SampleProvider(), llm, light)
    out = GraphThread(sqlite_url, ctx, build_analyze_graph).say(
        f"analyze {CODE} analysts=market,news account={account()}")

    result = out["result"]
    run = result["analysts"]["news"]
    assert run["failed"] == why and run["report_id"] is None and run["report"].startswith(f"(no report: {why})")
    assert result["stopped"] is None and result["risk_summary"]["rating"] == "Hold"  # the desk went on
    memory = MemoryController(sqlite_engine, "news", ctx.desk_namespace).get_memory_summary(CODE, "20200824",
                                                                                           "post_close")
    assert memory == {"today_report": "", "memory_summary_pre_open": "", "memory_summary_post_close": ""}
    assert [p[0].content for p in light.prompts if "news" in str(p[0].content)] == []
    bull = str(llm.prompts_for(ROLES["bull"])[0][-1].content)
    assert f"## news analyst\n[today] (missing: {why})" in bull
    assert "## market analyst\n[today] Close 1696.35" in bull
    assert why in present_decision(result).warnings


def test_when_every_analyst_fails_the_desk_stops_before_the_debate(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, models: ScriptedModels) -> None:
    llm = models(scripts={ROLES["market"]: [answer("  ")]})
    ctx = desk_context(sqlite_engine, sandbox, SampleProvider(), llm, models())
    out = GraphThread(sqlite_url, ctx, build_analyze_graph).say(f"analyze {CODE} analysts=market")
    assert out["result"]["stopped"] == ("stopped at fusion: no analyst wrote a report (the market analyst wrote no "
                                        "report: its last answer was empty)")
    assert out["result"]["stages"] == {} and "__interrupt__" not in out
