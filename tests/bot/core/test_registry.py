"""Thread registry, dedupe keys and the audit log (SQLite and PostgreSQL)."""

from __future__ import annotations

import time
import uuid

from sqlalchemy import Engine

from bot.stores.decisions import DecisionStore
from bot.stores.threads import MAX_KEY, AuditLog, ThreadRegistry, dedupe_key, thread_id_for


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


def test_long_dedupe_keys_are_hashed_not_truncated() -> None:
    prefix = f"msg:{uuid.uuid4()}:" + "x" * 200
    first, second = dedupe_key(prefix + "approve"), dedupe_key(prefix + "reject")
    assert len(first) == MAX_KEY and first.startswith(prefix[:90]) and first != second
    short = f"msg:C1:{uuid.uuid4()}"
    assert dedupe_key(short) == short and dedupe_key("e" * MAX_KEY) == "e" * MAX_KEY


def test_a_decision_is_audited_as_it_is_accepted(engine: Engine) -> None:
    thread = f"slack-{uuid.uuid4().hex[:8]}"
    decisions = DecisionStore(engine)
    assert decisions.accept(f"{thread}-1", thread, {"type": "approve"}, "U1", "button")
    assert decisions.accept(f"{thread}-2", thread, {"type": "reject", "message": "too big"}, "U2", "modal")
    entries = AuditLog(engine).entries(thread)
    assert [(e["action"], e["interrupt_id"]) for e in entries] == [("approve", f"{thread}-1"),
                                                                    ("reject", f"{thread}-2")]
    decided_at = decisions.get(f"{thread}-2").decided_at  # type: ignore[union-attr]
    assert entries[1]["detail"] == {"source": "modal", "decision": {"type": "reject", "message": "too big"},
                                    "reason": "too big", "decided_at": decided_at.isoformat()}
