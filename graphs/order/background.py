"""The accounts' background work: the settle job brings every account's open orders up to date through its broker
(the paper broker fills those whose session's bar exists now; a live broker takes in what its server reported)."""

from __future__ import annotations

from graphs.background import BackgroundCall, Notice
from graphs.order.deps import OrderDeps, accounts
from tools.broker.clock import SHANGHAI


def settlement_job(ctx: OrderDeps, call: BackgroundCall) -> list[Notice]:
    """Every account's due open orders, filled (or said why not): one notice per change of an order (its status,
    and each partial fill a live broker reports) into its thread, in its language."""
    if ctx.paper is None or ctx.broker is None:
        return []
    changed = accounts(ctx).settle(call.now.astimezone(SHANGHAI))
    return [Notice(order.thread_id, f"order:{order.id}:{order.status}:{len(order.fills)}", order.summary)
            for order in changed if order.thread_id]
