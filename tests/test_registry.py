"""Thread registry, persistent dedupe, audit log and per-thread locks (SQLite and PostgreSQL, two processes)."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid

from sqlalchemy import Engine

from bot.locks import ThreadLocks
from bot.registry import AuditLog, Deduper, ThreadRegistry, thread_id_for


def _ts() -> str:
    return f"{time.time():.6f}{uuid.uuid4().hex[:4]}"


def test_thread_ids_are_stable_and_persisted(engine: Engine) -> None:
    registry = ThreadRegistry(engine)
    ts = _ts()
    info, created = registry.open("T1", "C1", ts, "U1", "signal")
    again, created_again = ThreadRegistry(engine).open("T1", "C1", ts, "U2")
    assert created and not created_again
    assert info.thread_id == again.thread_id == thread_id_for("T1", "C1", ts)
    assert again.user_id == "U1" and again.workflow == "signal"
    assert registry.open("T1", "C2", ts, "U1")[0].thread_id != info.thread_id


def test_status_and_pending_interrupts(engine: Engine) -> None:
    registry = ThreadRegistry(engine)
    info, _ = registry.open("T1", "C1", _ts(), "U9")
    registry.update(info.thread_id, status="waiting", pending={"int-1": {"ts": "123.4", "kind": "clarify"}})
    assert registry.get(info.thread_id).pending == {"int-1": {"ts": "123.4", "kind": "clarify"}}
    assert [t.thread_id for t in registry.threads_of("U9")] == [info.thread_id]
    registry.update(info.thread_id, status="done", pending={})
    assert registry.threads_of("U9") == []


def test_dedupe_claims_once_across_instances(engine: Engine) -> None:
    key = f"event:{uuid.uuid4()}"
    assert Deduper(engine).claim(key)
    assert not Deduper(engine).claim(key)
    assert not Deduper(engine).claim(key)


def test_long_keys_are_hashed_not_truncated(engine: Engine) -> None:
    prefix = f"action:{uuid.uuid4()}:" + "x" * 200
    first, second = prefix + "approve", prefix + "reject"
    deduper = Deduper(engine)
    assert deduper.claim(first) and deduper.claim(second)
    assert not deduper.claim(first) and not deduper.claim(second)
    stored = Deduper.stored_key(first)
    assert len(stored) == Deduper.MAX_KEY and stored.startswith(prefix[:100]) and stored != Deduper.stored_key(second)
    short = f"event:{uuid.uuid4()}"
    assert Deduper.stored_key(short) == short and Deduper.stored_key("e" * 200) == "e" * 200


def test_concurrent_claims_have_one_winner(engine: Engine) -> None:
    key = f"decision:{uuid.uuid4()}"
    wins: list[bool] = []
    threads = [threading.Thread(target=lambda: wins.append(Deduper(engine).claim(key))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(wins) == [False] * 7 + [True]


def test_audit_log(engine: Engine) -> None:
    audit = AuditLog(engine)
    thread = f"slack-{uuid.uuid4().hex[:8]}"
    audit.record(thread, "U1", "approve", "int-1", {"note": "ok"})
    audit.record(thread, "U2", "reject", "int-2")
    assert [e["action"] for e in audit.entries(thread)] == ["approve", "reject"]
    assert audit.entries(thread)[0]["detail"] == {"note": "ok"}


HOLDER = """
import sys, time
from tools.storage.db import make_engine
from bot.locks import ThreadLocks
locks = ThreadLocks(make_engine(sys.argv[1]))
with locks.hold(sys.argv[2]):
    print(f"{time.time():.6f}", flush=True)
    time.sleep(1.0)
    print(f"{time.time():.6f}", flush=True)
"""


def test_runs_on_one_thread_are_serialised_across_processes(engine: Engine, db_url: str) -> None:
    thread = f"slack-{uuid.uuid4().hex[:8]}"
    procs = [subprocess.Popen([sys.executable, "-c", HOLDER, db_url, thread], stdout=subprocess.PIPE, text=True)
             for _ in range(2)]
    spans = []
    for proc in procs:
        out, _ = proc.communicate(timeout=60)
        start, end = map(float, out.split())
        spans.append((start, end))
    spans.sort()
    assert spans[0][1] <= spans[1][0], spans  # the second started only after the first released


def test_other_threads_do_not_wait(engine: Engine) -> None:
    locks = ThreadLocks(engine)
    with locks.hold("slack-a"):
        started = time.perf_counter()
        with locks.hold("slack-b"):
            pass
        assert time.perf_counter() - started < 1.0
