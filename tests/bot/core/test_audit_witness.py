"""Witnessed heads and completeness (issue 38, item 3): the background service publishes every new signed head to
the witness file and the audit channel (threaded per day, one keyed post per head); `quantdesk audit verify
--witness FILE|slack` catches a rollback to an older signed head and a rewrite re-signed with the signing key,
naming the chain and the seqs; a chain deleted whole is named from paper_accounts, an order without a chained event
from paper_orders. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import json
import os
import stat
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from bot.core.background import BackgroundService
from bot.core.witness import HeadWitness
from bot.slack.serve import slack_core
from bot.startup import StartupError, build_context
from graphs.checkpointer import open_checkpointer
from testkit.audit import audit_cli, desk_day, event_id, relink
from testkit.fakes.slack_server import SlackServer
from tools.audit.keys import signer
from tools.audit.records import ChainHead
from tools.audit.signing import sign
from tools.audit.witness import WitnessFile, current_heads
from tools.broker.records import OrderEvent, PaperOrder
from tools.broker.sim_clock import set_session
from tools.broker.store import ensure_account, log_event
from tools.settings import Settings

CHANNEL = "CAUDIT"


@pytest.fixture
def slack() -> Iterator[SlackServer]:
    with SlackServer() as server:
        yield server


def witness(engine: Engine, path: Path) -> None:
    """What a background pass does for the file witness."""
    WitnessFile(path).publish(current_heads(engine))


def slack_env(slack: SlackServer) -> dict[str, str]:
    return {"SLACK_BOT_TOKEN": "xoxb-test", "SLACK_API_URL": slack.url, "QUANTDESK_AUDIT_CHANNEL": CHANNEL}


def roll_back(engine: Engine, chain: str, to: ChainHead) -> None:
    """The insider's rollback: the entries after `to` deleted with their rows, the older signed head put back."""
    with engine.begin() as connection:
        ids = connection.execute(text("SELECT source_id FROM audit_chain WHERE chain = :c AND seq > :s"),
                                 {"c": chain, "s": to.seq}).scalars().all()
        connection.execute(text("DELETE FROM audit_chain WHERE chain = :c AND seq > :s"), {"c": chain, "s": to.seq})
        for row in ids:
            connection.execute(text("DELETE FROM order_events WHERE id = :id"), {"id": row})
        connection.execute(text("UPDATE audit_heads SET seq = :s, hash = :h, signature = :g WHERE chain = :c"),
                           {"s": to.seq, "h": to.hash, "g": to.signature, "c": chain})


def head_of(engine: Engine, chain: str) -> ChainHead:
    with Session(engine) as session:
        head = session.get(ChainHead, chain)
        assert head is not None
        session.expunge(head)
        return head


def test_a_rollback_is_caught_by_the_file_and_the_slack_witness(own_engine: Engine, own_url: str, audit_keys: str,
                                                                 slack: SlackServer, tmp_path: Path) -> None:
    """The background service witnesses each head (file and channel); the insider deletes the newest entries and
    rows and puts the older, validly signed head back: the chain walks clean, both witnesses name the lost seqs."""
    desk_day(own_engine)
    path = tmp_path / "witness.jsonl"
    settings = Settings(_env_file=None, DATABASE_URL=own_url, QUANTDESK_DATA_DIR=str(tmp_path),
                        QUANTDESK_DATA_PROVIDER="sample", OPENAI_API_KEY=None, OPENAI_BASE_URL=None,
                        SLACK_SIGNING_SECRET="secret", **slack_env(slack))
    older = head_of(own_engine, "account:g1")
    with open_checkpointer(own_url) as saver:
        core = slack_core(build_context(settings), saver)
        service = BackgroundService(core, jobs={}, witness=HeadWitness(core, path, CHANNEL))
        service.run_once()
        log_event(own_engine, "t1:2", "g1", "proposed", "U_RULE", {"code": "600000.SH", "quantity": 300})
        log_event(own_engine, "t1:2", "g1", "approved", "U_ANNA", {})
        service.run_once()
        service.run_once()  # nothing new: nothing published twice
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [(h["chain"], h["seq"]) for h in lines] == [("account:g1", 3), ("account:g2", 1), ("global", 3),
                                                       ("account:g1", 5)]
    assert all(h["key_id"] == audit_keys and h["signature"].startswith(f"ed25519:{audit_keys}:") for h in lines)
    roots = slack.fake.history(CHANNEL)
    assert len(roots) == 1 and "Audit chain heads witnessed on" in roots[0]["text"]  # one thread for the day
    posted = [m["text"] for m in slack.fake.replies(CHANNEL, roots[0]["ts"]) if m["ts"] != roots[0]["ts"]]
    assert [t.splitlines()[0] for t in posted] == ["Audit head account:g1 #3", "Audit head account:g2 #1",
                                                   "Audit head global #3", "Audit head account:g1 #5"]

    roll_back(own_engine, "account:g1", older)
    alone = audit_cli(own_url, "verify", "--account", "g1")
    assert alone.returncode == 0, alone.stdout  # on its own, the cut-back chain walks clean
    expected = ("account:g1: the database's head is #3, behind the witnessed head #5: entries #4 to #5 are missing "
                "(deleted and an older head put back)")
    by_file = audit_cli(own_url, "verify", "--witness", str(path))
    assert by_file.returncode == 1
    assert f"WITNESS ({path}): {expected}" in by_file.stdout.splitlines()
    by_slack = audit_cli(own_url, "verify", "--witness", "slack", **slack_env(slack))
    assert by_slack.returncode == 1, by_slack.stdout + by_slack.stderr
    assert f"WITNESS (slack): {expected}" in by_slack.stdout.splitlines()
    assert "global: 3 entries intact" in by_slack.stdout  # the other chains match their witness
    assert not [line for line in by_slack.stdout.splitlines() if line.startswith("WITNESS") and "g1" not in line]


def test_a_rewrite_re_signed_with_the_signing_key_is_caught_by_the_witness(own_engine: Engine, own_url: str,
                                                                          audit_keys: str, tmp_path: Path) -> None:
    """Whoever holds the signing key rewrites an approval and re-signs the head: the signature checks, the
    witnessed head does not match."""
    desk_day(own_engine)
    path = tmp_path / "witness.jsonl"
    witness(own_engine, path)
    approved = event_id(own_engine, "g1", "approved")
    with Session(own_engine) as session:
        row = session.get(OrderEvent, approved)
        assert row is not None
        row.actor = "U_MALLORY"
        session.flush()
        prev = relink(session, "account:g1")
        head = session.get(ChainHead, "account:g1")
        key = signer()
        assert head is not None and key is not None
        head.hash, head.signature = prev, sign(key, "account:g1", head.seq, prev)
        session.commit()
    alone = audit_cli(own_url, "verify", "--account", "g1")
    assert alone.returncode == 0  # the key holder's rewrite signs as valid: only a witness tells
    caught = audit_cli(own_url, "verify", "--account", "g1", "--witness", str(path))
    assert caught.returncode == 1
    assert caught.stdout.splitlines()[-1] == (
        f"WITNESS ({path}): account:g1: entry #3 is not the one witnessed (hash differs): the chain was rewritten "
        "from entry #3 or before, even if its head is validly signed")


def test_an_untouched_trail_verifies_against_its_witness_naming_the_newest_witnessed_heads(
        own_engine: Engine, own_url: str, audit_keys: str, tmp_path: Path) -> None:
    desk_day(own_engine)
    path = tmp_path / "witness.jsonl"
    witness(own_engine, path)
    WitnessFile(path).publish(current_heads(own_engine))  # a second process sharing the file adds nothing
    assert len(path.read_text(encoding="utf-8").splitlines()) == 3
    result = audit_cli(own_url, "verify", "--witness", str(path))
    assert result.returncode == 0, result.stdout
    shown = [line.split("; newest witnessed head ")[1].split(" at ")[0] for line in result.stdout.splitlines()]
    assert shown == ["#3", "#3", "#1"]
    assert result.stdout.splitlines()[0].startswith(
        f"global: 3 entries intact, head signature valid (key {audit_keys}); newest witnessed head #3 at 20")
    log_event(own_engine, "t1:2", "g1", "proposed", "U_RULE", {})  # written after the witness's last pass
    ahead = audit_cli(own_url, "verify", "--witness", str(path))
    assert ahead.returncode == 1
    assert ahead.stdout.splitlines()[-1].startswith(
        f"WITNESS ({path}): account:g1: the database's head is #4, ahead of the witnessed head #3: entries #4 are "
        "not witnessed")


def test_a_chain_deleted_whole_and_an_order_without_events_are_named(own_engine: Engine, own_url: str, audit_keys: str,
                                                                     tmp_path: Path) -> None:
    ensure_account(own_engine, "g3", Decimal("1000000"), "U_ADMIN")  # its "account opened" event is chained
    log_event(own_engine, "t3:1", "g3", "proposed", "U_RULE", {})
    path = tmp_path / "witness.jsonl"
    witness(own_engine, path)
    with own_engine.begin() as connection:  # the insider removes every trace of g3's chain
        connection.execute(text("DELETE FROM audit_chain WHERE chain = 'account:g3'"))
        connection.execute(text("DELETE FROM audit_heads WHERE chain = 'account:g3'"))
        connection.execute(text("DELETE FROM order_events WHERE account = 'g3'"))
    with Session(own_engine) as session:  # and an order nobody proposed in the trail
        session.add(PaperOrder(client_order_id="t9:9", account="g3", ts_code="600000.SH", side="buy", quantity=100,
                               price_type="market", session_date="20260302", fill_at="open", status="open"))
        session.commit()
    result = audit_cli(own_url, "verify", "--witness", str(path))
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "MISSING: account g3 is in paper_accounts but has no audit chain: its chain was deleted, or the account was "
        "created outside the audit trail",
        "MISSING: order t9:9 of account g3 is in paper_orders but no chained event records it: its events were "
        "deleted, or it was written outside the audit trail",
        "STATE: paper_accounts g3 cash_fen: stored 100000000, replayed 0 (the table was changed outside the audit "
        "trail)",
        "STATE: paper_orders t9:9 (row): stored 'present', replayed None (the table was changed outside the audit "
        "trail)",
        f"WITNESS ({path}): account:g3: the database's head is #0, behind the witnessed head #2: entries #1 to #2 "
        "are missing (deleted and an older head put back)",
        "no audit entries"]


def test_the_global_chain_is_exported_like_an_account_chain(own_engine: Engine, own_url: str, audit_keys: str,
                                                            tmp_path: Path) -> None:
    desk_day(own_engine)
    today = f"{datetime.now(ZoneInfo('Asia/Shanghai')).date():%Y-%m-%d}"
    out = tmp_path / "global.csv"
    result = audit_cli(own_url, "export", "--global", "--from", today, "--to", today, "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = out.read_text(encoding="utf-8").splitlines()
    assert len(rows) == 1 + 3 + 1 and "trading off" in rows[1] and rows[-1].startswith("global,3,")
    assert audit_cli(own_url, "verify", "--head", str(out)).stdout.splitlines()[-1] == (
        f"global: holds the recorded head #3 of {out}")


def test_keygen_writes_a_private_key_only_its_owner_reads_and_prints_its_id(tmp_path: Path) -> None:
    result = audit_cli("sqlite://", "keygen", "--dir", str(tmp_path))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    ident = lines[0].removeprefix("key id: ")
    path = tmp_path / f"audit-{ident}.pem"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and b"PRIVATE KEY" in path.read_bytes()
    assert lines[-1].endswith(f": {ident}:" + lines[-1].rpartition(f"{ident}:")[2])
    assert "PRIVATE" not in result.stdout


def test_export_filters_by_trading_session_not_wall_clock(own_engine: Engine, own_url: str, audit_keys: str,
                                                          tmp_path: Path) -> None:
    """On a simulated clock the session is not today's date: an order's events are its order's session, any other
    entry the session the clock stood at when it was written."""
    ensure_account(own_engine, "g1", Decimal("1000000"), "U_ADMIN")  # before any clock move: today's date
    with Session(own_engine) as session:
        set_session(session, "20260302", "20260305", "20260331", "U_ADMIN")
        session.commit()
    log_event(own_engine, "t1:1", "g1", "proposed", "U_RULE", {})  # no order row: the clock's session, 03-05
    with Session(own_engine) as session:
        session.add(PaperOrder(client_order_id="t1:2", account="g1", ts_code="600000.SH", side="buy", quantity=100,
                               price_type="market", session_date="20260306", fill_at="open", status="open"))
        session.commit()
    log_event(own_engine, "t1:2", "g1", "submitted", "U_ANNA", {})  # its order's session, 03-06

    def exported(*days: str) -> list[tuple[str, str, str]]:
        out = tmp_path / "g1.csv"
        result = audit_cli(own_url, "export", "--account", "g1", *days, "--out", str(out))
        assert result.returncode == 0, result.stderr
        return [(r["seq"], r["session"], r["event"]) for r in csv.DictReader(out.open(encoding="utf-8"))]

    assert exported("--session-from", "2026-03-05", "--session-to", "2026-03-05") == [
        ("2", "2026-03-05", "proposed"), ("3", "", "signed head")]
    assert exported("--session-from", "2026-03-05", "--session-to", "2026-03-06") == [
        ("2", "2026-03-05", "proposed"), ("3", "2026-03-06", "submitted"), ("3", "", "signed head")]
    today = f"{datetime.now(ZoneInfo('Asia/Shanghai')).date():%Y-%m-%d}"
    assert [seq for seq, _s, _e in exported("--from", today, "--to", today)] == ["1", "2", "3", "3"]
    one_alone = audit_cli(own_url, "export", "--account", "g1", "--session-from", "2026-03-05")
    assert one_alone.returncode == 2 and "give --from and --to" in one_alone.stderr


def test_a_signing_key_file_that_cannot_be_read_stops_the_start(tmp_path: Path) -> None:
    """Else the first audited write would fail: an order event, a decision."""
    (tmp_path / "not-a-key.pem").write_text("hello", encoding="utf-8")
    for name, error in (("missing.pem", "FileNotFoundError"), ("not-a-key.pem", "ValueError")):
        settings = Settings(_env_file=None, DATABASE_URL=f"sqlite:///{tmp_path / 'q.db'}",
                            QUANTDESK_DATA_DIR=str(tmp_path), QUANTDESK_DATA_PROVIDER="sample",
                            QUANTDESK_AUDIT_SIGNING_KEY=str(tmp_path / name))
        with pytest.raises(StartupError) as refused:
            build_context(settings)
        assert str(refused.value) == (f"QUANTDESK_AUDIT_SIGNING_KEY: cannot read an Ed25519 private key from "
                                      f"{tmp_path / name} ({error})")
