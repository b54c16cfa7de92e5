"""Decisions: the message a decision was typed in (a thread reply's dedupe key), so a reply's job that runs again
after a crash finds its decision recorded and is not read again as an answer or a new request.

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("decisions", sa.Column("message_key", sa.String(160), nullable=True))
    op.create_index("ix_decisions_message_key", "decisions", ["message_key"], unique=True)


def downgrade() -> None:
    op.drop_index("ix_decisions_message_key", table_name="decisions")
    op.drop_column("decisions", "message_key")
