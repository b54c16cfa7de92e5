"""Alembic environment: the connection is handed in by tools.storage.migrate."""

from __future__ import annotations

from alembic import context

# every table of tools/ joins the metadata (each is defined beside its owner; the bot's own are not needed here:
# migrations are explicit, the metadata only serves comparisons)
import tools.access.records  # noqa: F401
import tools.audit.records  # noqa: F401
import tools.broker.claim_records  # noqa: F401
import tools.broker.records  # noqa: F401
import tools.desk.records  # noqa: F401
import tools.factors.records  # noqa: F401
import tools.research.records  # noqa: F401
import tools.rules.records  # noqa: F401
import tools.runs.store  # noqa: F401
import tools.storage.artifacts  # noqa: F401
import tools.storage.workspace  # noqa: F401
from tools.storage.models import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
with context.begin_transaction():
    context.run_migrations()
