"""Run-time dependencies of every workflow graph, handed in per run (never checkpointed)."""

from __future__ import annotations

from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel
from langchain_core.runnables import RunnableConfig
from sqlalchemy import Engine

from tools.artifacts import ArtifactStore
from tools.data.provider import MarketDataProvider
from tools.sandbox import Sandbox
from tools.workspace import Workspace


@dataclass
class WorkflowContext:
    provider: MarketDataProvider
    engine: Engine
    sandbox: Sandbox
    artifacts: ArtifactStore  # charts and files of runs, in the database (no host paths)
    llm: BaseChatModel | None = None
    light_llm: BaseChatModel | None = None
    fee_rate: float = 0.0005
    long_only: bool = True


def thread_id(config: RunnableConfig) -> str:
    return str(config["configurable"]["thread_id"])


def workspace(context: WorkflowContext, config: RunnableConfig) -> Workspace:
    return Workspace(context.engine, thread_id(config))


def decider(config: RunnableConfig) -> str | None:
    """Who made the decision this run resumes with: the adapter puts it in `configurable.user`
    (Slack user, console user, or the Studio/SDK caller), never inside the decision itself."""
    return config.get("configurable", {}).get("user")
