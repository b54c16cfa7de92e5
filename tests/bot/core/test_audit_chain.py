"""The tamper-evident audit trail (tools/audit): every order event and human decision is an entry of its chain (one
per paper account, one global), hashed over canonical JSON and linked to the entry before it; the head is signed
with the Ed25519 key of QUANTDESK_AUDIT_SIGNING_KEY and verified with public keys only. `quantdesk audit verify` names
an entry edited, deleted or inserted with SQL, and a chain rewritten whole with correct hashes fails against the
signed head. On SQLite and PostgreSQL."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from datetime import date, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Engine, select, text, update
from sqlalchemy.orm import Session

from testkit.audit import audit_cli, desk_day, event_id, relink
from testkit.paths import REPO
from tools.audit.canonical import entry_hash, row_hash
from tools.audit.chain import row_fields
from tools.audit.export import export_csv
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.signing import legacy_hmac, load_private, sign, write_pair
from tools.broker.records import OrderEvent
from tools.broker.store import log_event
from tools.settings import get_settings
from tools.storage.migrate import downgrade, upgrade

LEGACY_KEY = "compliance-test-key"  # the HMAC key heads were signed with before Ed25519


def test_an_untouched_trail_verifies_with_its_signed_heads(own_engine: Engine, own_url: str, audit_keys: str) -> None:
    desk_day(own_engine)
    result = audit_cli(own_url, "verify")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.splitlines() == [
        f"global: 3 entries intact, head signature valid (key {audit_keys})",
        f"account:g1: 3 entries intact, head signature valid (key {audit_keys})",
        f"account:g2: 1 entries intact, head signature valid (key {audit_keys})",
    ]
    only = audit_cli(own_url, "verify", "--account", "g1")
    assert only.returncode == 0 and only.stdout.splitlines() == [
        f"account:g1: 3 entries intact, head signature valid (key {audit_keys})"]


def test_an_entry_edited_with_sql_is_named(own_engine: Engine, own_url: str, audit_keys: str) -> None:
    desk_day(own_engine)
    approved = event_id(own_engine, "g1", "approved")
    with own_engine.begin() as connection:
        connection.execute(update(OrderEvent).where(OrderEvent.id == approved).values(actor="U_MALLORY"))
    result = audit_cli(own_url, "verify")
    assert result.returncode == 1
    assert (f"account:g1: BROKEN after 1 good entries: entry #2 (order_events {approved}: approved by U_MALLORY at "
            in result.stdout)
    assert "the audited row was edited" in result.stdout
    assert "account:g2: 1 entries intact" in result.stdout  # the other chains still hold


def test_an_entry_deleted_with_sql_is_named(own_engine: Engine, own_url: str, audit_keys: str) -> None:
    desk_day(own_engine)
    approved = event_id(own_engine, "g1", "approved")
    with own_engine.begin() as connection:
        connection.execute(text("DELETE FROM order_events WHERE id = :id"), {"id": approved})
    result = audit_cli(own_url, "verify", "--account", "g1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (f"account:g1: BROKEN after 1 good entries: entry #2 (order_events "
                                             f"{approved}): the audited row was deleted")
    with own_engine.begin() as connection:  # the chain entry too: the gap is named
        connection.execute(text("DELETE FROM audit_chain WHERE chain = 'account:g1' AND seq = 2"))
    result = audit_cli(own_url, "verify", "--account", "g1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == ("account:g1: BROKEN after 1 good entries: entry #2 is missing "
                                             "(deleted): #1 is followed by #3")


def test_an_entry_inserted_with_sql_is_named(own_engine: Engine, own_url: str, audit_keys: str) -> None:
    desk_day(own_engine)
    with own_engine.begin() as connection:
        connection.execute(text("INSERT INTO order_events (client_order_id, account, event, actor, detail, at) "
                                "VALUES ('t9:1', 'g1', 'approved', 'U_MALLORY', '{}', '2026-03-02 01:00:00')"))
    with Session(own_engine) as session:
        inserted = session.scalar(select(OrderEvent.id).where(OrderEvent.actor == "U_MALLORY"))
    result = audit_cli(own_url, "verify", "--account", "g1")
    assert result.returncode == 1
    assert f"account:g1: 3 entries intact, head signature valid (key {audit_keys})" in result.stdout
    stray = [line for line in result.stdout.splitlines() if line.startswith("INSERTED: ")]
    assert stray == [f"INSERTED: order_events {inserted}: approved by U_MALLORY at 2026-03-02 01:00:00 is in no "
                     "chain: it was inserted outside the audit trail"]


def test_an_entry_inserted_into_the_chain_after_its_head_is_named(own_engine: Engine, own_url: str,
                                                                  audit_keys: str) -> None:
    desk_day(own_engine)
    with Session(own_engine) as session:  # a row and a well-formed fourth entry, but the head is left alone
        row = OrderEvent(client_order_id="t9:1", account="g1", event="approved", actor="U_MALLORY", detail={})
        session.add(row)
        session.flush()
        last = session.scalars(select(ChainEntry).where(ChainEntry.chain == "account:g1", ChainEntry.seq == 3)).one()
        digest = row_hash("order_events", row_fields(row))
        session.add(ChainEntry(chain="account:g1", seq=4, source="order_events", source_id=row.id, row_hash=digest,
                               prev_hash=last.hash, at=last.at,
                               hash=entry_hash("account:g1", 4, "order_events", row.id, digest, last.hash, last.at)))
        session.commit()
    result = audit_cli(own_url, "verify", "--account", "g1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == ("account:g1: BROKEN after 4 good entries: the chain ends at entry #4 but "
                                             "its head is #3: entries after the head were inserted, or entries up to "
                                             "it deleted")


def test_a_chain_rewritten_whole_with_correct_hashes_fails_against_the_signed_head(
        own_engine: Engine, own_url: str, audit_keys: str) -> None:
    desk_day(own_engine)
    approved = event_id(own_engine, "g1", "approved")
    with Session(own_engine) as session:  # the forger knows the hashing, not the key
        session.get(OrderEvent, approved).actor = "U_MALLORY"
        session.flush()
        session.get(ChainHead, "account:g1").hash = relink(session, "account:g1")
        session.commit()
    result = audit_cli(own_url, "verify", "--account", "g1")
    assert result.returncode == 1
    assert result.stdout.splitlines()[0] == (f"account:g1: BROKEN after 3 good entries: the head (#3) is not signed "
                                             f"by key {audit_keys} (the signature does not match this head): the chain "
                                             "was rewritten, or the key differs from the one it was written with")
    unkeyed = audit_cli(own_url, "verify", "--account", "g1", QUANTDESK_AUDIT_VERIFY_KEYS="")
    assert unkeyed.returncode == 1  # without the public key it cannot be told: not a pass
    assert unkeyed.stdout.splitlines() == [
        f"account:g1: 3 entries intact, signed with key {audit_keys}, which QUANTDESK_AUDIT_VERIFY_KEYS does not "
        "hold",
        "1 head signature(s) could not be checked (account:g1): a chain rewritten whole with correct hashes cannot be "
        "told apart. Set QUANTDESK_AUDIT_VERIFY_KEYS (and sign with QUANTDESK_AUDIT_SIGNING_KEY), or pass --unsigned "
        "to check the links only."]
    accepted = audit_cli(own_url, "verify", "--account", "g1", "--unsigned", QUANTDESK_AUDIT_VERIFY_KEYS="")
    assert accepted.returncode == 0 and accepted.stdout.splitlines()[-1].endswith("Accepted with --unsigned.")


def test_a_chain_cut_back_to_an_older_signed_head_fails_against_the_exported_head(
        own_engine: Engine, own_url: str, audit_keys: str, tmp_path: Path) -> None:
    """Entries deleted from the tail with their rows, and the older head (validly signed: from an earlier export)
    put back: the chain walks clean, only the head exported before the cut shows the gap."""
    desk_day(own_engine)
    today = f"{datetime.now(ZoneInfo('Asia/Shanghai')).date():%Y-%m-%d}"
    older, newer = tmp_path / "older.csv", tmp_path / "newer.csv"

    def export(path: Path) -> None:
        assert audit_cli(own_url, "export", "--account", "g1", "--from", today, "--to", today,
                         "--out", str(path)).returncode == 0

    export(older)
    with Session(own_engine) as session:
        kept = session.get(ChainHead, "account:g1")
        assert kept is not None and kept.seq == 3
        session.expunge(kept)
    log_event(own_engine, "t1:2", "g1", "proposed", "U_RULE", {"code": "600000.SH", "quantity": 300})
    log_event(own_engine, "t1:2", "g1", "approved", "U_ANNA", {})
    export(newer)
    with own_engine.begin() as connection:  # the forger deletes the last two entries and rows, restores head #3
        ids = connection.execute(text("SELECT source_id FROM audit_chain WHERE chain = 'account:g1' AND seq > 3")
                                 ).scalars().all()
        connection.execute(text("DELETE FROM audit_chain WHERE chain = 'account:g1' AND seq > 3"))
        for row in ids:
            connection.execute(text("DELETE FROM order_events WHERE id = :id"), {"id": row})
        connection.execute(update(ChainHead).where(ChainHead.chain == "account:g1").values(
            seq=kept.seq, hash=kept.hash, signature=kept.signature))
    alone = audit_cli(own_url, "verify", "--account", "g1")
    assert alone.returncode == 0 and alone.stdout.splitlines() == [
        f"account:g1: 3 entries intact, head signature valid (key {audit_keys})"]
    anchored = audit_cli(own_url, "verify", "--account", "g1", "--head", str(newer))
    assert anchored.returncode == 1
    assert anchored.stdout.splitlines()[-1] == (
        f"account:g1: BROKEN against the recorded head in {newer}: the chain ends at entry #3 but the recorded head "
        "is #5: entries #4 to #5 were deleted and an older head put back")
    matching = audit_cli(own_url, "verify", "--account", "g1", "--head", str(older))
    assert matching.returncode == 0
    assert matching.stdout.splitlines()[-1] == f"account:g1: holds the recorded head #3 of {older}"
    forged = tmp_path / "forged.csv"  # a head the forger signed without the key is not taken as an anchor
    other = load_private(write_pair(tmp_path / "other")[0])  # the forger's own key, passed off as the desk's
    signature = f"ed25519:{audit_keys}:" + sign(other, "account:g1", 3, kept.hash).rpartition(":")[2]
    forged.write_text(older.read_text(encoding="utf-8").replace(kept.signature, signature), encoding="utf-8")
    refused = audit_cli(own_url, "verify", "--account", "g1", "--head", str(forged))
    assert refused.returncode == 1 and "the recorded head (#3) is not validly signed" in refused.stdout


def test_export_is_a_readable_csv_carrying_the_signed_head(own_engine: Engine, own_url: str, audit_keys: str,
                                                           tmp_path: Path) -> None:
    desk_day(own_engine)
    today = datetime.now(ZoneInfo("Asia/Shanghai")).date()
    out = tmp_path / "g1.csv"
    result = audit_cli(own_url, "export", "--account", "g1", "--from", f"{today:%Y-%m-%d}", "--to",
                       f"{today:%Y-%m-%d}", "--out", str(out))
    assert result.returncode == 0, result.stderr
    rows = list(csv.DictReader(out.open(encoding="utf-8")))
    assert [(r["seq"], r["event"], r["order"], r["by"]) for r in rows] == [
        ("1", "proposed", "t1:1", "U_RULE"), ("2", "approved", "t1:1", "U_ANNA"), ("3", "submitted", "t1:1", "U_ANNA"),
        ("3", "signed head", "", "")]
    assert json.loads(rows[0]["detail"]) == {"code": "600000.SH", "quantity": 100}
    assert [r["prev_hash"] for r in rows[1:3]] == [r["hash"] for r in rows[:2]]
    head = rows[-1]
    assert head["hash"] == rows[2]["hash"]
    assert head["record"] == f"Ed25519, key {audit_keys}" and head["detail"].startswith(f"ed25519:{audit_keys}:")
    buffer = io.StringIO()  # another day holds none of them
    assert export_csv(own_engine, "account:g1", (date(2020, 1, 1), date(2020, 1, 2)), buffer) == 0


def test_rows_written_before_the_chains_are_chained_by_the_migration(own_engine: Engine, own_url: str,
                                                                     audit_keys: str,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The migration signs with the legacy HMAC key (QUANTDESK_AUDIT_KEY); a chain appended to since carries an
    Ed25519 head, an untouched one its legacy head, still verifiable with that key and labelled so."""
    monkeypatch.setenv("QUANTDESK_AUDIT_KEY", LEGACY_KEY)
    get_settings.cache_clear()
    downgrade(own_engine, "0014")
    with own_engine.begin() as connection:
        connection.execute(text("INSERT INTO order_events (client_order_id, account, event, actor, detail, at) VALUES "
                                "('old:1', 'g1', 'proposed', 'U_OLD', '{\"quantity\": 100}', "
                                "'2026-03-02 01:30:00+00:00'), "
                                "(NULL, NULL, 'trading on', 'U_OLD', '{}', '2026-03-02 01:31:00+00:00')"))
        connection.execute(text("INSERT INTO audit_log (thread_id, interrupt_id, user_id, action, detail, created_at) "
                                "VALUES ('console-0', 'i-0', 'U_OLD', 'approve', '{}', '2026-03-02 01:32:00+00:00')"))
    upgrade(own_engine)
    log_event(own_engine, "new:1", "g1", "proposed", "U_NEW", {})
    result = audit_cli(own_url, "verify", QUANTDESK_AUDIT_KEY=LEGACY_KEY)
    assert result.returncode == 0, result.stdout
    assert result.stdout.splitlines() == ["global: 2 entries intact, legacy HMAC signature valid",
                                          f"account:g1: 2 entries intact, head signature valid (key {audit_keys})"]
    with Session(own_engine) as session:
        legacy = session.get(ChainHead, "global")
        assert legacy is not None and legacy.signature == legacy_hmac(LEGACY_KEY, "global", 2, legacy.hash)
    unkeyed = audit_cli(own_url, "verify")  # without the legacy key, that head cannot be checked
    assert unkeyed.returncode == 1
    assert unkeyed.stdout.splitlines()[0] == ("global: 2 entries intact, legacy HMAC signature not checked "
                                              "(QUANTDESK_AUDIT_KEY is not set)")


def test_a_thousand_appends_from_two_processes_make_one_unbroken_chain(own_engine: Engine, own_url: str,
                                                                       tmp_path: Path, audit_keys: str) -> None:
    start = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    children = [subprocess.Popen([sys.executable, "-m", "testkit.children.audit_append", own_url, "shared", writer,
                                  "500", str(start)], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True)
                for writer in ("P1", "P2")]
    start.touch()
    for child in children:
        _, err = child.communicate(timeout=600)
        assert child.returncode == 0, err
    with Session(own_engine) as session:
        actors = session.scalars(select(OrderEvent.actor).join(
            ChainEntry, (ChainEntry.source == "order_events") & (ChainEntry.source_id == OrderEvent.id))
            .where(ChainEntry.chain == "account:shared").order_by(ChainEntry.seq)).all()
    assert len(actors) == 1000 and actors.count("P1") == actors.count("P2") == 500
    assert sum(a != b for a, b in zip(actors, actors[1:], strict=False)) >= 2  # the two really interleaved
    result = audit_cli(own_url, "verify")
    assert result.returncode == 0, result.stdout
    valid = f"head signature valid (key {audit_keys})"
    assert result.stdout.splitlines() == [f"global: 100 entries intact, {valid}",
                                          f"account:shared: 1000 entries intact, {valid}"]
