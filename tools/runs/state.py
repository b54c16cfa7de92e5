"""The state a run starts from besides its data (paper accounts, positions, the simulated clock, the trading
switch, mandates, saved rules), kept in its record as JSON so that a re-run starts from the same state, whatever
happened since."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, Date, DateTime, Engine, Numeric, Table, insert, select

import tools.broker.records  # noqa: F401  (the tables join the metadata)
import tools.rules.records  # noqa: F401
from tools.storage.models import Base

STATE_TABLES = ("paper_accounts", "paper_positions", "simulated_clock", "trading_switch", "paper_mandates",
                "saved_rules")


def snapshot(engine: Engine) -> dict[str, list[dict[str, Any]]]:
    """Every row of `STATE_TABLES`, as JSON values."""
    with engine.connect() as conn:
        return {name: [{key: _plain(value) for key, value in row._mapping.items()}
                       for row in conn.execute(select(Base.metadata.tables[name]))] for name in STATE_TABLES}


def restore(engine: Engine, state: dict[str, list[dict[str, Any]]]) -> None:
    """Insert a snapshot's rows into an empty database of the same schema."""
    with engine.begin() as conn:
        for name in STATE_TABLES:
            table = Base.metadata.tables[name]
            rows = [_typed(table, row) for row in state.get(name, [])]
            if rows:
                conn.execute(insert(table), rows)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    return value


def _typed(table: Table, row: dict[str, Any]) -> dict[str, Any]:
    typed = {}
    for key, value in row.items():
        kind = table.c[key].type
        if value is None or isinstance(kind, JSON):
            typed[key] = value
        elif isinstance(kind, DateTime):
            typed[key] = datetime.fromisoformat(value)
        elif isinstance(kind, Date):
            typed[key] = date.fromisoformat(value)
        elif isinstance(kind, Numeric) and kind.asdecimal:
            typed[key] = Decimal(value)
        else:
            typed[key] = value
    return typed
