"""Durable decisions on the application database (see ARCHITECTURE.md, "Decisions").

A decision is accepted by inserting its row (the interrupt id is the key, so the first decision wins across
clicks, replies, processes and hosts) together with its audit entry, chained in the same transaction; it is applied
by resuming the graph, only when that chained entry exists and matches it (`unproven`), and marked applied once the
checkpoint no longer has the interrupt pending. A failed apply stays unapplied and is retried with back-off
by the background service (infrastructure errors only, at most MAX_ATTEMPTS times); an error raised by the graph itself
marks it failed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import CursorResult, Engine, delete, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from bot.stores.records import AuditEntry, DecisionRecord, HomeRecord, PostRecord
from bot.surfaces import SURFACES
from tools.audit.canonical import as_utc
from tools.audit.chain import append
from tools.audit.entry_check import entry_problem
from tools.storage.models import utcnow

MAX_ATTEMPTS = 5
BACKOFF_SECONDS = (2, 5, 15, 60, 300)
REFUSED = "refused"  # the audit action of a decision found without its chained entry, removed unapplied
CLAIM_SECONDS = 30  # default: a claimed decision is its worker's for this long (then the worker is presumed dead)
# where a decision may come from: a thread reply, the LangGraph API, a switch-off closing cards, and what each
# surface registers (bot/surfaces.py)
SOURCES = ("thread reply", "api", "trading switch", *(source for entry in SURFACES for source in entry.sources))


def claim_row(engine: Engine, record: type[DecisionRecord] | type[PostRecord] | type[HomeRecord], owner: str,
              seconds: float, now: datetime | None, *match: Any) -> bool:
    """Claim the row `match` selects for `seconds`: True for one claimant at a time, until the claim lapses."""
    now = now or utcnow()
    with Session(engine) as session, session.begin():
        done = session.execute(
            update(record)
            .where(*match, or_(record.claimed_until.is_(None), record.claimed_until < now))
            .values(claimed_by=owner, claimed_until=now + timedelta(seconds=seconds)))
        return isinstance(done, CursorResult) and done.rowcount == 1  # an UPDATE's result, typed as a Result


@dataclass(frozen=True)
class Decision:
    interrupt_id: str
    thread_id: str
    decision: dict[str, Any]
    decided_by: str | None
    source: str
    outcome: str | None
    attempts: int
    last_error: str | None
    applied: bool
    decided_at: datetime  # when the human decided (an approval's expiry is judged against it, not the apply)


def audit_detail(decision: dict[str, Any], source: str, decided_at: datetime) -> dict[str, Any]:
    """What a decision's audit entry records besides who, what and where: the decision as it will be applied, when
    and from where it was made, and for a reader the reason, edited values or chosen answer."""
    detail: dict[str, Any] = {"source": source, "decided_at": as_utc(decided_at).isoformat(),
                              "decision": dict(decision)}
    kind = decision.get("type")
    if kind == "reject":
        detail["reason"] = decision.get("message", "")
    elif kind == "edit":
        detail["edited"] = (decision.get("edited_action") or {}).get("args") or {}
    elif kind == "respond" and source == "button":
        detail["choice"] = str(decision.get("message") or "")
    return detail


def _says(row: AuditEntry, record: Decision) -> bool:
    """Whether the audit row records exactly this decision."""
    detail = row.detail if isinstance(row.detail, dict) else {}
    try:
        when = datetime.fromisoformat(str(detail.get("decided_at")))
    except ValueError:
        return False
    return (row.thread_id == record.thread_id and row.user_id == (record.decided_by or "")
            and row.action == str(record.decision.get("type")) and detail.get("decision") == record.decision
            and detail.get("source") == record.source and as_utc(when) == as_utc(record.decided_at))


def _decision(row: DecisionRecord) -> Decision:
    decided_at = row.decided_at if row.decided_at.tzinfo else row.decided_at.replace(tzinfo=UTC)  # SQLite: naive
    return Decision(row.interrupt_id, row.thread_id, dict(row.decision), row.decided_by, row.source, row.outcome,
                    row.attempts, row.last_error, row.applied_at is not None, decided_at)


class DecisionStore:
    def __init__(self, engine: Engine, claim_seconds: float = CLAIM_SECONDS) -> None:
        """`claim_seconds`: how long a claim keeps other workers off. A claim that outlives its run is harmless:
        the queue's per-thread lock and the checkpoint keep a decision from being applied twice."""
        self.engine = engine
        self.claim_seconds = claim_seconds

    def accept(self, interrupt_id: str, thread_id: str, decision: dict[str, Any], decided_by: str | None,
               source: str, message_key: str | None = None) -> bool:
        """Record a decision; False when the interrupt already has one ("already handled"). `message_key`: the
        message it was typed in (a thread reply), so that message is never taken twice."""
        if source not in SOURCES:
            raise ValueError(f"unknown decision source {source!r}")
        now = utcnow()
        with Session(self.engine) as session:
            session.add(DecisionRecord(interrupt_id=interrupt_id, thread_id=thread_id, decision=dict(decision),
                                       decided_by=decided_by, source=source, attempts=0, decided_at=now,
                                       next_attempt_at=now, message_key=message_key))
            try:
                session.flush()
            except IntegrityError:
                session.rollback()
                return False
            entry = AuditEntry(thread_id=thread_id, interrupt_id=interrupt_id, user_id=decided_by or "",
                               action=str(decision.get("type")), detail=audit_detail(decision, source, now),
                               created_at=now)
            session.add(entry)
            append(session, entry)
            session.commit()
            return True

    def unproven(self, record: Decision) -> str | None:
        """Why the decision may not be applied, or None: its audit entry (written with it) must exist, say the same
        thing (who, what, when, which interrupt and thread, from where) and be provably in the global chain. A
        row written into `decisions` by hand has none."""
        with Session(self.engine) as session:
            rows = session.scalars(select(AuditEntry).where(AuditEntry.interrupt_id == record.interrupt_id)
                                   .order_by(AuditEntry.id)).all()
            matching = [row for row in rows if _says(row, record)]
            if not matching:
                return "no audit entry records this decision" if not rows else (
                    "its audit entry records another decision (who, what, when or where differ)")
            problems = [entry_problem(session, row) for row in matching]
            return None if None in problems else problems[0]

    def refuse(self, record: Decision, problem: str) -> None:
        """Remove a decision that is not in the audit record (`unproven`), so its question can still be decided,
        and chain the attempt as evidence (action "refused"), in one transaction."""
        now = utcnow()
        with Session(self.engine) as session, session.begin():
            session.execute(delete(DecisionRecord).where(DecisionRecord.interrupt_id == record.interrupt_id))
            entry = AuditEntry(thread_id=record.thread_id, interrupt_id=record.interrupt_id,
                               user_id=record.decided_by or "", action=REFUSED, created_at=now,
                               detail={**audit_detail(record.decision, record.source, record.decided_at),
                                       "problem": problem})
            session.add(entry)
            append(session, entry)

    def of_message(self, message_key: str) -> Decision | None:
        """The decision a message was taken as, if it was (a thread reply)."""
        with Session(self.engine) as session:
            row = session.scalars(select(DecisionRecord).where(DecisionRecord.message_key == message_key)).first()
            return _decision(row) if row else None

    def get(self, interrupt_id: str) -> Decision | None:
        with Session(self.engine) as session:
            row = session.get(DecisionRecord, interrupt_id)
            return _decision(row) if row else None

    def claim(self, interrupt_id: str, owner: str, now: datetime | None = None) -> bool:
        """Take the decision to apply it: True for one claimant at a time (a claim lapses after claim_seconds)."""
        return claim_row(self.engine, DecisionRecord, owner, self.claim_seconds, now,
                      DecisionRecord.interrupt_id == interrupt_id, DecisionRecord.applied_at.is_(None),
                      DecisionRecord.outcome.is_(None))

    def mark_applied(self, interrupt_id: str) -> None:
        self._set(interrupt_id, applied_at=utcnow(), outcome="applied", claimed_by=None, claimed_until=None)

    def mark_failed(self, interrupt_id: str, error: str) -> None:
        """An error raised by the graph itself: no automatic retry (the thread offers a Retry button)."""
        self._set(interrupt_id, outcome="failed", last_error=error[:2000], claimed_by=None, claimed_until=None)

    def mark_retry(self, interrupt_id: str, error: str, now: datetime | None = None) -> int:
        """An infrastructure error: count the attempt and schedule the next with back-off; returns attempts so far.
        After MAX_ATTEMPTS the decision is marked failed."""
        now = now or utcnow()
        with Session(self.engine) as session, session.begin():
            row = session.get(DecisionRecord, interrupt_id)
            if row is None:
                return 0
            row.attempts += 1
            row.last_error = error[:2000]
            row.claimed_by = row.claimed_until = None
            if row.attempts >= MAX_ATTEMPTS:
                row.outcome = "failed"
            else:
                row.next_attempt_at = now + timedelta(seconds=BACKOFF_SECONDS[row.attempts - 1])
            return row.attempts

    def retry(self, interrupt_id: str) -> bool:
        """A human's Retry of a failed decision: it becomes due again, with a fresh attempt count."""
        with Session(self.engine) as session, session.begin():
            done = session.execute(update(DecisionRecord).where(
                DecisionRecord.interrupt_id == interrupt_id, DecisionRecord.outcome == "failed",
                DecisionRecord.applied_at.is_(None)).values(outcome=None, attempts=0, next_attempt_at=utcnow()))
            return isinstance(done, CursorResult) and done.rowcount == 1

    def due(self, now: datetime | None = None, limit: int = 50, scope: str = "") -> list[Decision]:
        """Unapplied decisions whose next attempt is due and that no live worker holds (of threads whose id starts
        with `scope`: the surface this process serves)."""
        now = now or utcnow()
        with Session(self.engine) as session:
            rows = session.scalars(
                select(DecisionRecord)
                .where(DecisionRecord.applied_at.is_(None), DecisionRecord.outcome.is_(None),
                       DecisionRecord.next_attempt_at <= now, DecisionRecord.thread_id.startswith(scope),
                       or_(DecisionRecord.claimed_until.is_(None), DecisionRecord.claimed_until < now))
                .order_by(DecisionRecord.decided_at).limit(limit)).all()
            return [_decision(r) for r in rows]

    def stuck(self) -> list[Decision]:
        """Decisions not applied yet (pending, retrying or failed), oldest first: what `/quant status` shows."""
        with Session(self.engine) as session:
            rows = session.scalars(select(DecisionRecord).where(DecisionRecord.applied_at.is_(None))
                                   .order_by(DecisionRecord.decided_at)).all()
            return [_decision(r) for r in rows]

    def _set(self, interrupt_id: str, **values: Any) -> None:
        with Session(self.engine) as session, session.begin():
            session.execute(update(DecisionRecord).where(DecisionRecord.interrupt_id == interrupt_id).values(**values))
