"""The audit chains (tools/audit): an entry per audited row, each chain's signed head; the rows already in
order_events and audit_log are chained in the order they were written (heads signed when QUANTDESK_AUDIT_KEY is
set).

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

from tools.audit.canonical import GENESIS, as_utc, entry_hash, row_hash
from tools.audit.signing import legacy_hmac
from tools.settings import get_settings

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

AUDITED = {"order_events": "at", "audit_log": "created_at"}  # table: its time column


def upgrade() -> None:
    chain = op.create_table(
        "audit_chain",
        sa.Column("id", sa.BigInteger().with_variant(sa.Integer, "sqlite"), primary_key=True, autoincrement=True),
        sa.Column("chain", sa.String(80), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("source", sa.String(32), nullable=False),
        sa.Column("source_id", sa.BigInteger, nullable=False),
        sa.Column("row_hash", sa.String(64), nullable=False),
        sa.Column("prev_hash", sa.String(64), nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("chain", "seq", name="uq_audit_chain_seq"),
    )
    op.create_index("ix_audit_chain_at", "audit_chain", ["at"])
    heads = op.create_table(
        "audit_heads",
        sa.Column("chain", sa.String(80), primary_key=True),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.Column("signature", sa.String(64), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
    )
    _chain_existing_rows(chain, heads)


def _chain_existing_rows(chain: sa.Table, heads: sa.Table) -> None:
    bind = op.get_bind()
    rows: list[tuple[str, str, dict]] = []  # (chain, table, row)
    for name in AUDITED:
        table = sa.Table(name, sa.MetaData(), autoload_with=bind)
        for row in bind.execute(sa.select(table).order_by(table.c.id)).mappings():
            account = row.get("account")
            rows.append((f"account:{account}" if account else "global", name, dict(row)))
    rows.sort(key=lambda item: (as_utc(item[2][AUDITED[item[1]]]), item[1], item[2]["id"]))
    key = get_settings().audit_key
    secret = key.get_secret_value() if key is not None else ""
    last: dict[str, tuple[int, str]] = {}
    now = datetime.now(UTC)
    for name, source, row in rows:
        seq, prev = last.get(name, (0, GENESIS))
        seq += 1
        digest = row_hash(source, row)
        at = as_utc(row[AUDITED[source]])
        this = entry_hash(name, seq, source, row["id"], digest, prev, at)
        bind.execute(chain.insert().values(chain=name, seq=seq, source=source, source_id=row["id"], row_hash=digest,
                                           prev_hash=prev, hash=this, at=at))
        last[name] = (seq, this)
    for name, (seq, this) in last.items():
        signature = legacy_hmac(secret, name, seq, this) if secret else ""
        bind.execute(heads.insert().values(chain=name, seq=seq, hash=this, signature=signature, updated_at=now))


def downgrade() -> None:
    op.drop_table("audit_heads")
    op.drop_index("ix_audit_chain_at", "audit_chain")
    op.drop_table("audit_chain")
