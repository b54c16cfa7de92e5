"""`quantdesk audit verify`: walk each chain and name the first entry that was edited, deleted or inserted out of
order, every audited row that is in no chain, and a head that is not where the chain ends or not signed with
QUANTDESK_AUDIT_KEY (a chain rewritten whole, with correct hashes, still fails there)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine, Table, select
from sqlalchemy.orm import Session

from tools.audit.canonical import GENESIS, entry_hash, row_hash, sign_head
from tools.audit.chain import GLOBAL, audited_tables, chain_of
from tools.audit.heads import RecordedHead
from tools.audit.records import ChainEntry, ChainHead
from tools.storage.models import Base

BATCH = 500


@dataclass(frozen=True)
class ChainReport:
    """One chain's walk: how many entries held, and the first problem (None: intact)."""

    chain: str
    entries: int
    problem: str | None
    signed: bool  # the head's signature was checked against the key


def verify(engine: Engine, key: str, account: str | None = None) -> tuple[list[ChainReport], list[str]]:
    """Each chain's report (only `account`'s with an account) and the audited rows that are in no chain."""
    with Session(engine) as session:
        names = [chain_of(account)] if account else _chain_names(session)
        reports = [_walk(session, name, key) for name in names]
        strays = list(_unchained(session, account))
    return reports, strays


def against_head(engine: Engine, key: str, recorded: RecordedHead) -> str | None:
    """Why the chain in the database does not hold the head an export recorded, or None. A chain cut back to an
    older, validly signed head (its newer entries and rows deleted) walks clean; only an anchor kept outside the
    database shows the entries it lost."""
    if key and not hmac.compare_digest(recorded.signature,
                                       sign_head(key, recorded.chain, recorded.seq, recorded.hash)):
        return (f"the recorded head (#{recorded.seq}) is not signed with QUANTDESK_AUDIT_KEY: it is not a head this "
                "desk exported, or the key differs")
    with Session(engine) as session:
        head = session.get(ChainHead, recorded.chain)
        entry = session.scalars(select(ChainEntry).where(ChainEntry.chain == recorded.chain,
                                                         ChainEntry.seq == recorded.seq)).one_or_none()
    ends = head.seq if head is not None else 0
    if entry is None and ends < recorded.seq:
        missing = f"#{ends + 1}" if ends + 1 == recorded.seq else f"#{ends + 1} to #{recorded.seq}"
        return (f"the chain ends at entry #{ends} but the recorded head is #{recorded.seq}: entries {missing} were "
                "deleted and an older head put back")
    if entry is None or entry.hash != recorded.hash:
        return (f"entry #{recorded.seq} is not the one the recorded head signed: the chain was rewritten up to "
                "it")
    return None


def _chain_names(session: Session) -> list[str]:
    names = set(session.scalars(select(ChainHead.chain)).all()) | set(
        session.scalars(select(ChainEntry.chain).distinct()).all())
    return sorted(names, key=lambda name: (name != GLOBAL, name))


def _walk(session: Session, chain: str, key: str) -> ChainReport:
    entries = session.scalars(select(ChainEntry).where(ChainEntry.chain == chain).order_by(ChainEntry.seq)).all()
    rows = audited_rows(session, entries)
    prev, seq = GENESIS, 0
    for entry in entries:
        problem = _entry_problem(entry, seq, prev, rows.get((entry.source, entry.source_id)))
        if problem:
            return ChainReport(chain, seq, problem, False)
        prev, seq = entry.hash, entry.seq
    head = session.get(ChainHead, chain)
    if head is None:
        return ChainReport(chain, seq, "the chain has no head: its head row was deleted", False)
    if (head.seq, head.hash) != (seq, prev):
        return ChainReport(chain, seq, f"the chain ends at entry #{seq} but its head is #{head.seq}: entries after "
                                       "the head were inserted, or entries up to it deleted", False)
    if key and not hmac.compare_digest(head.signature, sign_head(key, chain, head.seq, head.hash)):
        return ChainReport(chain, seq, f"the head (#{head.seq}) is not signed with QUANTDESK_AUDIT_KEY: the chain "
                                       "was rewritten, or the key differs from the one it was written with", False)
    return ChainReport(chain, seq, None, bool(key))


def _entry_problem(entry: ChainEntry, seq: int, prev: str, row: dict[str, Any] | None) -> str | None:
    label = f"entry #{entry.seq} ({entry.source} {entry.source_id}{_what(row)})"
    if entry.seq != seq + 1:
        return (f"entry #{seq + 1} is missing (deleted): #{seq} is followed by #{entry.seq}" if entry.seq > seq + 1
                else f"{label} is out of order")
    if entry.prev_hash != prev:
        return f"{label} does not follow entry #{seq}: an entry was deleted or inserted before it"
    if entry.hash != entry_hash(entry.chain, entry.seq, entry.source, entry.source_id, entry.row_hash,
                                entry.prev_hash, entry.at):
        return f"{label}: the chain entry was edited"
    if row is None:
        return f"{label}: the audited row was deleted"
    if row_hash(entry.source, row) != entry.row_hash:
        return f"{label}: the audited row was edited"
    return None


def _what(row: dict[str, Any] | None) -> str:
    """A few words naming the row for a person: its event or action, who and when."""
    if row is None:
        return ""
    words = [str(row[k]) for k in ("event", "action") if row.get(k)]
    who = row.get("actor") or row.get("user_id")
    when = row.get("at") or row.get("created_at")
    return ": " + " ".join([*words, *([f"by {who}"] if who else []), *([f"at {when:%Y-%m-%d %H:%M:%S}"] if when
                                                                        else [])])


def _table(name: str) -> Table:
    table = Base.metadata.tables.get(name)
    if table is None or not table.info.get("audit_chain"):
        raise ValueError(f"{name} is not an audited table")
    return table


def audited_rows(session: Session, entries: Iterable[ChainEntry]) -> dict[tuple[str, int], dict[str, Any]]:
    """The audited rows the entries point at, by (table, id); a deleted row is absent."""
    wanted: dict[str, list[int]] = {}
    for entry in entries:
        wanted.setdefault(entry.source, []).append(entry.source_id)
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for source, ids in wanted.items():
        table = _table(source)
        for start in range(0, len(ids), BATCH):
            for row in session.execute(select(table).where(table.c.id.in_(ids[start:start + BATCH]))).mappings():
                found[(source, row["id"])] = dict(row)
    return found


def _unchained(session: Session, account: str | None) -> Iterator[str]:
    """Audited rows no chain entry points at (inserted behind the chain's back), of `account` if given."""
    for name in audited_tables():
        table = _table(name)
        if account is not None and "account" not in table.c:
            continue
        chained = select(ChainEntry.source_id).where(ChainEntry.source == name)
        query = select(table).where(table.c.id.not_in(chained)).order_by(table.c.id)
        if account is not None:
            query = query.where(table.c.account == account)
        for row in session.execute(query).mappings():
            yield f"{name} {row['id']}{_what(dict(row))} is in no chain: it was inserted outside the audit trail"
