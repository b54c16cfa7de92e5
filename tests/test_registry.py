"""Thread registry, persistent dedupe, audit log and per-thread locks (SQLite and PostgreSQL, two processes)."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import Engine

from bot.locks import ThreadLocks, _advisory_key
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
import sys
from tools.storage.db import make_engine
from bot.locks import ThreadLocks
locks = ThreadLocks(make_engine(sys.argv[1]))
print("asking", flush=True)
with locks.hold(sys.argv[2]):
    print("holding", flush=True)
    sys.stdin.readline()  # hold until the test says so
print("released", flush=True)
"""


class Holder:
    """A process that takes a thread's lock and holds it until `release()`; its lines arrive on a queue."""

    def __init__(self, db_url: str, thread: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", HOLDER, db_url, thread], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(line.strip()) for line in self.proc.stdout],
                         daemon=True).start()

    def next_line(self, timeout: float = 60.0) -> str:
        return self.lines.get(timeout=timeout)

    def release(self) -> None:
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()


def _waits_for_the_lock(db_url: str, thread: str, pid: int) -> bool:
    """Whether process `pid` is blocked on `thread`'s lock, as the lock's owner sees it: an ungranted advisory lock
    on PostgreSQL, a blocked flock (`->` in /proc/locks) on SQLite."""
    if db_url.startswith("sqlite"):
        return any(parts[1:4] == ["->", "FLOCK", "ADVISORY"] and parts[5] == str(pid)
                   for parts in map(str.split, Path("/proc/locks").read_text().splitlines()) if len(parts) > 5)
    key = _advisory_key(thread) & 0xFFFF_FFFF_FFFF_FFFF  # pg_locks shows a bigint key as two unsigned halves
    with psycopg.connect(db_url.replace("postgresql+psycopg://", "postgresql://"), autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND classid = %s "
                           "AND objid = %s AND objsubid = 1", (key >> 32, key & 0xFFFF_FFFF)).fetchone()
    return bool(row and row[0])


def test_runs_on_one_thread_are_serialised_across_processes(engine: Engine, db_url: str) -> None:
    if db_url.startswith("sqlite") and not Path("/proc/locks").exists():
        pytest.skip("needs Linux's /proc/locks to see a process blocked on a flock")
    thread = f"slack-{uuid.uuid4().hex[:8]}"
    first = Holder(db_url, thread)
    second = None
    try:
        assert [first.next_line(), first.next_line()] == ["asking", "holding"]
        second = Holder(db_url, thread)
        assert second.next_line() == "asking"
        deadline = time.monotonic() + 60
        while not _waits_for_the_lock(db_url, thread, second.proc.pid):  # blocked, not merely slow to get there
            assert second.lines.empty(), f"the second process got past the lock: {second.lines.get()}"
            assert time.monotonic() < deadline, "the second process never blocked on the lock"
            time.sleep(0.05)
        assert second.lines.empty()  # still waiting while the first holds the lock
        first.release()
        assert first.next_line() == "released"
        assert second.next_line() == "holding"  # and it gets the lock once the first lets go
        second.release()
        assert second.next_line() == "released"
    finally:
        for holder in (first, second):
            if holder is not None:
                holder.proc.kill()
                holder.proc.wait(timeout=10)


def test_other_threads_do_not_wait(engine: Engine) -> None:
    locks = ThreadLocks(engine)
    with locks.hold("slack-a"):
        started = time.perf_counter()
        with locks.hold("slack-b"):
            pass
        assert time.perf_counter() - started < 1.0
