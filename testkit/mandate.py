"""The mandate tests' desk: a trader, an admin and an owner (an admin too) on paper accounts, and the mandate
command as one of them types it."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.order.mandate_command import mandate_command
from graphs.workflow import CommandCall
from testkit.paper import paper_context
from tools.data.provider import MarketDataProvider
from tools.sandbox import Sandbox

TRADER, ADMIN, OWNER = "UTRADER", "UADMIN", "UOWNER"


def context(engine: Engine, sandbox: Sandbox, provider: MarketDataProvider) -> WorkflowContext:
    return paper_context(engine, sandbox, provider, traders={TRADER}, admins={ADMIN, OWNER}, rules=True)


def mandate(ctx: WorkflowContext, user: str, *args: str) -> Any:
    return mandate_command(CommandCall(ctx, list(args), user, "c"))
