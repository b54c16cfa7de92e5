"""The audit chains' tables (see tools/audit/chain.py): one entry per audited row, and each chain's head. Migration
0015 creates them."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, DateTime, Index, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import ID, Base, utcnow


class ChainEntry(Base):
    """One audited row (`source` table, `source_id`) at position `seq` of its chain: the hash of the row's canonical
    JSON, the previous entry's hash and its own."""

    __tablename__ = "audit_chain"
    __table_args__ = (UniqueConstraint("chain", "seq", name="uq_audit_chain_seq"),
                      Index("ix_audit_chain_source", "source", "source_id"))  # 0020

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    chain: Mapped[str] = mapped_column(String(80))  # "global" or "account:NAME"
    seq: Mapped[int] = mapped_column(BigInteger)
    source: Mapped[str] = mapped_column(String(32))  # the audited table
    source_id: Mapped[int] = mapped_column(BigInteger)
    row_hash: Mapped[str] = mapped_column(String(64))
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)


class ChainHead(Base):
    """A chain's last entry, signed with the writers' Ed25519 key (`ed25519:KEY_ID:BASE64`, tools/audit/signing.py;
    a 64-digit legacy HMAC on a head not appended to since 0021; empty when no key was set). The private key is never
    in the database, so a chain rewritten with correct hashes cannot carry a valid signature."""

    __tablename__ = "audit_heads"

    chain: Mapped[str] = mapped_column(String(80), primary_key=True)
    seq: Mapped[int] = mapped_column(BigInteger)
    hash: Mapped[str] = mapped_column(String(64))
    signature: Mapped[str] = mapped_column(String(128), default="")  # 0021
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)
