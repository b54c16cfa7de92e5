"""Order proposal claims: one order card at a time per (account, code, automated proposer), taken atomically
before the card is shown and given back once it is decided, expires or is refused. The proposer is the orders'
tag: `rule:<id>` for a saved rule (one card per rule), `desk` for the decision desk. It replaces the per-rule
claim columns of 0010 on saved_rules (and the desk's reading of the audit trail, which two runs finishing at
once could both pass).

A rule's claim in force is carried over, in the rule's account (its own, else its channel's: a channel's paper
account is named after the channel). Downgrading carries each rule's latest claim back; the desk's are dropped
(0011's desk reads the audit trail).

Plain ADD/DROP COLUMN on saved_rules, not a batch copy: on SQLite a batch recreates the table, and dropping it
with foreign keys on would cascade into execution_logs and rule_ticks.

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "proposal_claims",
        sa.Column("account", sa.String(64), primary_key=True),
        sa.Column("ts_code", sa.String(32), primary_key=True),
        sa.Column("proposer", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(255), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_proposal_claims_holder", "proposal_claims", ["holder"])
    op.execute("INSERT INTO proposal_claims (account, ts_code, proposer, holder, claimed_at, expires_at) "
               "SELECT COALESCE(account, channel), symbol, 'rule:' || CAST(id AS VARCHAR(20)), proposal_execution, "
               "updated_at, proposal_expires_at FROM saved_rules "
               "WHERE proposal_execution IS NOT NULL AND proposal_expires_at IS NOT NULL")
    op.drop_column("saved_rules", "proposal_expires_at")
    op.drop_column("saved_rules", "proposal_execution")


def downgrade() -> None:
    op.add_column("saved_rules", sa.Column("proposal_execution", sa.String(64)))
    op.add_column("saved_rules", sa.Column("proposal_expires_at", sa.DateTime(timezone=True)))
    for column, source in (("proposal_execution", "holder"), ("proposal_expires_at", "expires_at")):
        op.execute(f"UPDATE saved_rules SET {column} = (SELECT {source} FROM proposal_claims WHERE "
                   "proposal_claims.proposer = 'rule:' || CAST(saved_rules.id AS VARCHAR(20)) "
                   "AND LENGTH(proposal_claims.holder) <= 64 ORDER BY expires_at DESC, holder LIMIT 1)")
    op.drop_index("ix_proposal_claims_holder", table_name="proposal_claims")
    op.drop_table("proposal_claims")
