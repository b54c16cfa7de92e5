"""Issue 25, item 5: the desk's agents write in the thread's language. A desk run with the real ChatOpenAI client
against the loopback OpenAI-compatible server: in a Chinese thread every agent's system prompt asks for Simplified
Chinese (and keeps keys, tool calls and numbers as they are); in an English thread, for English."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.llm import get_light_llm, get_llm
from tests.decision_desk import ROLES, account, desk_context, desk_scripts, risk_answer
from tests.fakes.chat import answer
from tests.fakes.openai_server import API_KEY, FakeOpenAI, OpenAIServer
from tests.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.i18n import using
from tools.sandbox import Sandbox
from tools.settings import Settings

MAIN, LIGHT = "main-model", "light-model"


def _system_prompt(body: dict) -> str:
    return next(str(m["content"]) for m in body["messages"] if m["role"] in ("system", "developer"))


@pytest.mark.parametrize(("language", "asks", "not_asked"), [
    ("zh-CN", "in Simplified Chinese, as Chinese A-share quants write: 均线, 金叉/死叉, 夏普比率", "in English"),
    ("en", "Write everything a person reads in English.", "Simplified Chinese"),
])
def test_every_desk_agent_is_asked_for_the_threads_language(sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox,
                                                            language: str, asks: str, not_asked: str) -> None:
    fake = FakeOpenAI()
    for key, steps in desk_scripts(risk_judge=[risk_answer("Hold", 0.0)]).items():
        fake.script(key, *steps)
    fake.script(LIGHT, *[answer("memory of the day")] * 4)
    with OpenAIServer(fake) as server:
        settings = Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY,
                            QUANTDESK_MODEL=MAIN, QUANTDESK_LIGHT_MODEL=LIGHT)
        ctx = desk_context(sqlite_engine, sandbox, SampleProvider(), get_llm(settings), get_light_llm(settings))
        with using(language):  # the runner sets the thread's language so around its run
            out = GraphThread(sqlite_url, ctx, build_analyze_graph).say(f"分析 600519.SH account={account()}")
    fake.check()
    assert out["result"]["risk_summary"]["rating"] == "Hold"
    for role, marker in ROLES.items():
        calls = fake.of(marker)
        assert calls, role
        for call in calls:
            prompt = _system_prompt(call.body)
            assert asks in prompt and not_asked not in prompt, role
    assert "Keep JSON keys, enum values, tool names and arguments" in _system_prompt(fake.of(ROLES["market"])[0].body) \
        or language == "en"
