"""The paper account's background work: the settle job fills open orders whose session's bar exists now."""

from __future__ import annotations

from graphs.background import BackgroundCall, Notice
from graphs.order.deps import OrderDeps
from tools.broker.clock import SHANGHAI
from tools.broker.paper import settle_all


def settlement_job(ctx: OrderDeps, call: BackgroundCall) -> list[Notice]:
    """Every account's due open orders, filled (or said why not): one notice per order into its
    thread, in its language."""
    if ctx.paper is None:
        return []
    changed = settle_all(ctx.engine, ctx.provider, ctx.paper, lambda: call.now.astimezone(SHANGHAI))
    return [Notice(order.thread_id, f"order:{order.id}:{order.status}", order.summary)
            for order in changed if order.thread_id]
