"""The desk's token budget is a cap, not a check after the fact (issue 14), with the real ChatOpenAI client against
the loopback fake OpenAI server: every call asks for no more answer tokens than its stage has left, so an answer
that would run past the budget is cut there (finish_reason "length") and the desk stops and says where, with no
order card and nothing of the cut report kept; a stage that cannot fit another call stops before making it."""

from __future__ import annotations

from sqlalchemy import Engine

from graphs.analyze.budget import MIN_ANSWER_TOKENS
from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.routes import ANALYST_SHARE
from graphs.llm import get_light_llm, get_llm
from testkit.desk import ROLES, account, desk_context
from testkit.fakes.chat import answer, tool_call
from testkit.fakes.openai_server import API_KEY, OpenAIServer, http_error
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.desk.memory import MemoryController
from tools.sandbox import Sandbox
from tools.settings import Settings

CODE = "600519.SH"
MAIN, LIGHT = "main-model", "light-model"
BUDGET = 6000  # the one analyst's share is 3,600 tokens: its two calls fit, a 5,000-word report does not
SMALL = 1200  # a 720-token share: the first call (a prompt of about 400) fits, the report's (about 600 more) not
LONG_REPORT = " ".join(["trend"] * 5000)


def _thread(sqlite_url: str, engine: Engine, sandbox: Sandbox, server: OpenAIServer, budget: int) -> GraphThread:
    settings = Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY, QUANTDESK_MODEL=MAIN,
                        QUANTDESK_LIGHT_MODEL=LIGHT)
    ctx = desk_context(engine, sandbox, SampleProvider(), get_llm(settings), get_light_llm(settings),
                       decision_token_budget=budget)
    return GraphThread(sqlite_url, ctx, build_analyze_graph)


def test_an_answer_that_would_run_past_the_budget_is_cut_there_and_the_desk_stops(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    fake.script(ROLES["market"], tool_call("get_indicators"), answer(LONG_REPORT))
    thread = _thread(sqlite_url, sqlite_engine, sandbox, openai_server, BUDGET)
    out = thread.say(f"analyze {CODE} analysts=market account={account()}")

    share = int(BUDGET * ANALYST_SHARE)
    first, second = fake.of(ROLES["market"])
    caps = [e.body["max_completion_tokens"] for e in (first, second)]
    assert MIN_ANSWER_TOKENS <= caps[1] < caps[0] < share  # each call asks only for what its stage has left
    reported = first.answer["usage"]["total_tokens"]  # type: ignore[index]
    assert caps[1] <= share - reported
    assert second.answer["choices"][0]["finish_reason"] == "length"  # type: ignore[index]
    result = out["result"]
    assert result["stopped"].startswith("stopped in the market analyst: its answer was cut off at what was left "
                                        f"of its part of this decision's token budget, {share:,} tokens")
    assert "__interrupt__" not in out and result["risk_summary"] is None  # no debate, no order card
    assert result["tokens"] <= share  # the endpoint's own count: within the share
    memory = MemoryController(sqlite_engine, "market", thread.ctx.desk_namespace).get_memory_summary(CODE, "20200824",
                                                                                             "post_close")
    assert "trend trend" not in memory["today_report"]  # the cut report is not kept


def test_a_stage_that_cannot_fit_another_call_stops_before_making_it(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    fake.script(ROLES["market"], tool_call("get_indicators"))  # a second call would find no script: a failure
    out = _thread(sqlite_url, sqlite_engine, sandbox, openai_server, SMALL).say(f"analyze {CODE} analysts=market")
    share = int(SMALL * ANALYST_SHARE)
    (only,) = fake.of(ROLES["market"])
    assert only.body["max_completion_tokens"] < share
    result = out["result"]
    assert result["stopped"].startswith("stopped in the market analyst: there is not enough left for another call "
                                        f"in its part of this decision's token budget, {share:,} tokens")
    assert result["tokens"] <= share


def test_with_the_default_budget_no_call_asks_for_more_than_the_models_output_limit(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer) -> None:
    """A 200,000-token budget leaves one analyst 120,000 tokens: a call asking for all of it is refused by real
    endpoints (gpt-4o's output limit is 16,384; the fake refuses above that too), so the ask is capped at
    QUANTDESK_LLM_MAX_ANSWER_TOKENS."""
    fake = openai_server.fake
    fake.script(ROLES["market"], tool_call("get_indicators"), answer("Trend report."))
    fake.script(LIGHT, answer("memory of the day"))
    fake.script(ROLES["bull"], http_error(401))  # the debate's first call, with 80,000 tokens left; then it stops
    out = _thread(sqlite_url, sqlite_engine, sandbox, openai_server, 200_000).say(f"analyze {CODE} analysts=market")
    asked = [e.body["max_completion_tokens"] for e in [*fake.of(ROLES["market"]), *fake.of(ROLES["bull"])]]
    assert asked == [8_192] * 3  # the default QUANTDESK_LLM_MAX_ANSWER_TOKENS, not what the budget has left
    assert out["result"]["analysts"]["market"]["report"].startswith("Trend report.")
