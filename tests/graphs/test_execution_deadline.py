"""A words rule's time limit bounds the whole run (graphs/rule/nodes/plan.py, graphs/llm.py `bounded`): against
the loopback fake OpenAI server with a hanging endpoint, a model call gets at most the time left, and a timeout ends
the run reported as a timeout (not as an unusable answer)."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.llm import get_llm
from testkit.fakes.openai_server import API_KEY, OpenAIServer, hang
from testkit.graph_thread import GraphThread
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.data.klines import AShareKlines
from tools.data.local import SampleProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore

OWNER, MODEL = "UOWNER", "main-model"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.5"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))


def _ctx(engine: Engine, sandbox: Sandbox, server: OpenAIServer, timeout: float) -> WorkflowContext:
    settings = Settings(_env_file=None, OPENAI_BASE_URL=server.url, OPENAI_API_KEY=API_KEY, QUANTDESK_MODEL=MODEL,
                        QUANTDESK_LIGHT_MODEL=MODEL, QUANTDESK_LLM_TIMEOUT=timeout)
    provider = SampleProvider()
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           llm=get_llm(settings), paper=CONFIG, traders=frozenset(),
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by),
                           rules=RuleStore(engine, frozenset()), klines=lambda symbol: AShareKlines(provider))


def test_a_hanging_model_gets_only_the_time_left_and_the_run_stops_on_its_limit(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("graphs.rule.nodes.plan.RUN_TIMEOUT_SECONDS", 1.0)
    openai_server.fake.script(MODEL, hang(30))
    ctx = _ctx(sqlite_engine, sandbox, openai_server, timeout=60.0)
    rule = ctx.rules.add(OWNER, "c", "600519.SH", "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(sqlite_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    reason = out["result"]["decision"]["reason"]
    assert reason.startswith("no decision within 1 s: the model did not answer in the") and "left" in reason
    (call,) = openai_server.fake.exchanges  # one attempt: no retry fits in the time left, no second chance
    assert 0 < float(call.headers["x-stainless-read-timeout"]) <= 1.0  # not QUANTDESK_LLM_TIMEOUT's 60 s


def test_a_call_that_times_out_on_its_own_timeout_is_reported_as_a_timeout(
        sqlite_url: str, sqlite_engine: Engine, sandbox: Sandbox, openai_server: OpenAIServer) -> None:
    openai_server.fake.script(MODEL, hang(30), hang(30), hang(30))  # the client's two retries hang too
    ctx = _ctx(sqlite_engine, sandbox, openai_server, timeout=0.2)
    rule = ctx.rules.add(OWNER, "c", "600519.SH", "buy on strength", size=100)  # type: ignore[union-attr]
    out = GraphThread(sqlite_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    reason = out["result"]["decision"]["reason"]
    assert reason.startswith("The model did not answer within 0.2 s (QUANTDESK_LLM_TIMEOUT)")
    assert "could not be used" not in reason
    assert len(openai_server.fake.exchanges) == 3  # one call with its retries, and no second chance after it
