"""The state a run starts from besides its data (paper accounts, positions, the simulated clock, the trading
switch, mandates, saved rules, the order cards' slots that proposals claim; and the desk's memory of the codes it
decided on), kept in its record as JSON so that a re-run starts from the same state, whatever happened since."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import JSON, Date, DateTime, Engine, Numeric, Select, Table, insert, or_, select

import tools.broker.claim_records  # noqa: F401  (the tables join the metadata)
import tools.broker.records  # noqa: F401
import tools.rules.records  # noqa: F401
from tools.desk.records import AnalystReport, AnalystSummary, DeskDecision, DeskDecisionOutcome
from tools.storage.models import Base

STATE_TABLES = ("paper_accounts", "paper_positions", "simulated_clock", "trading_switch", "paper_mandates",
                "saved_rules", "proposal_claims")
MEMORY_TABLES = ("analyst_reports", "analyst_summaries", "desk_decisions", "desk_decision_outcomes")  # in FK order
Rows = dict[str, list[dict[str, Any]]]


def snapshot(engine: Engine) -> Rows:
    """Every row of `STATE_TABLES`, as JSON values."""
    return _rows(engine, {name: select(Base.metadata.tables[name]) for name in STATE_TABLES})


def memory_snapshot(engine: Engine, namespace: str, codes: list[str], before: datetime) -> Rows:
    """The desk memory of `namespace` a run on `codes` could read, as it stood at `before` (the run's start, by
    the wall clock every memory row is stamped with), as JSON values: the analysts' reports (by when they were last
    written) and summaries of those codes; the decisions logged on them, with their outcomes (the reflections);
    and any code's decision without an outcome, which the run's resolution pass reads and may resolve.

    Taken when the run is saved rather than at its open, because only then are its codes known (a free-text
    request is read by a model inside the run); the creation stamps leave out what the run itself (or anything
    after its start) wrote. Every row of the codes is kept, not only those the reads pick (point-in-time reads of
    an earlier day pick older rows), so the record grows with the codes' history."""
    decided = select(DeskDecisionOutcome.decision_id).where(DeskDecisionOutcome.resolved_at < before)
    decisions = select(DeskDecision).where(
        DeskDecision.namespace == namespace, DeskDecision.created_at < before,
        or_(DeskDecision.ts_code.in_(codes), DeskDecision.id.not_in(decided)))
    queries: dict[str, Select[Any]] = {
        "analyst_reports": select(AnalystReport).where(
            AnalystReport.namespace == namespace, AnalystReport.symbol.in_(codes), AnalystReport.updated_at < before),
        "analyst_summaries": select(AnalystSummary).where(
            AnalystSummary.namespace == namespace, AnalystSummary.symbol.in_(codes),
            AnalystSummary.created_at < before),
        "desk_decisions": decisions,
        "desk_decision_outcomes": select(DeskDecisionOutcome).where(
            DeskDecisionOutcome.decision_id.in_(decisions.with_only_columns(DeskDecision.id)),
            DeskDecisionOutcome.resolved_at < before)}
    found = _rows(engine, queries)
    return {name: rows for name, rows in found.items() if rows}


def restore(engine: Engine, state: Rows, tables: tuple[str, ...] = STATE_TABLES) -> None:
    """Insert a snapshot's rows of `tables` (in that order) into an empty database of the same schema."""
    with engine.begin() as conn:
        for name in tables:
            table = Base.metadata.tables[name]
            rows = [_typed(table, row) for row in state.get(name, [])]
            if rows:
                conn.execute(insert(table), rows)


def _rows(engine: Engine, queries: dict[str, Select[Any]]) -> Rows:
    """Each query's rows, its table's columns as JSON values."""
    with engine.connect() as conn:
        return {name: [{key: _plain(value) for key, value in row._mapping.items()}
                       for row in conn.execute(_columns(query, name))] for name, query in queries.items()}


def _columns(query: Select[Any], name: str) -> Select[Any]:
    """`query` selecting its table's columns (an ORM entity's query would give one object per row), in the order
    of its primary key (the record's hash is the same for the same rows)."""
    table = Base.metadata.tables[name]
    return query.with_only_columns(*table.columns).order_by(*table.primary_key.columns)


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
