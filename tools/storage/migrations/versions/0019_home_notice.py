"""A Home's notice (what was said about a click on it) kept on its row until a publish shows it, so a notice is not
lost when another process holds the publish claim.

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("homes") as batch:
        batch.add_column(sa.Column("notice", sa.Text))
        batch.add_column(sa.Column("notice_version", sa.Integer))


def downgrade() -> None:
    with op.batch_alter_table("homes") as batch:
        batch.drop_column("notice_version")
        batch.drop_column("notice")
