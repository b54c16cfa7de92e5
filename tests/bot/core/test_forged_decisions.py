"""Issue 38, item 1: a decision is part of the record. An insider with write access to the database inserts rows
into `decisions` (a trader's approval of a non-trader's order card, due at once); the background pass finds them
without their chained audit entry and refuses them: nothing is filled, the card stays open for a real decision, the
attempt is chained as evidence and the thread's approvers and admins are told. The two-row four-eyes variant too.
The real core, runner, graphs and queue on SQLite and PostgreSQL, against the fake Slack Web API."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect, select, text, update
from sqlalchemy.orm import Session

from bot.cards import Approve, Decision, Edit, Reject
from bot.core import Core
from bot.jobs import Message
from bot.slack.serve import slack_core
from bot.startup import build_context
from bot.stores.records import AuditEntry, DecisionRecord
from bot.stores.threads import thread_id_for
from graphs.checkpointer import open_checkpointer
from testkit.audit import audit_cli
from testkit.fakes.slack_faults import FaultySlack
from testkit.fakes.slack_server import TEAM, SlackServer
from testkit.slack import new_ts, run_background_pass
from testkit.wait import wait_until
from tools.audit.verify import Keys, verify
from tools.audit.witness import WitnessFile, current_heads
from tools.broker.mandate import parse_settings, set_mandate
from tools.broker.records import OrderEvent, PaperOrder
from tools.broker.sim_clock import set_session
from tools.broker.store import set_trading
from tools.settings import Settings
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base, utcnow

ALICE, TRADER, SECOND, ADMIN = "UALICE", "UTRADER", "UTRADER2", "UADMIN"
CHANNEL = "C1"


@dataclass
class Desk:
    core: Core
    fake: FaultySlack

    def order(self, text: str) -> tuple[str, str]:
        """A non-trader's order in a new thread, run as its job runs it: (thread id, the card's interrupt id)."""
        root = new_ts()
        self.core.run_text(Message(f"msg:{CHANNEL}:{root}", TEAM, CHANNEL, root, ALICE, text))
        thread_id = thread_id_for(TEAM, CHANNEL, root)
        (card,) = self.core.runner.pending(thread_id)
        return thread_id, card.id

    def forge(self, thread_id: str, interrupt_id: str, by: str) -> None:
        """What the insider writes: a trader's approval, due now, and no audit entry."""
        with Session(self.core.queue.engine) as session, session.begin():
            session.add(DecisionRecord(interrupt_id=interrupt_id, thread_id=thread_id, decision={"type": "approve"},
                                       decided_by=by, source="button", attempts=0, decided_at=utcnow(),
                                       next_attempt_at=utcnow() - timedelta(minutes=1)))

    def refused(self, interrupt_id: str) -> list[AuditEntry]:
        with Session(self.core.queue.engine) as session:
            return list(session.scalars(select(AuditEntry).where(AuditEntry.interrupt_id == interrupt_id,
                                                                 AuditEntry.action == "refused")))

    def events(self, thread_id: str) -> list[tuple[str, str | None]]:
        with Session(self.core.queue.engine) as session:
            rows = session.scalars(select(OrderEvent).where(OrderEvent.client_order_id.startswith(f"{thread_id}:"))
                                   .order_by(OrderEvent.id))
            return [(row.event, row.actor) for row in rows]

    def said(self, text: str) -> list[dict[str, Any]]:
        return [c.args for c in self.fake.of("chat.postMessage") if c.ok and text in str(c.args.get("text"))]

    def until(self, check: Callable[[], Any], what: str) -> Any:
        """Wait for `check`, running background passes meanwhile: a decision made while the refusal's job of the
        same card still ran is queued by the next pass (the queue takes one job per decision at a time)."""
        return wait_until(lambda: check() or (run_background_pass(self.core), check())[1], what)

    def approve(self, thread_id: str, interrupt_id: str, by: str) -> None:
        self.decide(thread_id, interrupt_id, by, Approve())

    def decide(self, thread_id: str, interrupt_id: str, by: str, decision: Decision) -> None:
        verdict = self.core.decider.decide(thread_id, interrupt_id, by, decision, "button")
        assert verdict.allowed, verdict.message
        self.core.decider.confirm(verdict, interrupt_id, by, decision)


@pytest.fixture
def desk(own_url: str, own_engine: Engine, tmp_path: Path) -> Iterator[Desk]:
    """The Slack core on a migrated database of this test's own (`own_engine`), with its queue's workers."""
    server = SlackServer(FaultySlack())
    with server, open_checkpointer(own_url) as saver:
        settings = Settings(_env_file=None, DATABASE_URL=own_url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                            SLACK_BOT_TOKEN="xoxb-test", SLACK_API_URL=server.url,
                            QUANTDESK_TRADERS=f"{TRADER},{SECOND}", QUANTDESK_ADMINS=ADMIN,
                            QUANTDESK_SECOND_APPROVAL_ABOVE="100000")
        core = slack_core(build_context(settings), saver)
        worker = core.queue.start_worker(core)
        yield Desk(core, server.fake)  # type: ignore[arg-type]
        worker.stop()


def test_a_decision_row_written_by_hand_is_refused_and_the_card_still_waits(desk: Desk) -> None:
    thread_id, card = desk.order("order 000001.SZ buy 100")
    desk.forge(thread_id, card, TRADER)
    run_background_pass(desk.core)  # what applied the forged row before: the due decision is queued
    (evidence,) = wait_until(lambda: desk.refused(card), "the forged decision refused")
    assert evidence.user_id == TRADER and evidence.detail["problem"] == "no audit entry records this decision"
    assert [p.id for p in desk.core.runner.pending(thread_id)] == [card]  # not resumed: the card is open
    assert ("approved", TRADER) not in desk.events(thread_id) and desk.core.decisions.get(card) is None
    (notice,) = wait_until(lambda: desk.said("is not in the audit record"), "the notice in the thread")
    shown = str(notice["blocks"])  # mentions in the message; the notification text names them plainly
    assert f"<@{ADMIN}>" in shown and f"in the name of <@{TRADER}>" in shown
    assert f"in the name of {TRADER}" in notice["text"] and "<@" not in notice["text"]
    reports, problems = verify(desk.core.queue.engine, Keys({}))
    assert problems == [] and all(r.problem is None for r in reports)  # the attempt is chained evidence

    desk.approve(thread_id, card, TRADER)  # a real decision on the same card still goes through
    desk.until(lambda: any(event == "filled" for event, _who in desk.events(thread_id)), "the real approval filled")
    assert ("approved", TRADER) in desk.events(thread_id)


def test_a_decision_row_edited_after_it_was_chained_is_refused(desk: Desk) -> None:
    """A trader's reject, rewritten in place into an approval before it is applied: its chained entry says reject."""
    thread_id, card = desk.order("order 000001.SZ buy 100")
    engine = desk.core.queue.engine
    with engine.begin() as connection:  # hold the queue off: the decision is accepted, not applied yet
        verdict = desk.core.decider.decide(thread_id, card, TRADER, Reject("no"), "button")
        assert verdict.allowed
        connection.execute(update(DecisionRecord).where(DecisionRecord.interrupt_id == card)
                           .values(decision={"type": "approve"}))
    desk.core.decider.apply_decision(card, thread_id)
    (evidence,) = desk.refused(card)
    assert evidence.detail["problem"] == ("its audit entry records another decision (who, what, when or where "
                                          "differ)")
    assert ("approved", TRADER) not in desk.events(thread_id)


def test_two_forged_approvals_do_not_make_four_eyes(desk: Desk) -> None:
    """Above QUANTDESK_SECOND_APPROVAL_ABOVE two traders must approve: one real approval, then a forged second."""
    thread_id, card = desk.order("order 600519.SH buy 100")  # 169,635.00 CNY
    desk.forge(thread_id, card, TRADER)
    run_background_pass(desk.core)
    wait_until(lambda: desk.refused(card), "the first forged approval refused")
    desk.approve(thread_id, card, TRADER)  # the first real approval: the card asks for a second trader
    second = desk.until(lambda: [p.id for p in desk.core.runner.pending(thread_id) if p.id != card],
                        "the second approval's card")[0]
    desk.forge(thread_id, second, SECOND)
    run_background_pass(desk.core)
    wait_until(lambda: desk.refused(second), "the forged second approval refused")
    assert [p.id for p in desk.core.runner.pending(thread_id)] == [second]
    assert [event for event, _who in desk.events(thread_id)].count("filled") == 0
    assert ("approved", SECOND) not in desk.events(thread_id)


def test_migration_0020_indexes_the_apply_look_up_as_the_models_do(own_url: str) -> None:
    """The apply finds a decision's audit entry by interrupt id and its chain entry by table and id: indexed by
    migration 0020 (up and down) exactly as the models declare (alembic sees no difference on either table)."""
    engine = make_engine(own_url)
    try:
        upgrade(engine)
        with engine.connect() as connection:
            context = MigrationContext.configure(connection, opts={"compare_type": True})
            differences = [str(d) for d in compare_metadata(context, Base.metadata)]
        assert not [d for d in differences if "audit_log" in d or "audit_chain" in d or "audit_heads" in d], differences
        assert {"ix_audit_log_interrupt_id"} <= {i["name"] for i in inspect(engine).get_indexes("audit_log")}
        downgrade(engine, "0019")
        assert "ix_audit_chain_source" not in {i["name"] for i in inspect(engine).get_indexes("audit_chain")}
        upgrade(engine, "0020")
        assert current_revision(engine) == "0020"
    finally:
        engine.dispose()


def test_an_untouched_session_verifies_and_each_state_table_edit_is_named(audit_keys: str, desk: Desk, own_url: str,
                                                                         tmp_path: Path) -> None:
    """A session of the desk (the roles seeded, an order proposed, edited, approved and filled, one approved by two
    traders, the switch off and on, a mandate set, the clock moved), witnessed: `audit verify --witness` exits 0
    naming each chain, its length and its newest witnessed head. Then each state table is edited with SQL behind
    the chain's back (the role tables too), and verify names the table, the row, the column, the stored and the
    replayed value."""
    thread_id, first_card = desk.order("order 000001.SZ buy 100")
    desk.decide(thread_id, first_card, TRADER, Edit("place_order", {"quantity": 200}))  # the trader's edit: a new card
    card = desk.until(lambda: [p.id for p in desk.core.runner.pending(thread_id) if p.id != first_card],
                      "the edited order's card")[0]
    desk.approve(thread_id, card, TRADER)
    desk.until(lambda: any(event == "filled" for event, _who in desk.events(thread_id)), "the approval filled")
    assert ("edited", TRADER) in desk.events(thread_id)
    four_eyes, first = desk.order("order 600519.SH buy 100")  # 169,635.00 CNY: two traders approve
    desk.approve(four_eyes, first, TRADER)
    second = desk.until(lambda: [p.id for p in desk.core.runner.pending(four_eyes) if p.id != first],
                        "the second approval's card")[0]
    desk.approve(four_eyes, second, SECOND)
    desk.until(lambda: any(event == "filled" for event, _who in desk.events(four_eyes)), "the four eyes filled")
    engine = desk.core.queue.engine
    with Session(engine) as session:
        order = session.scalars(select(PaperOrder).where(PaperOrder.ts_code == "000001.SZ")).one()
        account, cid = order.account, order.client_order_id
        both = session.scalars(select(PaperOrder.approved_by).where(PaperOrder.ts_code == "600519.SH")).one()
    assert TRADER in str(both) and SECOND in str(both)
    set_trading(engine, False, ADMIN, "lunch")
    set_trading(engine, True, ADMIN)
    assert set_mandate(engine, account, parse_settings(["max_orders=5"]), ADMIN).record() == [
        "at most 5 orders a day"]
    with Session(engine) as session:
        set_session(session, order.session_date, "20260305", "20260331", TRADER)
        session.commit()
    path = tmp_path / "witness.jsonl"
    WitnessFile(path).publish(current_heads(engine))
    clean = audit_cli(own_url, "verify", "--witness", str(path))
    assert clean.returncode == 0, clean.stdout
    lines = clean.stdout.splitlines()
    assert [line.split(":")[0] for line in lines] == ["global", "account"]
    assert all("entries intact, head signature valid" in line and "; newest witnessed head #" in line
               for line in lines)

    edits = [  # (the insider's SQL, its undo, what verify says)
        (f"UPDATE paper_orders SET quantity = 300 WHERE client_order_id = '{cid}'",
         f"UPDATE paper_orders SET quantity = 200 WHERE client_order_id = '{cid}'",
         f"paper_orders {cid} quantity: stored 300, replayed 200"),
        (f"UPDATE paper_orders SET approved_by = '{SECOND}' WHERE client_order_id = '{cid}'",
         f"UPDATE paper_orders SET approved_by = '{TRADER}' WHERE client_order_id = '{cid}'",
         f"paper_orders {cid} approved_by: stored '{SECOND}', replayed '{TRADER}'"),
        (f"UPDATE paper_orders SET status = 'open' WHERE client_order_id = '{cid}'",
         f"UPDATE paper_orders SET status = 'filled' WHERE client_order_id = '{cid}'",
         f"paper_orders {cid} status: stored 'open', replayed 'filled'"),
        ("UPDATE paper_fills SET price_fen = price_fen + 1 WHERE ts_code = '000001.SZ'",
         "UPDATE paper_fills SET price_fen = price_fen - 1 WHERE ts_code = '000001.SZ'",
         f"paper_fills of {cid} price_fen: stored"),
        ("UPDATE paper_positions SET quantity = 1000 WHERE ts_code = '000001.SZ'",
         "UPDATE paper_positions SET quantity = 200 WHERE ts_code = '000001.SZ'",
         f"paper_positions {account} 000001.SZ quantity: stored 1000, replayed 200"),
        ("UPDATE paper_accounts SET cash_fen = cash_fen + 100000000",
         "UPDATE paper_accounts SET cash_fen = cash_fen - 100000000", f"paper_accounts {account} cash_fen: stored"),
        ("UPDATE paper_mandates SET max_orders_per_day = 50", "UPDATE paper_mandates SET max_orders_per_day = 5",
         f"paper_mandates {account} lines: stored"),
        ("UPDATE trading_switch SET enabled = false", "UPDATE trading_switch SET enabled = true",
         "trading_switch 1 enabled: stored False, replayed True"),
        ("UPDATE simulated_clock SET session_date = '20260310'", "UPDATE simulated_clock SET session_date = '20260305'",
         "simulated_clock 1 session_date: stored '20260310', replayed '20260305'"),
        ("INSERT INTO role_grants (role, account, identity, granted_by, granted_at) "
         "VALUES ('trader', '', 'UMALLORY', 'UMALLORY', CURRENT_TIMESTAMP)",
         "DELETE FROM role_grants WHERE identity = 'UMALLORY'",
         "role_grants trader * UMALLORY (row): stored 'present', replayed None"),
        (f"DELETE FROM role_grants WHERE role = 'trader' AND identity = '{SECOND}'",
         f"INSERT INTO role_grants (role, account, identity, granted_by, granted_at) "
         f"VALUES ('trader', '', '{SECOND}', 'environment', CURRENT_TIMESTAMP)",
         f"role_grants trader * {SECOND} (row): stored None, replayed 'present'"),
        ("INSERT INTO console_logins (login, identity, mapped_by, mapped_at) "
         "VALUES ('mallory', 'UMALLORY', 'UMALLORY', CURRENT_TIMESTAMP)",
         "DELETE FROM console_logins WHERE login = 'mallory'",
         "console_logins mallory identity: stored 'UMALLORY', replayed None"),
    ]
    for edit, undo, said in edits:
        with engine.begin() as connection:
            connection.execute(text(edit))
        result = audit_cli(own_url, "verify")
        assert result.returncode == 1, edit
        stated = [line for line in result.stdout.splitlines() if line.startswith("STATE: ")]
        assert len(stated) == 1, (edit, result.stdout)
        line = stated[0]
        assert line.startswith(f"STATE: {said}"), (edit, line)
        with engine.begin() as connection:
            connection.execute(text(undo))
    assert audit_cli(own_url, "verify").returncode == 0
