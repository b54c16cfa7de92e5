"""The workflows' context built from the settings: the one place every adapter (the bot's runner, which the
console and the Slack workers use, and the LangGraph server) gets its providers, desk sources, broker, budgets and
models from, so a setting cannot reach one adapter and not another."""

from __future__ import annotations

import logging
from typing import Any

from sqlalchemy import Engine

from graphs import names
from graphs.context import WorkflowContext
from graphs.llm import get_deep_llm, get_light_llm, get_llm
from tools.access.roles import from_settings
from tools.access.store import load, seed
from tools.broker.accounts import BrokerEnv, brokers_from_settings, start_problems
from tools.broker.config import TradingConfig
from tools.data.factory import desk_sources
from tools.data.klines import klines_for
from tools.data.provider import MarketDataProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.settings import Settings
from tools.storage.artifacts import ArtifactStore

log = logging.getLogger(__name__)


def workflow_context(settings: Settings, engine: Engine, provider: MarketDataProvider, sandbox: Sandbox,
                     **adapter: Any) -> WorkflowContext:
    """Everything the settings decide; `adapter` adds what only the adapter knows (its stop check, say). The roles
    are the database's, read at each check; the settings' role variables only seed a database that holds none."""
    seed(engine, from_settings(settings))
    paper = TradingConfig.from_settings(settings)
    brokers = BrokerEnv(engine, provider, paper, settings)
    for problem in start_problems(brokers):  # a live broker's server that does not answer: said once, at start
        log.warning("%s", problem)
    names.use(provider)  # stock names in requests (贵州茅台) read as codes
    fundamentals, news, posts = desk_sources(settings, provider)
    return WorkflowContext(
        provider=provider, engine=engine, sandbox=sandbox,
        artifacts=ArtifactStore(engine, settings.artifact_retention_days),
        llm=get_llm(settings), light_llm=get_light_llm(settings), deep_llm=get_deep_llm(settings),
        fee_rate=settings.fee_rate,
        long_only=settings.long_only, paper=paper, holdout_fraction=settings.holdout_fraction,
        dsr_threshold=settings.dsr_threshold, research_channel=settings.research_channel,
        broker=brokers_from_settings(brokers),
        stored_roles=lambda: load(engine), second_approval_above=settings.second_approval_above,
        stale_move=settings.stale_move,
        decision_token_budget=settings.decision_token_budget,
        replay_token_budget=settings.replay_token_budget, max_answer_tokens=settings.llm_max_answer_tokens,
        fundamentals=fundamentals, news=news, posts=posts, timezone=settings.timezone,
        token_budget_person_day=settings.token_budget_person_day,
        token_budget_channel_day=settings.token_budget_channel_day, token_budget_run=settings.token_budget_run,
        money_budget_person_day=settings.money_budget_person_day,
        money_budget_channel_day=settings.money_budget_channel_day, model_prices=settings.model_prices,
        rules=RuleStore(engine, lambda: load(engine).admins, max_failures=settings.rule_max_failures),
        klines=lambda symbol: klines_for(symbol, settings, provider), **adapter)
