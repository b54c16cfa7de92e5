"""The desk's critical path (issue 27): the memory summaries the analysts' reports make due are written beside the
debate, not before it. With the real ChatOpenAI client against the loopback fake endpoint answering every call
after the same delay, the debate's first call goes out once every analyst's report is in, before any memory
summary has been answered; the summaries are still written, and the desk counts every call's tokens, the light
model's included, as the endpoint reported them."""

from __future__ import annotations

from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.llm import get_light_llm, get_llm
from testkit.desk import ROLES, SlowOpenAI, account, desk_context, desk_scripts, risk_answer
from testkit.fakes.chat import answer
from testkit.fakes.openai_server import API_KEY, OpenAIServer
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.desk.memory import MemoryController
from tools.sandbox import Sandbox
from tools.settings import Settings

CODE = "600519.SH"
MAIN, LIGHT = "main-model", "light-model"
ANALYSTS = ("market", "news", "sentiment", "fundamentals")
DELAY = 0.5  # seconds per model call


def test_the_debate_starts_once_the_reports_exist_before_any_memory_summary_ends(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox) -> None:
    fake = SlowOpenAI(delay=DELAY)
    for key, steps in desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]).items():
        fake.script(key, *steps)
    fake.script(LIGHT, *[answer("memory of the day")] * len(ANALYSTS))  # one post-close summary each
    with OpenAIServer(fake) as server:
        settings = Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY,
                            QUANTDESK_MODEL=MAIN, QUANTDESK_LIGHT_MODEL=LIGHT)
        ctx = desk_context(sqlite_engine, sandbox, SampleProvider(), get_llm(settings), get_light_llm(settings))
        out = GraphThread(sqlite_url, ctx, build_analyze_graph).say(f"analyze {CODE} account={account()}")
    fake.check()

    result = out["result"]
    assert result["stopped"] is None and result["risk_summary"]["rating"] == "Hold"
    reports = [fake.of(ROLES[name])[-1] for name in ANALYSTS]  # each analyst's last call: its report
    summaries = fake.of(LIGHT)
    (bull, *_) = fake.of(ROLES["bull"])
    assert len(summaries) == len(ANALYSTS) and all(e.status == 200 for e in fake.exchanges)
    assert max(fake.ended(e) for e in reports) <= bull.received  # the debate read every report
    assert bull.received < min(fake.ended(e) for e in summaries)  # and did not wait for any summary
    for name in ANALYSTS:  # the summaries were written all the same, for later decisions
        memory = MemoryController(sqlite_engine, name, ctx.desk_namespace)
        assert memory.get_memory_summary(CODE, "20200824", "post_close")["memory_summary_post_close"]
    # the desk's count is the endpoint's: every call, the light model's summaries included
    assert result["tokens"] == sum(e.answer["usage"]["total_tokens"] for e in fake.exchanges)  # type: ignore[index]
