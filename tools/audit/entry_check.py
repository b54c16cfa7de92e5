"""Whether one audited row is in its chain, checked where a control depends on it (an approval is resumed only when
its audit entry is): the entry exists, its hashes are its own and its row's, it follows the entry before it, and the
chain's head is at or past it, its signature valid when this process holds its key. `audit verify` walks whole chains;
this reads the entry, the one before it and the head in one query."""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, inspect, select
from sqlalchemy.orm import Session, aliased

from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.chain import chain_of, row_fields
from tools.audit.keys import legacy_key, verify_keys
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.signing import check


def entry_problem(session: Session, row: Any) -> str | None:
    """Why the audited `row` (a mapped row read back) is not provably in its chain, or None when it is."""
    table = inspect(row).mapper.local_table.name
    fields = row_fields(row)
    before = aliased(ChainEntry)
    found = session.execute(
        select(ChainEntry, before.hash, ChainHead)
        .outerjoin(before, and_(before.chain == ChainEntry.chain, before.seq == ChainEntry.seq - 1))
        .outerjoin(ChainHead, ChainHead.chain == ChainEntry.chain)
        .where(ChainEntry.source == table, ChainEntry.source_id == fields["id"])).first()
    if found is None:
        return f"{table} {fields['id']} has no audit chain entry"
    entry, before_hash, head = found
    if entry.chain != chain_of(fields.get("account")):
        return f"{table} {fields['id']} is chained in {entry.chain}, not its own chain"
    if entry.row_hash != row_hash(table, fields):
        return f"{table} {fields['id']} differs from what its chain entry #{entry.seq} recorded"
    if entry.hash != entry_hash(entry.chain, entry.seq, entry.source, entry.source_id, entry.row_hash,
                                entry.prev_hash, entry.at):
        return f"chain entry #{entry.seq} of {entry.chain} was edited"
    if (before_hash if entry.seq > 1 else GENESIS) != entry.prev_hash:
        return f"chain entry #{entry.seq} of {entry.chain} does not follow the entry before it"
    if head is None or head.seq < entry.seq:
        return f"the head of {entry.chain} does not reach entry #{entry.seq}"
    signed = check(head.signature, head.chain, head.seq, head.hash, verify_keys(), legacy_key())
    if signed.valid is False:
        return f"the head of {entry.chain} is {signed.label}"
    return None
