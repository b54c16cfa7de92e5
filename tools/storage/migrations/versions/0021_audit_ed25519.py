"""The audit heads' signatures become Ed25519 naming their key (`ed25519:KEY_ID:BASE64`, tools/audit/signing.py):
the column widens from a 64-digit HMAC to 128 characters. Heads already signed keep their legacy HMAC.

Revision ID: 0021
Revises: 0020
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("audit_heads") as batch:
        batch.alter_column("signature", type_=sa.String(128), existing_type=sa.String(64),
                           existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("audit_heads") as batch:
        batch.alter_column("signature", type_=sa.String(64), existing_type=sa.String(128),
                           existing_nullable=False)
