"""Issue 25, item 5: the agents write in the thread's language. A desk run with the real ChatOpenAI client
against the loopback OpenAI-compatible server: in a Chinese thread every agent's system prompt asks for Simplified
Chinese (and keeps keys, tool calls and numbers as they are); in an English thread, for English."""

from __future__ import annotations

import pytest
from langchain_core.messages import SystemMessage
from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.llm import get_light_llm, get_llm
from testkit.desk import ROLES, account, desk_context, desk_scripts, risk_answer
from testkit.evals.harness import load_cases, path_differences, run_case
from testkit.fakes.chat import ScriptedModels, answer
from testkit.fakes.openai_server import API_KEY, FakeOpenAI, OpenAIServer
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.i18n import using
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

MAIN, LIGHT = "main-model", "light-model"


def _system_prompt(body: dict) -> str:
    return next(str(m["content"]) for m in body["messages"] if m["role"] in ("system", "developer"))


LANGUAGE_MARKERS = [
    ("zh-CN", "in Simplified Chinese, as Chinese A-share quants write: 均线, 金叉/死叉, 夏普比率", "in English"),
    ("en", "Write everything a person reads in English.", "Simplified Chinese"),
]


@pytest.mark.parametrize(("language", "asks", "not_asked"), LANGUAGE_MARKERS)
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


# The agents of the other workflows, each run through a reference case of testkit/evals with scripted models: every
# agent whose words a person reads (a question, a verdict on the code under review, the code's comments, the
# executor's reasoning) is asked for the thread's language, and the run takes the reference path in both languages.
WRITES_PROSE = {"reflection": "signal", "spec": "factor", "codegen": "factor", "judge": "factor", "executor": "rule"}
MACHINE_ONLY = {"fetch", "coder"}  # data fetching and signal code: tool calls and a frame, nothing a person reads
PROSE_CASES = ["signal/llm_complete_request", "signal/llm_garbage_reflection", "factor/spec_model_garbage",
               "factor/bad_code_retry", "factor/judge_no_verdict_to_review", "execution/seed_trace_approved"]


@pytest.mark.parametrize("language", ["zh-CN", "en"])
@pytest.mark.parametrize("case_id", PROSE_CASES)
def test_every_workflows_prose_agents_are_asked_for_the_threads_language(
        case_id: str, language: str, sqlite_url: str, sandbox: Sandbox, models: ScriptedModels) -> None:
    case = next(c for c in load_cases() if c.id == case_id)
    if language != "en":  # the words an interrupt must say are written in English
        case = case.with_spec(interrupts=[{k: v for k, v in asked.items() if k != "says"}
                                          for asked in case.spec.get("interrupts", [])])
    engine = make_engine(sqlite_url)
    upgrade(engine)
    try:
        with using(language):
            seen = run_case(case, sqlite_url, engine, sandbox, models)
    finally:
        engine.dispose()
    differences, _ = path_differences(case.id, seen.path, case.spec["path"])
    assert not seen.problems and not differences, [*seen.problems, *differences]
    asks, not_asked = next((a, n) for lang, a, n in LANGUAGE_MARKERS if lang == language)
    assert {call.agent for call in seen.calls} <= set(WRITES_PROSE) | MACHINE_ONLY
    prose_calls = [call for call in seen.calls if call.agent in WRITES_PROSE]
    assert prose_calls, f"{case_id} made no call to an agent that writes prose"
    for call in prose_calls:
        system = "\n".join(str(m.content) for m in call.prompt if isinstance(m, SystemMessage))
        assert asks in system and not_asked not in system, (call.agent, WRITES_PROSE[call.agent])
