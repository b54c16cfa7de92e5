"""The kill switch reaches everything (issue 29, item 5): `trading off REASON` records who and why, expires every
order card made before it (also once trading is on again), and rules propose nothing until `trading on`. Sample
data (a new simulated clock: 20200727). The switch is one per database: each test has its own."""

from __future__ import annotations

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from graphs.order.commands import trading_command
from graphs.workflow import CommandCall
from testkit.graph_thread import GraphThread
from testkit.mandate import ADMIN, OWNER, TRADER, context
from testkit.paper import interrupt_value, paper_orders
from tools.broker.records import OrderEvent
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox


def switch(ctx: WorkflowContext, user: str, *words: str) -> str:
    return trading_command(CommandCall(ctx, list(words), user, "c")).summary


def test_switching_off_expires_open_cards_with_who_and_why(own_url: str, own_engine: Engine, sandbox: Sandbox,
                                                           provider: SampleProvider) -> None:  # noqa: F811
    ctx = context(own_engine, sandbox, provider)
    run = GraphThread(own_url, ctx, requester=ADMIN)
    card = run.say("order 000001.SZ buy 100 account=ks")
    assert interrupt_value(card)["allowed"][0] == "approve"
    assert switch(ctx, TRADER, "off", "exchange", "outage").startswith(
        "Trading is OFF: nothing is submitted or filled, every open order card has expired")
    assert switch(ctx, ADMIN, "on", "outage over").startswith("Trading is on")  # an admin may switch too
    assert switch(ctx, ADMIN).startswith(f"Trading is on (set by {ADMIN} at ")
    assert switch(ctx, ADMIN).endswith(": outage over).")
    done = run.decide(card, {"type": "approve"}, user=TRADER)
    assert done["result"]["status"] == "expired"
    assert done["result"]["message"].startswith(f"Trading was switched off by {TRADER} at ")
    assert "(exchange outage) after this card was made: it expired before UTRADER's approve" in \
        done["result"]["message"]
    assert paper_orders(own_engine, "ks") == []
    with Session(own_engine) as session:
        rows = session.scalars(select(OrderEvent).where(OrderEvent.event.in_(("trading off", "trading on")))
                               .order_by(OrderEvent.id)).all()
    assert [(r.event, r.actor, r.detail) for r in rows] == [("trading off", TRADER, {"reason": "exchange outage"}),
                                                             ("trading on", ADMIN, {"reason": "outage over"})]
    fresh = run.say("order 000001.SZ buy 100 account=ks")  # a card made after it is decided as usual
    assert run.decide(fresh, {"type": "approve"}, user=TRADER)["result"]["status"] == "filled"


def test_rules_propose_nothing_until_trading_is_on_again(own_url: str, own_engine: Engine, sandbox: Sandbox,
                                                         provider: SampleProvider) -> None:  # noqa: F811
    ctx = context(own_engine, sandbox, provider)
    rule = ctx.rules.add(OWNER, "c", "600519.SH", "buy when close > 0; sell when close < 0",  # type: ignore[union-attr]
                         source="language", size=100, account="ks-rule")
    switch(ctx, TRADER, "off", "risk review")
    off = GraphThread(own_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert "__interrupt__" not in off
    assert ("trading is switched off (risk review): rules propose nothing until a trader sends `trading on`"
            in str(off["result"]))
    switch(ctx, TRADER, "on")
    on = GraphThread(own_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert interrupt_value(on)["args"]["order"].startswith("BUY 100 600519.SH")
