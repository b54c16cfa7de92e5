"""What the chained decision costs (issue 38, item 1): a decision is accepted with its audit entry appended to the
global chain in the same transaction, and applied only after its entry is checked. Median per decision of
- accept: the decision row and its chained audit entry (`DecisionStore.accept`);
- check: `DecisionStore.unproven` on it (the apply's look-up);
beside the reference in the same run: the decision row alone, as accepted before the chain held decisions. Goal:
accept + check add at most GOAL_MS to a decision. On a migrated SQLite file and on PostgreSQL (QUANTDESK_TEST_PG_URL).

`python -m bench decision_record`; `run(quick=True)`: a few decisions on SQLite only, nothing judged (tests)."""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from bench import goals
from bench.pg import PostgresUnavailable, scratch_database
from bot.stores.decisions import DecisionStore
from bot.stores.records import DecisionRecord
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade
from tools.storage.models import utcnow

DECISIONS = 300
QUICK = 10
GOAL_MS = 5.0
APPROVE = {"type": "approve"}


@dataclass(frozen=True)
class Figures:
    database: str
    accept_ms: float
    check_ms: float
    reference_ms: float

    @property
    def added_ms(self) -> float:
        return self.accept_ms + self.check_ms - self.reference_ms


def _plain_row(engine: Engine) -> None:
    """The reference: the decision row alone, as it was accepted before."""
    key = uuid.uuid4().hex
    with Session(engine) as session:
        session.add(DecisionRecord(interrupt_id=key, thread_id=f"bench-{key}", decision=APPROVE, decided_by="UBENCH",
                                   source="button", attempts=0, decided_at=utcnow(), next_attempt_at=utcnow()))
        session.commit()


def measure(database: str, engine: Engine, count: int) -> Figures:
    store = DecisionStore(engine)
    accept, check, reference = [], [], []
    for _ in range(count):  # interleaved, so that both see the same database state and machine load
        key = uuid.uuid4().hex
        started = time.perf_counter()
        assert store.accept(key, f"bench-{key}", APPROVE, "UBENCH", "button")
        accepted = time.perf_counter()
        record = store.get(key)
        assert record is not None
        looked = time.perf_counter()
        assert store.unproven(record) is None
        checked = time.perf_counter()
        _plain_row(engine)
        reference.append(time.perf_counter() - checked)
        accept.append(accepted - started)
        check.append(checked - looked)
    ms = [statistics.median(values) * 1000 for values in (accept, check, reference)]
    return Figures(database, *ms)


def _migrated(url: str) -> Engine:
    engine = make_engine(url)
    upgrade(engine)
    return engine


def run(quick: bool = False) -> list[Figures]:
    count = QUICK if quick else DECISIONS
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = _migrated(f"sqlite:///{Path(tmp) / 'bench.db'}")
        figures.append(measure("SQLite", engine, count))
        engine.dispose()
    if not quick:
        try:
            with scratch_database() as url:
                engine = _migrated(url)
                figures.append(measure("PostgreSQL", engine, count))
                engine.dispose()
        except PostgresUnavailable as exc:
            print(f"  PostgreSQL skipped: {exc}")
    print(f"a decision with its chained audit entry, median of {count}; reference: the decision row alone "
          f"(before), in the same run; goal: accept + check add <= {GOAL_MS:.0f} ms")
    print(f"  {'database':12} {'accept ms':>10} {'check ms':>9} {'row alone':>10} {'added ms':>9}  goal")
    for f in figures:
        verdict = goals.judge(f"decision_record {f.database}: added <= {GOAL_MS:.0f} ms", f.added_ms <= GOAL_MS, quick)
        print(f"  {f.database:12} {f.accept_ms:10.2f} {f.check_ms:9.2f} {f.reference_ms:10.2f} {f.added_ms:9.2f}  "
              f"{verdict}")
    return figures


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
