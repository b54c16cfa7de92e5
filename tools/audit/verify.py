"""`quantdesk audit verify`: walk each chain and name the first entry that was edited, deleted or inserted out of
order, every audited row that is in no chain, and a head that is not where the chain ends or whose signature is not
its key's (a chain rewritten whole, with correct hashes, still fails there unless the signing key signed it)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
from sqlalchemy import Engine, Table, select
from sqlalchemy.orm import Session

from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.chain import GLOBAL, audited_tables, chain_of
from tools.audit.heads import RecordedHead
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.signing import Check, check
from tools.storage.models import Base

BATCH = 500


@dataclass(frozen=True)
class ChainReport:
    """One chain's walk: how many entries held, and the first problem (None: intact)."""

    chain: str
    entries: int
    problem: str | None
    signature: Check  # what the head's signature proved (valid None: it could not be checked)


@dataclass(frozen=True)
class Keys:
    """What verify checks signatures with: public keys by id, and the legacy HMAC key ('' when not set)."""

    public: dict[str, Ed25519PublicKey]
    legacy: str = ""

    def check(self, signature: str, chain: str, seq: int, head_hash: str) -> Check:
        return check(signature, chain, seq, head_hash, self.public, self.legacy)


NOT_WALKED = Check(None, "not checked")


def verify(engine: Engine, keys: Keys, account: str | None = None) -> tuple[list[ChainReport], list[str]]:
    """Each chain's report (only `account`'s with an account) and the audited rows that are in no chain."""
    with Session(engine) as session:
        names = [chain_of(account)] if account else _chain_names(session)
        reports = [_walk(session, name, keys) for name in names]
        strays = list(_unchained(session, account))
    return reports, strays


def against_head(engine: Engine, keys: Keys, recorded: RecordedHead) -> str | None:
    """Why the chain in the database does not hold the head an export or a witness recorded, or None. A chain cut
    back to an older, validly signed head (its newer entries and rows deleted) walks clean; only an anchor kept
    outside the database shows the entries it lost."""
    if keys.check(recorded.signature, recorded.chain, recorded.seq, recorded.hash).valid is False:
        return (f"the recorded head (#{recorded.seq}) is not validly signed: it is not a head this desk signed, or "
                "the key differs")
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


def _walk(session: Session, chain: str, keys: Keys) -> ChainReport:
    entries = session.execute(select(ChainEntry.__table__).where(ChainEntry.chain == chain)
                              .order_by(ChainEntry.seq)).all()  # rows, not objects: a walk reads 100,000s
    rows = _chain_rows(session, chain, {entry.source for entry in entries})
    prev, seq = GENESIS, 0
    for entry in entries:
        problem = _entry_problem(entry, seq, prev, rows.get((entry.source, entry.source_id)))
        if problem:
            return ChainReport(chain, seq, problem, NOT_WALKED)
        prev, seq = entry.hash, entry.seq
    head = session.get(ChainHead, chain)
    if head is None:
        return ChainReport(chain, seq, "the chain has no head: its head row was deleted", NOT_WALKED)
    if (head.seq, head.hash) != (seq, prev):
        return ChainReport(chain, seq, f"the chain ends at entry #{seq} but its head is #{head.seq}: entries after "
                                       "the head were inserted, or entries up to it deleted", NOT_WALKED)
    signed = keys.check(head.signature, chain, head.seq, head.hash)
    if signed.valid is False:
        return ChainReport(chain, seq, f"the head (#{head.seq}) is {signed.label}: the chain was rewritten, or the "
                                       "key differs from the one it was written with", signed)
    return ChainReport(chain, seq, None, signed)


def _entry_problem(entry: Any, seq: int, prev: str, row: dict[str, Any] | None) -> str | None:
    """Why the chain entry (a row of audit_chain) does not follow entry `seq` (hash `prev`) or its audited `row`."""
    problem = _link_problem(entry, seq, prev, row)
    if problem is None:
        return None
    if entry.seq > seq + 1:
        return problem
    return f"entry #{entry.seq} ({entry.source} {entry.source_id}{_what(row)}){problem}"


def _link_problem(entry: Any, seq: int, prev: str, row: dict[str, Any] | None) -> str | None:
    """What is wrong with the entry, said after its label (a gap is said whole)."""
    if entry.seq != seq + 1:
        return (f"entry #{seq + 1} is missing (deleted): #{seq} is followed by #{entry.seq}" if entry.seq > seq + 1
                else " is out of order")
    if entry.prev_hash != prev:
        return f" does not follow entry #{seq}: an entry was deleted or inserted before it"
    if entry.hash != entry_hash(entry.chain, entry.seq, entry.source, entry.source_id, entry.row_hash,
                                entry.prev_hash, entry.at):
        return ": the chain entry was edited"
    if row is None:
        return ": the audited row was deleted"
    if row_hash(entry.source, row, read_back=True) != entry.row_hash:
        return ": the audited row was edited"
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


def _chain_rows(session: Session, chain: str, sources: Iterable[str]) -> dict[tuple[str, int], dict[str, Any]]:
    """The audited rows a whole chain points at, by (table, id): one query per table."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    for source in sources:
        table = _table(source)
        ids = select(ChainEntry.source_id).where(ChainEntry.chain == chain, ChainEntry.source == source)
        for row in session.execute(select(table).where(table.c.id.in_(ids))).mappings():
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
