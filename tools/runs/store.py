"""The run records in the database: one `runs` row per run (its manifest as JSON and the manifest's hash), its
model calls (`run_calls`: request hash, answer, tokens, latency) and the rows it read (`run_reads`, Parquet)."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    Boolean,
    DateTime,
    Engine,
    Integer,
    LargeBinary,
    String,
    Text,
    delete,
    func,
    select,
    update,
)
from sqlalchemy.orm import Mapped, Session, mapped_column

from tools.audit.chain import GLOBAL, lock
from tools.broker.records import OrderEvent
from tools.broker.store import record_event, write_lock
from tools.factors.records import FactorRecord
from tools.runs.hashing import digest, from_parquet, to_parquet
from tools.runs.provider import DataRecord, Read, read_key
from tools.storage.models import ID, Base, utcnow

log = logging.getLogger(__name__)


class Run(Base):
    """One workflow run, from its request through each resume to its end."""

    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(64), index=True)
    user_id: Mapped[str | None] = mapped_column(String(64), nullable=True, index=True)
    account: Mapped[str] = mapped_column(String(64), index=True)  # the channel (team) it ran in
    workflow: Mapped[str | None] = mapped_column(String(32), nullable=True)
    text: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(16))  # running, waiting, done, failed, stopped
    day: Mapped[str] = mapped_column(String(10))  # the local day it started (QUANTDESK_TIMEZONE)
    started_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, index=True)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    manifest: Mapped[str] = mapped_column(Text)
    manifest_hash: Mapped[str] = mapped_column(String(64))
    input_tokens: Mapped[int] = mapped_column(BigInteger, default=0)
    output_tokens: Mapped[int] = mapped_column(BigInteger, default=0)


class RunCall(Base):
    """One model call of a run: what was asked (its hash), what came back, what it cost and took."""

    __tablename__ = "run_calls"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    seq: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(String(100))
    request_hash: Mapped[str] = mapped_column(String(64))
    answer: Mapped[str] = mapped_column(Text)  # the message as LangChain's message_to_dict, JSON
    input_tokens: Mapped[int] = mapped_column(BigInteger)
    output_tokens: Mapped[int] = mapped_column(BigInteger)
    latency_ms: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
    day: Mapped[str] = mapped_column(String(10), index=True)  # the local day of the call (budgets, usage)
    user_id: Mapped[str | None] = mapped_column(String(64), nullable=True)
    account: Mapped[str] = mapped_column(String(64))
    workflow: Mapped[str | None] = mapped_column(String(32), nullable=True)


class RunRead(Base):
    """Rows a run read from the data provider, as compressed Parquet with their content hash."""

    __tablename__ = "run_reads"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    dataset: Mapped[str] = mapped_column(String(32))
    codes: Mapped[str] = mapped_column(Text)
    start: Mapped[str] = mapped_column(String(8))
    end: Mapped[str] = mapped_column(String(8))
    fields: Mapped[str] = mapped_column(Text)
    rows_hash: Mapped[str] = mapped_column(String(64))
    rows: Mapped[bytes] = mapped_column(LargeBinary)


class BudgetRaise(Base):
    """An admin's raise of one person's daily token budget, for one day."""

    __tablename__ = "budget_raises"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    user_id: Mapped[str] = mapped_column(String(64))
    day: Mapped[str] = mapped_column(String(10))
    tokens: Mapped[int] = mapped_column(BigInteger)
    raised_by: Mapped[str] = mapped_column(String(64))
    raised_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class RunRerun(Base):
    """One `rerun ID [live]` of a run: whether it came out the same and, for a desk decision, its rating."""

    __tablename__ = "run_reruns"

    id: Mapped[int] = mapped_column(ID, primary_key=True, autoincrement=True)
    run_id: Mapped[str] = mapped_column(String(32), index=True)
    live: Mapped[bool] = mapped_column(Boolean)
    same: Mapped[bool] = mapped_column(Boolean)
    rating: Mapped[str | None] = mapped_column(String(32), nullable=True)
    by: Mapped[str | None] = mapped_column(String(64), nullable=True)
    at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


@dataclass(frozen=True)
class Stability:
    """How often live re-runs of a decision gave the rating it had: `same` of `runs`, and the ratings seen."""

    rating: str
    same: int
    runs: int
    ratings: dict[str, int]


@dataclass(frozen=True)
class Call:
    """A model call as the recorder saw it."""

    seq: int
    model: str
    request_hash: str
    answer: dict[str, Any]
    input_tokens: int
    output_tokens: int
    latency_ms: int
    at: datetime
    day: str


@dataclass(frozen=True)
class RunRow:
    id: str
    thread_id: str
    user_id: str | None
    account: str
    workflow: str | None
    text: str
    status: str
    day: str
    started_at: datetime
    ended_at: datetime | None
    manifest: dict[str, Any]
    manifest_hash: str
    input_tokens: int
    output_tokens: int


PURGED = "purged"
ENDED = ("done", "failed", "stopped")
PURGE_EVERY = 3600.0  # seconds between the retention purges one store runs from `save`


def new_run_id() -> str:
    return uuid.uuid4().hex[:12]


class RunStore:
    """`retention_days` > 0: `save` purges, at most once an hour, the calls and rows of runs started longer ago that
    nothing refers to (see `purge`); 0 keeps every record."""

    def __init__(self, engine: Engine, retention_days: int = 0) -> None:
        self.engine = engine
        self.retention_days = retention_days
        self._purged_at: float | None = None

    def save(self, run_id: str, *, thread_id: str, user: str | None, account: str, text: str, day: str,
             status: str, manifest: dict[str, Any], workflow: str | None, calls: Sequence[Call] = (),
             data: DataRecord | None = None, ended: bool = False) -> str:
        """Insert or update the run's row with its manifest, and add the calls and reads not stored yet; the
        manifest's hash back."""
        manifest_hash = digest(manifest)
        with Session(self.engine) as session, session.begin():
            row = session.get(Run, run_id)
            if row is None:
                row = Run(id=run_id, thread_id=thread_id, user_id=user, account=account, text=text, day=day,
                          started_at=utcnow(), input_tokens=0, output_tokens=0)
                session.add(row)
            row.status, row.workflow, row.manifest, row.manifest_hash = status, workflow, json.dumps(
                manifest, ensure_ascii=False, default=str), manifest_hash
            row.ended_at = utcnow() if ended else None
            stored_calls = session.scalar(select(func.count()).where(RunCall.run_id == run_id)) or 0
            for call in calls[stored_calls:]:
                session.add(RunCall(run_id=run_id, seq=call.seq, model=call.model, request_hash=call.request_hash,
                                    answer=json.dumps(call.answer, ensure_ascii=False), input_tokens=call.input_tokens,
                                    output_tokens=call.output_tokens, latency_ms=call.latency_ms, at=call.at,
                                    day=call.day, user_id=user, account=account, workflow=workflow))
            row.input_tokens = sum(c.input_tokens for c in calls) if calls else row.input_tokens
            row.output_tokens = sum(c.output_tokens for c in calls) if calls else row.output_tokens
            if data is not None:
                stored = {read_key(r.dataset, r.codes.split(","), r.start, r.end, [f for f in r.fields.split(",") if f])
                          for r in session.execute(select(RunRead.dataset, RunRead.codes, RunRead.start, RunRead.end,
                                                          RunRead.fields).where(RunRead.run_id == run_id))}
                for read in data.reads.values():
                    if read.key not in stored:
                        session.add(RunRead(run_id=run_id, dataset=read.dataset, codes=",".join(read.codes),
                                            start=read.start, end=read.end, fields=",".join(read.fields),
                                            rows_hash=read.digest, rows=to_parquet(read.rows)))
        self._purge_if_due()
        return manifest_hash

    def purge(self, older_than: timedelta) -> int:
        """Drop the model calls and rows of the runs that ended more than `older_than` ago, unless an order's
        proposal or a library factor refers to them; their `runs` rows stay, marked purged (a re-run says so).
        Returns how many runs were purged."""
        cutoff = utcnow() - older_than
        with Session(self.engine) as session, session.begin():
            old = {run: thread for run, thread in session.execute(select(Run.id, Run.thread_id).where(
                Run.started_at < cutoff, Run.status.in_(ENDED)))}
            if not old:
                return 0
            ordered = {str((detail or {}).get("run")) for detail in session.scalars(
                select(OrderEvent.detail).where(OrderEvent.event == "proposed"))}
            saved = list(session.scalars(select(FactorRecord.run_key)))
            doomed = [run for run, thread in old.items()
                      if run not in ordered and not any(key.startswith(f"{thread}:") for key in saved)]
            if doomed:
                session.execute(delete(RunCall).where(RunCall.run_id.in_(doomed)))
                session.execute(delete(RunRead).where(RunRead.run_id.in_(doomed)))
                session.execute(update(Run).where(Run.id.in_(doomed)).values(status=PURGED))
        log.log(logging.INFO if doomed else logging.DEBUG, "purged the records of %d run(s) started before %s",
                len(doomed), f"{cutoff:%Y-%m-%d %H:%M}")
        return len(doomed)

    def _purge_if_due(self) -> None:
        now = time.monotonic()
        if not self.retention_days or (self._purged_at is not None and now - self._purged_at < PURGE_EVERY):
            return
        self._purged_at = now
        self.purge(timedelta(days=self.retention_days))

    def open_run(self, thread_id: str) -> str | None:
        """The run of the thread that waits on a decision, if any (a resume continues it)."""
        with Session(self.engine) as session:
            return session.scalar(select(Run.id).where(Run.thread_id == thread_id, Run.status == "waiting")
                                  .order_by(Run.started_at.desc()).limit(1))

    def get(self, run_id: str) -> RunRow | None:
        with Session(self.engine) as session:
            row = session.get(Run, run_id)
            return _row(row) if row is not None else None

    def recent(self, *, user: str | None = None, account: str | None = None, limit: int = 10) -> list[RunRow]:
        """The newest runs a person started, or of a channel."""
        query = select(Run).order_by(Run.started_at.desc()).limit(limit)
        if user is not None:
            query = query.where(Run.user_id == user)
        if account is not None:
            query = query.where(Run.account == account)
        with Session(self.engine) as session:
            return [_row(row) for row in session.scalars(query)]

    def calls(self, run_id: str) -> list[Call]:
        with Session(self.engine) as session:
            rows = session.scalars(select(RunCall).where(RunCall.run_id == run_id).order_by(RunCall.seq))
            return [Call(r.seq, r.model, r.request_hash, json.loads(r.answer), r.input_tokens, r.output_tokens,
                         r.latency_ms, r.at, r.day) for r in rows]

    def data(self, run_id: str, provider: str, price_basis: str, lookups: dict[str, Any]) -> DataRecord:
        """The run's reads back as a record a `RecordedProvider` serves."""
        record = DataRecord(provider, price_basis, lookups=lookups)
        with Session(self.engine) as session:
            for r in session.scalars(select(RunRead).where(RunRead.run_id == run_id).order_by(RunRead.id)):
                read = Read(r.dataset, tuple(r.codes.split(",")), r.start, r.end,
                            tuple(f for f in r.fields.split(",") if f), from_parquet(r.rows))
                record.reads[read.key] = read
        return record

    def reads(self, run_id: str) -> list[RunRead]:
        """The stored reads as rows (their Parquet bytes for an export)."""
        with Session(self.engine) as session:
            rows = list(session.scalars(select(RunRead).where(RunRead.run_id == run_id).order_by(RunRead.id)))
            session.expunge_all()
            return rows

    def usage(self, *, day_from: str, day_to: str, user: str | None = None,
              account: str | None = None) -> list[tuple[str | None, str, str | None, str, int, int, int]]:
        """Model usage over [day_from, day_to]: (person, channel, workflow, model, calls, tokens in, tokens out)."""
        query = (select(RunCall.user_id, RunCall.account, RunCall.workflow, RunCall.model, func.count(),
                        func.sum(RunCall.input_tokens), func.sum(RunCall.output_tokens))
                 .where(RunCall.day >= day_from, RunCall.day <= day_to)
                 .group_by(RunCall.user_id, RunCall.account, RunCall.workflow, RunCall.model))
        if user is not None:
            query = query.where(RunCall.user_id == user)
        if account is not None:
            query = query.where(RunCall.account == account)
        with self.engine.connect() as conn:
            return [(r[0], r[1], r[2], r[3], int(r[4]), int(r[5] or 0), int(r[6] or 0)) for r in conn.execute(query)]

    def spent(self, day: str, *, user: str | None = None, account: str | None = None) -> int:
        """Tokens (in and out) recorded on `day` for a person or a channel."""
        query = select(func.sum(RunCall.input_tokens + RunCall.output_tokens)).where(RunCall.day == day)
        if user is not None:
            query = query.where(RunCall.user_id == user)
        if account is not None:
            query = query.where(RunCall.account == account)
        with self.engine.connect() as conn:
            return int(conn.scalar(query) or 0)


    def record_rerun(self, run_id: str, *, live: bool, same: bool, rating: str | None, by: str | None) -> None:
        with Session(self.engine) as session, session.begin():
            session.add(RunRerun(run_id=run_id, live=live, same=same, rating=rating, by=by, at=utcnow()))

    def stability(self, run_id: str, rating: str) -> Stability | None:
        """The live re-runs of a decision rated `rating`, by the rating each gave (None: never re-run live)."""
        query = (select(RunRerun.rating, func.count()).where(RunRerun.run_id == run_id, RunRerun.live.is_(True))
                 .group_by(RunRerun.rating))
        with self.engine.connect() as conn:
            ratings = {str(r or "-"): int(n) for r, n in conn.execute(query)}
        if not ratings:
            return None
        return Stability(rating, ratings.get(rating, 0), sum(ratings.values()), ratings)

    def raised(self, day: str, user: str) -> int:
        """The tokens admins added to `user`'s budget for `day`."""
        query = select(func.sum(BudgetRaise.tokens)).where(BudgetRaise.day == day, BudgetRaise.user_id == user)
        with self.engine.connect() as conn:
            return int(conn.scalar(query) or 0)

    def raise_budget(self, user: str, day: str, tokens: int, by: str) -> None:
        """Add `tokens` to `user`'s budget for `day`, with its entry on the global audit chain."""
        with write_lock(self.engine) as session:
            lock(session, GLOBAL)
            session.add(BudgetRaise(user_id=user, day=day, tokens=tokens, raised_by=by, raised_at=utcnow()))
            record_event(session, None, None, "budget raised", by, {"user": user, "day": day, "tokens": tokens})

def _row(row: Run) -> RunRow:
    return RunRow(row.id, row.thread_id, row.user_id, row.account, row.workflow, row.text, row.status, row.day,
                  row.started_at, row.ended_at, json.loads(row.manifest), row.manifest_hash, row.input_tokens,
                  row.output_tokens)
