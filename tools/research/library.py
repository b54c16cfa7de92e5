"""The team library: the factor versions that passed the gate (tools/research/gate.py) or were saved anyway by a
person with a reason. Saving anyway is an event on the global audit chain, in the same transaction as the entry."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.audit.chain import GLOBAL, lock
from tools.broker.store import record_event, write_lock
from tools.research.records import LibraryEntry
from tools.storage.models import utcnow

SAVED_ANYWAY = "saved anyway"  # the audit event (order_events.event holds 16 characters)


class TeamLibrary:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def admit(self, factor_id: int, gate: dict[str, Any]) -> bool:
        """Add a version that passed the gate; False when it was in already."""
        with Session(self.engine) as session, session.begin():
            if session.get(LibraryEntry, factor_id) is not None:
                return False
            session.add(LibraryEntry(factor_id=factor_id, added_by=None, how="gate", reason=None, gate=gate,
                                     added_at=utcnow()))
        return True

    def save_anyway(self, factor_id: int, name: str, version: int, by: str, reason: str,
                    gate: dict[str, Any]) -> bool:
        """Add a version the gate refused, on `by`'s word and `reason`, audited; False when it was in already."""
        with write_lock(self.engine) as session:
            lock(session, GLOBAL)
            if session.get(LibraryEntry, factor_id) is not None:
                return False
            session.add(LibraryEntry(factor_id=factor_id, added_by=by, how="anyway", reason=reason, gate=gate,
                                     added_at=utcnow()))
            record_event(session, None, None, SAVED_ANYWAY, by,
                         {"factor": name, "version": version, "factor_id": factor_id, "reason": reason,
                          "gate": gate})
        return True

    def entry(self, factor_id: int) -> LibraryEntry | None:
        with Session(self.engine) as session:
            return session.get(LibraryEntry, factor_id)

    def entries(self) -> dict[int, LibraryEntry]:
        with Session(self.engine) as session:
            return {e.factor_id: e for e in session.scalars(select(LibraryEntry))}
