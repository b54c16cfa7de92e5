"""The audit chains: one per paper account (`account:NAME`) and one global chain (the trading switch, the simulated
clock, the bot's human decisions that name no account). An audited table is marked `info={"audit_chain": True}`;
each row it gets is appended, in the writer's own transaction, as the next entry of its chain. The chain's head row
is locked for the append (SELECT ... FOR UPDATE on PostgreSQL; SQLite holds its one write lock once the row was
flushed), so two writers never fork a chain."""

from __future__ import annotations

from typing import Any

from sqlalchemy import inspect, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session

from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.keys import signer
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.signing import sign
from tools.storage.models import Base, utcnow

GLOBAL = "global"


def chain_of(account: str | None) -> str:
    """The chain a row of `account` (None: no account) belongs to."""
    return f"account:{account}" if account else GLOBAL


def audited_tables() -> list[str]:
    """The tables whose every row is in a chain."""
    return [table.name for table in Base.metadata.sorted_tables if table.info.get("audit_chain")]


def row_fields(row: Any) -> dict[str, Any]:
    """Every column of a mapped row, by column name."""
    mapper = inspect(row).mapper
    return {column.name: getattr(row, attr.key) for attr in mapper.column_attrs for column in attr.columns}


def append(session: Session, row: Any) -> ChainEntry:
    """Flush `row` (an audited table's new row) and append it to its chain, in the session's transaction."""
    table = inspect(row).mapper.local_table
    if not table.info.get("audit_chain"):
        raise ValueError(f"{table.name} is not an audited table")
    session.flush()
    fields = row_fields(row)
    chain = chain_of(fields.get("account"))
    head = _locked_head(session, chain)
    seq, prev = (head.seq + 1, head.hash) if head is not None else (1, GENESIS)
    at = utcnow()
    digest = row_hash(table.name, fields)
    entry = ChainEntry(chain=chain, seq=seq, source=table.name, source_id=fields["id"], row_hash=digest,
                       prev_hash=prev, hash=entry_hash(chain, seq, table.name, fields["id"], digest, prev, at), at=at)
    session.add(entry)
    key = signer()
    signature = sign(key, chain, seq, entry.hash) if key is not None else ""
    if head is None:
        session.add(ChainHead(chain=chain, seq=seq, hash=entry.hash, signature=signature, updated_at=at))
    else:
        head.seq, head.hash, head.signature, head.updated_at = seq, entry.hash, signature, at
    session.flush()
    return entry


def lock(session: Session, chain: str) -> None:
    """Hold `chain`'s head until the transaction ends: a writer that checks state before it appends (a role change)
    takes it first, so two such writers never both pass their checks."""
    _locked_head(session, chain)


def _locked_head(session: Session, chain: str) -> ChainHead | None:
    """The chain's head, locked until the transaction ends. On PostgreSQL an absent head is created empty first
    (seq 0), so that two first appends also wait on one row."""
    if session.get_bind().dialect.name != "postgresql":
        return session.get(ChainHead, chain, populate_existing=True)
    locked = select(ChainHead).where(ChainHead.chain == chain).with_for_update().execution_options(
        populate_existing=True)
    head = session.scalars(locked).first()
    if head is None:  # the chain's first append: create the empty head, then wait on it like any other
        session.execute(pg_insert(ChainHead).values(chain=chain, seq=0, hash=GENESIS, signature="",
                                                    updated_at=utcnow()).on_conflict_do_nothing(index_elements=["chain"]))
        head = session.scalars(locked).one()
    return head
