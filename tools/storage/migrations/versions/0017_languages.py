"""Languages (issue 25): each person's chosen language, and the language a thread speaks (its starter's).

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "person_languages",
        sa.Column("user_id", sa.String(64), primary_key=True),
        sa.Column("language", sa.String(8), nullable=False),
        sa.Column("chosen_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.add_column("threads", sa.Column("language", sa.String(8), nullable=True))


def downgrade() -> None:
    op.drop_column("threads", "language")
    op.drop_table("person_languages")
