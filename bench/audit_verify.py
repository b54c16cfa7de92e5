"""`quantdesk audit verify` over 100,000 chained entries (issue 38, item 3): ten paper accounts' chains of order
events, written as the writers chain them (each entry's hashes, each head signed with Ed25519), then verified as the
command does: every chain walked with its rows, the head signatures checked with the public key, completeness
(paper_accounts, paper_orders), the state replay (tools/audit/replay.py) and a witness file holding every head.
Goal: at most GOAL_SECONDS. On a migrated SQLite file and on PostgreSQL (QUANTDESK_TEST_PG_URL).

`python -m bench audit_verify`; `run(quick=True)`: 2,000 entries on SQLite only, nothing judged (tests)."""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from sqlalchemy import Engine, insert, select

import bot.stores.records  # noqa: F401 - the audited tables
from bench import goals
from bench.pg import PostgresUnavailable, scratch_database
from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.completeness import missing
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.replay import differences
from tools.audit.signing import key_id, sign
from tools.audit.verify import Keys, verify
from tools.audit.witness import WitnessFile, current_heads, read_file, witness_problems
from tools.broker.records import OrderEvent, PaperAccount
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade
from tools.storage.models import utcnow

ENTRIES = 100_000
QUICK = 2_000
ACCOUNTS = 10
GOAL_SECONDS = 10.0
BATCH = 5_000


@dataclass(frozen=True)
class Figures:
    database: str
    entries: int
    seconds: float
    cpu_seconds: float  # this process's CPU time: the wall time less what other processes took of the machine


def build(engine: Engine, entries: int, key: Ed25519PrivateKey) -> None:
    """`entries` order events over ACCOUNTS accounts, each chained and its chain's head signed."""
    start = utcnow() - timedelta(days=1)
    with engine.begin() as connection:
        connection.execute(insert(PaperAccount), [
            {"name": f"b{n}", "starting_cash_fen": 10**9, "cash_fen": 10**9, "reserved_fen": 0, "created_by": "UB"}
            for n in range(ACCOUNTS)])
        rows = [{"client_order_id": None, "account": f"b{i}", "event": "account opened", "actor": "UB",
                 "detail": {"starting_cash_fen": 10**9}, "at": start} for i in range(ACCOUNTS)]
        rows += [{"client_order_id": f"b:{i}", "account": f"b{i % ACCOUNTS}", "event": "proposed", "actor": "UB",
                  "detail": {"quantity": 100 * (i % 7 + 1)}, "at": start + timedelta(milliseconds=i + 1)}
                 for i in range(entries - ACCOUNTS)]
        for first in range(0, entries, BATCH):
            connection.execute(insert(OrderEvent), rows[first:first + BATCH])
        written = connection.execute(select(OrderEvent).order_by(OrderEvent.id)).mappings().all()
        heads: dict[str, tuple[int, str]] = {}
        chain_rows: list[dict[str, Any]] = []
        for row in written:
            chain = f"account:{row['account']}"
            seq, prev = heads.get(chain, (0, GENESIS))
            digest = row_hash("order_events", dict(row))
            this = entry_hash(chain, seq + 1, "order_events", row["id"], digest, prev, row["at"])
            chain_rows.append({"chain": chain, "seq": seq + 1, "source": "order_events", "source_id": row["id"],
                               "row_hash": digest, "prev_hash": prev, "hash": this, "at": row["at"]})
            heads[chain] = (seq + 1, this)
        for first in range(0, len(chain_rows), BATCH):
            connection.execute(insert(ChainEntry), chain_rows[first:first + BATCH])
        connection.execute(insert(ChainHead), [
            {"chain": chain, "seq": seq, "hash": this, "signature": sign(key, chain, seq, this), "updated_at": utcnow()}
            for chain, (seq, this) in heads.items()])


def measure(database: str, engine: Engine, entries: int, witness: Path) -> Figures:
    key = Ed25519PrivateKey.generate()
    build(engine, entries, key)
    WitnessFile(witness).publish(current_heads(engine))
    keys = Keys({key_id(key.public_key()): key.public_key()})
    started, cpu = time.perf_counter(), time.process_time()
    reports, strays = verify(engine, keys)
    absent = list(missing(engine))
    changed = list(differences(engine))
    problems, _newest = witness_problems(engine, read_file(witness), keys.check)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    assert not strays and not absent and not changed and not problems and all(r.problem is None for r in reports)
    assert sum(r.entries for r in reports) == entries and all(r.signature.valid for r in reports)
    return Figures(database, entries, seconds, cpu)


def _migrated(url: str) -> Engine:
    engine = make_engine(url)
    upgrade(engine)
    return engine


def run(quick: bool = False) -> list[Figures]:
    entries = QUICK if quick else ENTRIES
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        engine = _migrated(f"sqlite:///{Path(tmp) / 'bench.db'}")
        figures.append(measure("SQLite", engine, entries, Path(tmp) / "sqlite.jsonl"))
        engine.dispose()
        if not quick:
            try:
                with scratch_database() as url:
                    engine = _migrated(url)
                    figures.append(measure("PostgreSQL", engine, entries, Path(tmp) / "pg.jsonl"))
                    engine.dispose()
            except PostgresUnavailable as exc:
                print(f"  PostgreSQL skipped: {exc}")
    print(f"audit verify over {entries:,} chained entries in {ACCOUNTS} chains (walk, signatures, completeness, "
          f"state replay, witness); goal <= {GOAL_SECONDS:.0f} s")
    for f in figures:
        verdict = goals.judge(f"audit_verify {f.database}: <= {GOAL_SECONDS:.0f} s", f.seconds <= GOAL_SECONDS, quick)
        print(f"  {f.database:12} {f.entries:>9,} entries {f.seconds:7.2f} s ({f.cpu_seconds:.2f} s CPU)  {verdict}")
    return figures


def main(quick: bool = False) -> None:
    run(quick)


if __name__ == "__main__":
    main()
