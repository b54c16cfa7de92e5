"""The audit chain as a forger who knows the hashing rewrites it: every entry of a chain linked again over its rows
as they now are (what the rewrite and rollback tests do before they sign, or fail to sign, the new head)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.chain import row_fields
from tools.audit.records import ChainEntry
from tools.broker.records import OrderEvent


def relink(session: Session, chain: str) -> str:
    """Recompute each order-event entry of `chain` (row hash, previous hash, hash) in order; the last hash."""
    prev = GENESIS
    for entry in session.scalars(select(ChainEntry).where(ChainEntry.chain == chain).order_by(ChainEntry.seq)).all():
        entry.row_hash = row_hash("order_events", row_fields(session.get(OrderEvent, entry.source_id)))
        entry.prev_hash = prev
        entry.hash = prev = entry_hash(entry.chain, entry.seq, entry.source, entry.source_id, entry.row_hash,
                                       entry.prev_hash, entry.at)
    return prev
