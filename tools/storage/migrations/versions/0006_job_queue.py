"""Job queue: the inbox (both databases) and, on PostgreSQL, procrastinate's schema.

procrastinate's `apply_schema()` cannot run twice, so this revision installs the package's `sql/schema.sql`
only when `procrastinate_jobs` is missing, and tags the table with the version it installed. SQLite has no
procrastinate (the embedded default runs jobs in-process).

Upgrading procrastinate later: its schema changes ship as `procrastinate/sql/migrations/<MM.mm.pp>_<nn>_*.sql`.
Add an Alembic revision that runs, in file-name order, every file whose version is above the one installed here
(`03.10.00`; this revision's schema.sql already contains all earlier ones) and at most the new version, through
the driver connection as `_execute_script` does below, and re-tags the table. Files named `*_pre_*` must run
before the new code is deployed, `*_post_*` once no old worker runs: stop the workers for such an upgrade, or
split the two into revisions applied before and after the rollout.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

TAG_PREFIX = "procrastinate schema installed by quantdesk 0006"

_DROP_PROCRASTINATE = """
DROP TABLE IF EXISTS procrastinate_events, procrastinate_periodic_defers, procrastinate_jobs,
    procrastinate_workers CASCADE;
DO $$
DECLARE
    item record;
BEGIN
    FOR item IN SELECT p.oid::regprocedure AS signature FROM pg_proc p
                JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = current_schema() AND p.proname LIKE 'procrastinate\\_%' LOOP
        EXECUTE 'DROP ROUTINE IF EXISTS ' || item.signature || ' CASCADE';
    END LOOP;
    FOR item IN SELECT t.typname FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
                WHERE n.nspname = current_schema() AND t.typname LIKE 'procrastinate\\_%'
                  AND t.typtype IN ('e', 'c') LOOP
        EXECUTE format('DROP TYPE IF EXISTS %I CASCADE', item.typname);
    END LOOP;
END;
$$;
"""


def _execute_script(sql: str) -> None:
    """Run a multi-statement script as is: psycopg without parameters (no %-placeholder parsing), in the
    migration's transaction."""
    op.get_bind().connection.driver_connection.execute(sql)


def upgrade() -> None:
    op.create_table(
        "inbox",
        sa.Column("key", sa.String(160), primary_key=True),
        sa.Column("thread_id", sa.String(64), nullable=False),
        sa.Column("payload", sa.JSON, nullable=False),
        sa.Column("received_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("enqueued_at", sa.DateTime(timezone=True)),
        sa.Column("done_at", sa.DateTime(timezone=True)),
    )
    op.create_index("ix_inbox_thread_id", "inbox", ["thread_id"])
    op.create_index("ix_inbox_enqueued_at", "inbox", ["enqueued_at"])
    op.create_index("ix_inbox_done_at", "inbox", ["done_at"])
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    if bind.execute(sa.text("SELECT to_regclass('procrastinate_jobs')")).scalar() is not None:
        return  # installed before (by hand or by another app): never apply the schema twice
    import procrastinate
    from procrastinate.schema import SchemaManager

    _execute_script(SchemaManager.get_schema())
    bind.execute(sa.text(f"COMMENT ON TABLE procrastinate_jobs IS '{TAG_PREFIX} (procrastinate "
                         f"{procrastinate.__version__})'"))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        tag = bind.execute(sa.text("SELECT obj_description(to_regclass('procrastinate_jobs'), 'pg_class')")).scalar()
        if tag is not None and tag.startswith(TAG_PREFIX):  # only what this revision installed
            _execute_script(_DROP_PROCRASTINATE)
    op.drop_index("ix_inbox_done_at", table_name="inbox")
    op.drop_index("ix_inbox_enqueued_at", table_name="inbox")
    op.drop_index("ix_inbox_thread_id", table_name="inbox")
    op.drop_table("inbox")
