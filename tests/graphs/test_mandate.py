"""A mandate per account (issue 29, item 4): set by the account's admins (each change an audit entry), shown on
every card, enforced in the broker's checks; an order outside it is never proposed, by a rule or by hand (no card),
and the refusal names the mandate line it breaks. Sample data (a new simulated clock: 20200727)."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine

from graphs.workflow import CommandError
from testkit.graph_thread import GraphThread
from testkit.mandate import ADMIN, OWNER, TRADER, context, mandate
from testkit.paper import interrupt_value, order_events, paper_orders
from tools.audit.verify import Keys, verify
from tools.data.local import SampleProvider
from tools.sandbox import Sandbox


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


@pytest.fixture
def account() -> str:
    return f"md-{uuid.uuid4().hex[:8]}"


def test_admins_set_the_mandate_and_each_change_is_audited(engine: Engine, sandbox: Sandbox,
                                                           provider: SampleProvider, account: str) -> None:
    ctx = context(engine, sandbox, provider)
    with pytest.raises(CommandError, match=f"Only admins of account {account} .* can change its mandate"):
        mandate(ctx, TRADER, account, "set", "block=600519.SH")
    shown = mandate(ctx, ADMIN, account, "set", "block=600519.SH,star,ST", "max_orders=1", "max_exposure=500000")
    assert shown.lines == ["block 600519.SH, star, ST", "at most 1 orders a day",
                                       "gross exposure at most 500,000.00 CNY"]
    with pytest.raises(CommandError, match="'gem' is not a code"):
        mandate(ctx, ADMIN, account, "set", "allow=gem")
    assert mandate(ctx, ADMIN, account, "clear").summary == f"Account {account} has no mandate now (cleared by UADMIN)."
    assert [e for e in order_events(engine, account) if e[0] == "mandate set"] == [("mandate set", ADMIN)] * 2
    reports, strays = verify(engine, Keys({}), account)
    assert [r.problem for r in reports] == [None] and strays == []


def test_a_hand_typed_order_outside_the_mandate_is_refused_naming_its_line(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, account: str) -> None:
    ctx = context(engine, sandbox, provider)
    mandate(ctx, ADMIN, account, "set", "block=600519.SH", "max_orders=1")
    run = GraphThread(db_url, ctx, requester=ADMIN)
    out = run.say(f"order 600519.SH buy 100 account={account}")
    assert "__interrupt__" not in out
    assert out["result"]["message"] == (f"The order is outside account {account}'s mandate and is not proposed: "
                                        "600519.SH is blocked (mandate: block 600519.SH).")
    # within it: the card shows the mandate
    card = interrupt_value(run.say(f"order 000001.SZ buy 100 account={account}"))
    assert card["args"]["mandate"] == "block 600519.SH; at most 1 orders a day"
    assert "PASS mandate: within the account's mandate" in card["description"]


def test_the_daily_order_cap_refuses_the_next_order(db_url: str, engine: Engine, sandbox: Sandbox,
                                                    provider: SampleProvider, account: str) -> None:
    ctx = context(engine, sandbox, provider)
    mandate(ctx, ADMIN, account, "set", "max_orders=1")
    run = GraphThread(db_url, ctx, requester=ADMIN)
    first = run.say(f"order 000001.SZ buy 100 account={account}")
    assert run.decide(first, {"type": "approve"}, user=TRADER)["result"]["status"] == "filled"
    second = run.say(f"order 000001.SZ buy 100 account={account}")
    assert "__interrupt__" not in second
    assert second["result"]["message"].endswith("1 orders already this session (mandate: at most 1 orders a day).")
    assert len(paper_orders(engine, account)) == 1


def test_a_rule_on_a_blocked_symbol_proposes_nothing(db_url: str, engine: Engine, sandbox: Sandbox,
                                                     provider: SampleProvider, account: str) -> None:
    ctx = context(engine, sandbox, provider)
    mandate(ctx, ADMIN, account, "set", "block=main")  # 600519.SH trades on the main board
    rule = ctx.rules.add(OWNER, "c", "600519.SH", "buy when close > 0; sell when close < 0",  # type: ignore[union-attr]
                         source="language", size=100, account=account)
    out = GraphThread(db_url, ctx, requester=OWNER).say(f"rule run {rule.id}")
    assert "__interrupt__" not in out
    assert "600519.SH is blocked (mandate: block main)" in str(out["result"])
    assert paper_orders(engine, account) == []
