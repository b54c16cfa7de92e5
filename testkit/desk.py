"""Shared pieces of the decision desk's tests: scripted agents keyed by their role marker, and a run context on the
sample data with a paper account per test."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from langchain_core.messages import AIMessage
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from testkit.fakes.chat import ScriptedChatModel, answer, tool_call
from testkit.fakes.openai_server import Exchange, FakeOpenAI
from tools.broker.accounts import Accounts
from tools.broker.checks import RiskLimits
from tools.broker.clock import SHANGHAI
from tools.broker.clock_moves import move_clock
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.data.provider import MarketDataProvider
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

TRADER = "UTRADER"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.3"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, timedelta(minutes=120))
ROLES = {"market": "[role: market analyst]", "news": "[role: news analyst]",
         "sentiment": "[role: sentiment analyst]", "fundamentals": "[role: fundamentals analyst]",
         "bull": "[role: bull researcher]", "bear": "[role: bear researcher]",
         "research_judge": "[role: research manager]", "risky": "[role: aggressive risk analyst]",
         "safe": "[role: conservative risk analyst]", "neutral": "[role: neutral risk analyst]",
         "risk_judge": "[role: risk manager]"}
# what the sample says of 600519.SH on its last day, 20200824 (checked by hand against the sample's bars)
MARKET_REPORT = "Close 1696.35 on 20200824, MA(20) 1664.65, RSI(14) 59.31, MACD(12,26,9) DIF 19.3123."


def research_answer(rating: str = "Buy", target: float = 0.2, confidence: float = 0.7) -> AIMessage:
    return answer(json.dumps({"rating": rating, "target_position": target, "bull_points": ["trend is up"],
                              "bear_points": ["RSI is not low"], "confidence": confidence,
                              "investment_plan": "build a position"}))


def risk_answer(rating: str = "Buy", target: float = 0.2, confidence: float = 0.6) -> AIMessage:
    return answer(json.dumps({"rating": rating, "target_position": target, "risks": ["a sharp reversal"],
                              "confidence": confidence, "final_trade_decision": f"{rating}, sized in code"}))


def desk_scripts(depth_rounds: tuple[int, int] = (1, 1), **overrides: list[AIMessage]) -> dict[str, list[AIMessage]]:
    """One answer queue per agent: each analyst calls one tool and writes, each debater speaks its rounds."""
    research, risk = depth_rounds
    scripts: dict[str, list[AIMessage]] = {
        "market": [tool_call("get_indicators"), answer(MARKET_REPORT)],
        "news": [tool_call("get_news"), answer("No news could be read.")],
        "sentiment": [tool_call("get_sentiment"), answer("No sentiment data.")],
        "fundamentals": [tool_call("get_daily_basic"), answer("Only turnover is available.")],
        "bull": [answer(f"bull turn {i + 1}") for i in range(research)],
        "bear": [answer(f"bear turn {i + 1}") for i in range(research)],
        "research_judge": [research_answer()],
        "risky": [answer(f"risky turn {i + 1}") for i in range(risk)],
        "safe": [answer(f"safe turn {i + 1}") for i in range(risk)],
        "neutral": [answer(f"neutral turn {i + 1}") for i in range(risk)],
        "risk_judge": [risk_answer()],
    }
    scripts.update(overrides)
    return {ROLES[name]: queue for name, queue in scripts.items()}


def desk_context(engine: Engine, sandbox: Sandbox, provider: MarketDataProvider, llm: ScriptedChatModel | None,
                 light: ScriptedChatModel | None = None, **extra: Any) -> WorkflowContext:
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           llm=llm, light_llm=light, paper=CONFIG, traders=frozenset({TRADER}),
                           admins=frozenset({"UALICE"}),  # the requester names accounts (`analyze ... account=`)
                           broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by),
                           **{"desk_namespace": f"test-{uuid.uuid4().hex[:8]}", **extra})


def clock_at_data_end(engine: Engine, provider: MarketDataProvider) -> None:
    """Move the simulated clock to the data's last day, the day a desk request without DATE decides on: a new clock
    starts 20 sessions earlier, and the desk proposes no order for a session before the day it decided on. The clock
    is one per database: call it on a database of the test's own (own_engine)."""
    end = provider.last_date()
    assert end is not None
    desk = Accounts(engine, lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by))
    move_clock(engine, provider, CONFIG.live_data_days, desk, end, TRADER, datetime.now(SHANGHAI))


def account() -> str:
    """A paper account of its own (the PostgreSQL test database is shared by the session)."""
    return f"desk-{uuid.uuid4().hex[:8]}"


@dataclass
class SlowOpenAI(FakeOpenAI):
    """The fake OpenAI endpoint answering every call `delay` seconds after it arrived (a model's latency);
    `answered[i]` is when the answer to `exchanges[i]` was ready (time.monotonic())."""

    delay: float = 0.0
    answered: dict[int, float] = field(default_factory=dict)

    def answer(self, exchange: Exchange, message: AIMessage) -> dict[str, Any]:
        time.sleep(self.delay)
        completion = super().answer(exchange, message)
        with self._lock:
            self.answered[self.exchanges.index(exchange)] = time.monotonic()
        return completion

    def ended(self, exchange: Exchange) -> float:
        with self._lock:
            return self.answered[self.exchanges.index(exchange)]
