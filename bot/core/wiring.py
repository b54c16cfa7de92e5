"""Build the core for a surface: the runner, its job queue and its permission policy, from the app's context."""

from __future__ import annotations

from langgraph.checkpoint.base import BaseCheckpointSaver

from bot.core.core import Core
from bot.core.policy import Policy
from bot.core.surface import Surface
from bot.jobs import JobQueue, make_job_queue
from bot.runner import Runner
from bot.startup import AppServices
from graphs.context import all_traders, traders_of
from graphs.registry import import_all


def build_core(ctx: AppServices, checkpointer: BaseCheckpointSaver, surface: Surface, scope: str,
               queue: JobQueue | None = None) -> Core:
    """The core of one surface; `queue` defaults to the database's (procrastinate on PostgreSQL, in-process on
    SQLite)."""
    settings = ctx.settings
    import_all()
    runner = Runner(ctx, checkpointer)
    policy = Policy(settings.approvers, lambda account: traders_of(runner.context, account),
                    lambda: all_traders(runner.context))
    return Core(runner, surface, queue or make_job_queue(ctx.engine, settings, scope), policy, scope,
                claim_seconds=settings.decision_claim_seconds, language=settings.language)
