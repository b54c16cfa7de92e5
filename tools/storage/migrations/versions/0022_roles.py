"""Roles and console logins in the database (issue 38): set by admins, seeded from the environment only while
empty (tools/access).

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "role_grants",
        sa.Column("role", sa.String(16), primary_key=True),
        sa.Column("account", sa.String(64), primary_key=True),
        sa.Column("identity", sa.String(64), primary_key=True),
        sa.Column("granted_by", sa.String(64), nullable=False),
        sa.Column("granted_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_table(
        "console_logins",
        sa.Column("login", sa.String(64), primary_key=True),
        sa.Column("identity", sa.String(64), nullable=False),
        sa.Column("mapped_by", sa.String(64), nullable=False),
        sa.Column("mapped_at", sa.DateTime(timezone=True), nullable=False),
        sa.UniqueConstraint("identity", name="uq_console_logins_identity"),
    )


def downgrade() -> None:
    op.drop_table("console_logins")
    op.drop_table("role_grants")
