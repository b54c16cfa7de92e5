"""The one order card slot per (account, code, proposer): claimed, refused, re-taken by its holder, given back
only by its holder, lapsing by itself; contenders racing on separate connections (SQLite and PostgreSQL) have
exactly one winner; the order approval gives the claim back however it ends; migration 0012 carries a rule's claim
in force over from saved_rules and back."""

from __future__ import annotations

import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, TypedDict

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from langgraph.graph import START, StateGraph
from langgraph.types import Command
from sqlalchemy import Engine, inspect, text

from graphs.checkpointer import open_checkpointer
from graphs.context import WorkflowContext
from graphs.order.graph import build_order_approval
from tools.broker.checks import RiskLimits
from tools.broker.fees import DEFAULT_RATES
from tools.broker.paper import PaperBroker, PaperConfig
from tools.broker.proposal_claims import (
    APPLY_GRACE,
    ProposalClaim,
    claim_proposal,
    fit_claims_to_card,
    live_claims,
    release_proposals,
)
from tools.data.local import SampleProvider
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base

T0 = datetime(2024, 1, 2, 1, 0, tzinfo=UTC)
TTL = timedelta(minutes=120)
CODE = "600519.SH"
TRADER = "UTRADER"
CONFIG = PaperConfig(DEFAULT_RATES, RiskLimits(Decimal("500000"), Decimal("0.5"), Decimal("0.05")),
                     Decimal("1000000"), "open", 7, TTL)


def _account() -> str:
    return f"acct-{uuid.uuid4().hex[:10]}"


def test_a_slot_is_claimed_refused_retaken_released_and_lapses(engine: Engine) -> None:
    account = _account()
    first = claim_proposal(engine, account, CODE, "rule:7", "rule7-a", TTL, T0)
    assert first == ProposalClaim(account, CODE, "rule:7", "rule7-a", T0 + TTL + APPLY_GRACE)
    later = T0 + timedelta(seconds=3)
    assert claim_proposal(engine, account, CODE, "rule:7", "rule7-b", TTL, later) == first  # refused: held
    # other slots are free: another proposer on the same stock, another stock, another account
    assert claim_proposal(engine, account, CODE, "desk", "thread-x", TTL, later).holder == "thread-x"
    assert claim_proposal(engine, account, "000001.SZ", "rule:7", "rule7-b", TTL, later).holder == "rule7-b"
    assert claim_proposal(engine, _account(), CODE, "rule:7", "rule7-b", TTL, later).holder == "rule7-b"
    # the holder's node re-runs on resume: it takes its own claim again, from then
    retaken = claim_proposal(engine, account, CODE, "rule:7", "rule7-a", TTL, later)
    assert (retaken.holder, retaken.expires_at) == ("rule7-a", later + TTL + APPLY_GRACE)
    assert release_proposals(engine, "rule7-zzz") == 0  # only the holder gives it back
    assert [c.holder for c in live_claims(engine, "rule:7", later) if c.account == account] == ["rule7-b", "rule7-a"]
    assert release_proposals(engine, "rule7-a") == 1
    assert claim_proposal(engine, account, CODE, "rule:7", "rule7-c", TTL, later).holder == "rule7-c"
    lapse = later + TTL + APPLY_GRACE
    assert claim_proposal(engine, account, CODE, "rule:7", "rule7-d", TTL, lapse - timedelta(microseconds=1)
                          ).holder == "rule7-c"
    assert "rule7-c" not in {c.holder for c in live_claims(engine, "rule:7", lapse)}  # abandoned: lapsed
    taken = claim_proposal(engine, account, CODE, "rule:7", "rule7-d", TTL, lapse)
    assert (taken.holder, taken.expires_at) == ("rule7-d", lapse + TTL + APPLY_GRACE)
    assert release_proposals(engine, "rule7-c") == 0  # its lapsed claim was taken over: not its to give back


def test_a_claim_is_cut_to_its_card_expiry_and_never_lengthened(engine: Engine) -> None:
    """A card that expires at 09:15 (a pre-open card made at 09:00) frees its slot at 09:25, not two hours on."""
    account = _account()
    claim_proposal(engine, account, CODE, "desk", "thread-card", TTL, T0)
    card_expires = T0 + timedelta(minutes=15)
    fit_claims_to_card(engine, "thread-card", card_expires)
    (claim,) = [c for c in live_claims(engine, "desk", T0) if c.account == account]
    assert claim.expires_at == card_expires + APPLY_GRACE
    fit_claims_to_card(engine, "thread-card", T0 + 2 * TTL)  # a later card expiry never lengthens the claim
    (claim,) = [c for c in live_claims(engine, "desk", T0) if c.account == account]
    assert claim.expires_at == card_expires + APPLY_GRACE
    after = card_expires + APPLY_GRACE
    assert claim_proposal(engine, account, CODE, "desk", "thread-next", TTL, after).holder == "thread-next"


@pytest.mark.parametrize("rounds", [6])
def test_racing_claims_on_separate_connections_have_one_winner(db_url: str, engine: Engine, rounds: int) -> None:
    """Contenders on connections of their own claim one slot at the same moment, round after round: each round
    exactly one wins, and every contender sees that winner."""
    contenders = 6
    engines = [make_engine(db_url) for _ in range(contenders)]
    barrier = threading.Barrier(contenders)
    account = _account()

    def claim(n: int, code: str) -> str:
        barrier.wait(timeout=60)
        return claim_proposal(engines[n], account, code, "desk", f"thread-{n}", TTL, T0).holder

    try:
        with ThreadPoolExecutor(contenders) as pool:
            for round_ in range(rounds):
                code = f"60{round_:04d}.SH"
                seen = list(pool.map(claim, range(contenders), [code] * contenders))
                assert len(set(seen)) == 1 and seen[0] in {f"thread-{n}" for n in range(contenders)}
                assert [c.holder for c in live_claims(engine, "desk", T0) if c.ts_code == code] == [seen[0]]
    finally:
        for each in engines:
            each.dispose()


def test_models_and_migrations_agree(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                               "compare_server_default": True})
        differences = compare_metadata(context, Base.metadata)
    assert [d for d in differences if "proposal_claims" in str(d) or "saved_rules" in str(d)] == []


def test_migration_0012_carries_a_rules_claim_over_and_back(fresh_pg_url: str, tmp_path: Any) -> None:
    for url in (f"sqlite:///{tmp_path / 'm.db'}", fresh_pg_url):
        engine = make_engine(url)
        upgrade(engine, "0011")
        store = RuleStore(engine, frozenset(), clock=lambda: T0)
        own, channel = _rule_at_0011(engine, "C1", CODE, "mine"), _rule_at_0011(engine, "C2", "000001.SZ", None)
        store.log_step(own, CODE, f"rule{own}-mabc", 1, "tool_call", {"type": "tool_call"}, {"bars": 1})
        with engine.begin() as connection:  # 0010's columns, as its claim_proposal wrote them
            for rule, execution in ((own, f"rule{own}-mabc"), (channel, f"rule{channel}-mdef")):
                connection.execute(text("UPDATE saved_rules SET proposal_execution = :e, proposal_expires_at = :x "
                                        "WHERE id = :i"), {"e": execution, "x": _stored(engine, T0 + TTL),
                                                            "i": rule})
        upgrade(engine)
        assert {(c.account, c.ts_code, c.holder, c.expires_at) for c in live_claims(engine, f"rule:{own}", T0)} \
            == {("mine", CODE, f"rule{own}-mabc", T0 + TTL)}
        assert [(c.account, c.holder) for c in live_claims(engine, f"rule:{channel}", T0)] == [
            ("C2", f"rule{channel}-mdef")]  # no account of its own: its channel's
        assert not {"proposal_execution", "proposal_expires_at"} & {
            c["name"] for c in inspect(engine).get_columns("saved_rules")}
        assert [s.step for s in store.steps(own)] == [1]  # SQLite did not rebuild (and cascade) the rules
        release_proposals(engine, f"rule{channel}-mdef")
        claim_proposal(engine, "C1", CODE, "desk", "thread-d", TTL, T0)
        downgrade(engine, "0011")
        assert current_revision(engine) == "0011"
        assert "proposal_claims" not in inspect(engine).get_table_names()
        with engine.connect() as connection:
            rows = connection.execute(text("SELECT id, proposal_execution FROM saved_rules ORDER BY id")).all()
        assert [tuple(r) for r in rows] == [(own, f"rule{own}-mabc"), (channel, None)]
        engine.dispose()


def _rule_at_0011(engine: Engine, channel: str, code: str, account: str | None) -> int:
    """A saved rule as the tables of revision 0011 hold it (the model has columns added since)."""
    with engine.begin() as connection:
        return connection.execute(text(
            "INSERT INTO saved_rules (symbol, source, requirements, owner, channel, runtime_status, timezone, enabled, "
            "threshold, account, consecutive_failures, created_at, updated_at) VALUES (:code, 'llm', 'buy when close "
            "> ma(30)', 'UOWNER', :channel, '{}', 'Asia/Shanghai', :on, 0.6, :account, 0, :at, :at) RETURNING id"),
            {"code": code, "channel": channel, "account": account, "on": True, "at": _stored(engine, T0)}).scalar_one()


class _Proposer(TypedDict, total=False):
    order_intent: dict[str, Any]
    order_outcome: dict[str, Any]


def _stored(engine: Engine, moment: datetime) -> Any:
    """A time as SQLAlchemy stores a DateTime column (SQLite: naive UTC text)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f") if engine.dialect.name == "sqlite" else moment


def _approve(db_url: str, ctx: WorkflowContext, thread: str, value: Any, **configurable: str) -> dict[str, Any]:
    """One turn of a proposer around the order approval subgraph (as the desk and the rules use it: its intent
    names the claim's holder), on a real checkpointer."""
    graph = StateGraph(_Proposer, context_schema=WorkflowContext)
    graph.add_node("order_approval", build_order_approval())
    graph.add_edge(START, "order_approval")
    with open_checkpointer(db_url) as saver:
        return graph.compile(checkpointer=saver).invoke(
            value, {"configurable": {"thread_id": thread, **configurable}}, context=ctx)


@pytest.mark.parametrize("ending", ["approve", "reject", "expired", "refused"])
def test_the_approval_gives_the_claim_back_however_it_ends(db_url: str, engine: Engine, sandbox: Sandbox,
                                                            ending: str) -> None:
    provider = SampleProvider()
    ctx = WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          paper=CONFIG, traders=frozenset({TRADER}),
                          admins=frozenset({"UOWNER"}),  # the proposer names the account: a role on it
                          broker=lambda name, by: PaperBroker(engine, provider, name, CONFIG, opened_by=by))
    account, holder = _account(), f"holder-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC)
    assert claim_proposal(engine, account, CODE, "desk", holder, TTL, now).holder == holder
    thread = f"t-{uuid.uuid4().hex[:10]}"
    quantity = 0 if ending == "refused" else 100  # the broker cannot even preview no shares: no card
    intent = {"ts_code": CODE, "side": "buy", "quantity": quantity, "price_type": "market", "limit_price": None,
              "account": account, "proposed_by": "UOWNER", "tag": "desk", "reason": "test", "claim": holder}
    out = _approve(db_url, ctx, thread, {"order_intent": intent}, user="UOWNER")
    if ending != "refused":
        (card,) = out["__interrupt__"]
        assert [c.holder for c in live_claims(engine, "desk", now) if c.account == account] == [holder]  # shown
        decision = {"type": "reject", "message": "no"} if ending == "reject" else {"type": "approve"}
        when = {"decided_at": (datetime.fromisoformat(card.value["expires_at"]) + timedelta(seconds=1)).isoformat()
                } if ending == "expired" else {}
        out = _approve(db_url, ctx, thread, Command(resume={card.id: decision}), user=TRADER, **when)
    assert out["order_outcome"]["status"] == {"approve": "filled", "reject": "rejected", "expired": "expired",
                                              "refused": "refused"}[ending]
    assert [c for c in live_claims(engine, "desk", now) if c.account == account] == []
