"""factor_values for bulk loads: no per-row foreign key; byte-order ("C") keys on PostgreSQL.

PostgreSQL checks a foreign key with one lookup per inserted row; for a 3,000 x 1,250 backfill that
tripled the COPY (34 s against 10 s here). Values are written only by FactorStore.save, in the same
transaction as their `factors` row, and factor rows are never deleted, so the key adds no safety the
writer does not already give. YYYYMMDD dates and ASCII codes sort the same bytewise, and byte
comparison keeps the primary-key index cheap to build.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

_FOREIGN_KEY = "factor_values_factor_id_fkey"  # PostgreSQL's default name for the 0002 key
_NAMES = {"fk": "%(table_name)s_%(column_0_name)s_fkey"}  # names SQLite's unnamed key the same way


def _set_collation(collation: str) -> None:
    op.execute(f'ALTER TABLE factor_values ALTER COLUMN trade_date TYPE varchar(8) COLLATE "{collation}", '
               f'ALTER COLUMN ts_code TYPE varchar(16) COLLATE "{collation}"')


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.drop_constraint(_FOREIGN_KEY, "factor_values", type_="foreignkey")
        _set_collation("C")
        return
    with op.batch_alter_table("factor_values", naming_convention=_NAMES) as batch:
        batch.drop_constraint(_FOREIGN_KEY, type_="foreignkey")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        _set_collation("default")
        op.create_foreign_key(_FOREIGN_KEY, "factor_values", "factors", ["factor_id"], ["id"], ondelete="CASCADE")
        return
    with op.batch_alter_table("factor_values") as batch:
        batch.create_foreign_key(_FOREIGN_KEY, "factors", ["factor_id"], ["id"], ondelete="CASCADE")
