"""Analyst report versions: every report of (namespace, analyst, symbol, day, session) is kept as its own row with
a version number, instead of a re-analysis replacing the earlier text (which left an earlier decision's report ids
pointing at text it never read). Existing reports become version 1.

analyst_reports has no foreign keys in or out, so SQLite's batch copy of the table is safe. Downgrading keeps only
the newest version of each key.

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

KEY = ["namespace", "analyst", "symbol", "trade_date", "session"]


def upgrade() -> None:
    with op.batch_alter_table("analyst_reports") as batch:
        batch.drop_constraint("uq_analyst_reports_key", type_="unique")
        batch.add_column(sa.Column("version", sa.Integer, nullable=False, server_default="1"))
        batch.create_unique_constraint("uq_analyst_reports_version", [*KEY, "version"])
    with op.batch_alter_table("analyst_reports") as batch:  # the default only filled the existing rows
        batch.alter_column("version", server_default=None)


def downgrade() -> None:
    op.execute("DELETE FROM analyst_reports WHERE EXISTS (SELECT 1 FROM analyst_reports AS newer WHERE "
               + " AND ".join(f"newer.{c} = analyst_reports.{c}" for c in KEY)
               + " AND newer.version > analyst_reports.version)")
    with op.batch_alter_table("analyst_reports") as batch:
        batch.drop_constraint("uq_analyst_reports_version", type_="unique")
        batch.drop_column("version")
        batch.create_unique_constraint("uq_analyst_reports_key", KEY)
