"""The decision desk when its model endpoint fails mid-run (issue 14), with the real ChatOpenAI client against the
loopback fake OpenAI server: after some agents answered, the endpoint answers HTTP 500 past the client's retries
(an analyst's call) or 401 (a debater's call). The desk stops cleanly, says where and why, proposes no order and
keeps nothing of the failed agent in its memory; the same request later, with the endpoint back, runs through."""

from __future__ import annotations

import json

import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.present import present_decision
from graphs.llm import LLM_MAX_RETRIES, get_light_llm, get_llm
from testkit.desk import ROLES, account, clock_at_data_end, desk_context
from testkit.fakes.chat import answer, tool_call
from testkit.fakes.openai_server import API_KEY, OpenAIServer, Step, http_error
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.desk.memory import MemoryController
from tools.sandbox import Sandbox
from tools.settings import Settings

CODE = "600519.SH"
MAIN, LIGHT = "main-model", "light-model"
ATTEMPTS = LLM_MAX_RETRIES + 1
FAILURES: dict[str, list[Step]] = {"analyst 500": [http_error(500)] * ATTEMPTS, "debater 401": [http_error(401)]}
SAID = {"analyst 500": "the news analyst's model failed: The model endpoint returned HTTP 500 after 2 retries (fake "
                       "HTTP 500).",
        "debater 401": "stopped in the research debate (bull): The model endpoint refused the API key (HTTP 401); "
                       "check OPENAI_API_KEY."}


def _judge(body: dict[str, object]) -> AIMessage:
    return answer(json.dumps(body))


def _desk() -> dict[str, list[Step]]:
    """One decision's answers with the market and news analysts: Buy 20 %, which sizes to one lot."""
    steps: dict[str, list[Step]] = {
        "market": [tool_call("get_indicators"), answer("Close 1696.35, RSI(14) 59.31.")],
        "news": [tool_call("get_news"), answer("No news could be read.")],
        "research_judge": [_judge({"rating": "Buy", "target_position": 0.2, "bull_points": ["trend"],
                                   "bear_points": ["RSI"], "confidence": 0.7, "investment_plan": "buy"})],
        "risk_judge": [_judge({"rating": "Buy", "target_position": 0.2, "risks": ["reversal"], "confidence": 0.6,
                               "final_trade_decision": "Buy"})]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        steps[role] = [answer(f"{role} speaks")]
    return steps


def _failing_run(fault: str) -> tuple[dict[str, list[Step]], int]:
    """The first run's answers (agents answer until the fault) and how many post-close summaries it writes."""
    desk = _desk()
    if fault == "analyst 500":  # the news analyst called its tool, then its report call fails
        return {"market": desk["market"], "news": [desk["news"][0], *FAILURES[fault]]}, 1
    return {"market": desk["market"], "news": desk["news"], "bull": FAILURES[fault]}, 2  # both analysts reported


@pytest.mark.parametrize("fault", FAILURES)
def test_a_failing_endpoint_stops_the_desk_cleanly_and_a_retry_runs_through(
        fault: str, sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    first, summaries = _failing_run(fault)
    for role, steps in first.items():
        fake.script(ROLES[role], *steps)
    fake.script(LIGHT, *[answer("memory of the day")] * summaries)  # market's and news's, whichever comes first
    settings = Settings(_env_file=None, OPENAI_BASE_URL=openai_server.url, OPENAI_API_KEY=API_KEY,
                        QUANTDESK_MODEL=MAIN, QUANTDESK_LIGHT_MODEL=LIGHT)
    ctx = desk_context(sqlite_engine, sandbox, SampleProvider(), get_llm(settings), get_light_llm(settings))
    clock_at_data_end(sqlite_engine, ctx.provider)  # the desk decides as of 20200824 and trades there
    thread = GraphThread(sqlite_url, ctx, build_analyze_graph)
    request = f"analyze {CODE} analysts=market,news account={account()}"
    out = thread.say(request)

    result = out["result"]
    assert result["stopped"] == SAID[fault] and "__interrupt__" not in out  # where and why, and no order card
    assert result["risk_summary"] is None and result["execution_record"] is None and result["order_outcome"] == {}
    view = present_decision(result)
    assert view.title.endswith("no decision") and view.summary == SAID[fault] and SAID[fault] not in view.warnings
    failing = "news" if fault == "analyst 500" else "bull"
    assert len(fake.of(ROLES[failing])) == len(first[failing])  # a 500 is retried twice, a 401 never
    news = MemoryController(sqlite_engine, "news", ctx.desk_namespace).get_memory_summary(CODE, "20200824",
                                                                                          "post_close")
    # an analyst whose model failed has no report: its memory keeps nothing of the run, and nothing is summarised
    assert news["today_report"].startswith("No news could be read.") == (failing != "news")
    assert news["memory_summary_post_close"] == ("memory of the day" if failing != "news" else "")

    # the endpoint answers again: the same request runs through to the order card
    for role, steps in _desk().items():
        fake.script(ROLES[role], *steps)
    if failing == "news":  # the day's news memory is written now, from the report the retry wrote
        fake.script(LIGHT, answer("memory of the day"))
    out = thread.say(request)
    (card,) = out["__interrupt__"]
    assert card.value["args"]["order"] == "BUY 100 600519.SH 贵州茅台 at market"
    news_prompt = fake.of(ROLES["news"])[-2].body["messages"][0]["content"]
    assert "no report" not in news_prompt and "model failed" not in news_prompt
