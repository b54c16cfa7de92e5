"""Durable decisions and posts (ARCHITECTURE.md, "One path for every human decision") on SQLite and PostgreSQL:
the first decision wins, one claimant
applies it, infrastructure failures back off and give up, a human Retry makes it due again."""

from __future__ import annotations

import uuid
from datetime import timedelta

import pytest
from sqlalchemy import Engine

from bot.stores.decisions import BACKOFF_SECONDS, CLAIM_SECONDS, MAX_ATTEMPTS, DecisionStore
from bot.stores.posts import PostStore
from tools.storage.models import utcnow

APPROVE = {"type": "approve"}


def mine(rows: list, thread: str) -> list:
    """The rows of this test's thread (the PostgreSQL database is shared by the session's tests)."""
    return [r for r in rows if r.thread_id == thread]


@pytest.fixture
def ids() -> tuple[str, str]:
    """An interrupt id and a post key of this test's own (the PostgreSQL database lives for the session)."""
    tag = uuid.uuid4().hex[:8]
    return f"int-{tag}", f"result:t-{tag}:cp"


def test_the_first_decision_wins_and_keeps_the_hitl_shape(engine: Engine, ids: tuple[str, str]) -> None:
    iid, key = ids
    store = DecisionStore(engine)
    assert store.accept(iid, iid, APPROVE, "UALICE", "button")
    assert not store.accept(iid, iid, {"type": "reject", "message": "no"}, "UBOB", "modal")
    record = store.get(iid)
    assert record is not None and record.decision == APPROVE and record.decided_by == "UALICE"
    assert record.source == "button" and not record.applied and record.outcome is None
    with pytest.raises(ValueError, match="source"):
        store.accept(iid + "b", iid, APPROVE, "UALICE", "carrier pigeon")


def test_one_claimant_at_a_time_until_the_claim_lapses(engine: Engine, ids: tuple[str, str]) -> None:
    iid, key = ids
    store = DecisionStore(engine)
    store.accept(iid, iid, APPROVE, "UALICE", "button")
    now = utcnow()
    assert store.claim(iid, "host-a:1", now)
    assert not store.claim(iid, "host-b:2", now + timedelta(seconds=1))
    assert [d.interrupt_id for d in mine(store.due(now + timedelta(seconds=1)), iid)] == []  # held by a live worker
    later = now + timedelta(seconds=CLAIM_SECONDS + 1)  # host-a died: its claim lapses
    assert [d.interrupt_id for d in mine(store.due(later), iid)] == [iid]
    assert store.claim(iid, "host-b:2", later)
    store.mark_applied(iid)
    assert store.get(iid).applied and not store.claim(iid, "host-b:2", later)  # type: ignore[union-attr]
    assert mine(store.due(later), iid) == [] and mine(store.stuck(), iid) == []


def test_infrastructure_failures_back_off_then_give_up_and_a_retry_makes_it_due_again(
        engine: Engine, ids: tuple[str, str]) -> None:
    iid, key = ids
    store = DecisionStore(engine)
    store.accept(iid, iid, APPROVE, "UALICE", "button")
    now = utcnow()
    assert store.mark_retry(iid, "database down", now) == 1
    assert mine(store.due(now + timedelta(seconds=BACKOFF_SECONDS[0] - 1)), iid) == []
    assert [d.attempts for d in mine(store.due(now + timedelta(seconds=BACKOFF_SECONDS[0] + 1)), iid)] == [1]
    for attempt in range(2, MAX_ATTEMPTS + 1):
        assert store.mark_retry(iid, f"down {attempt}", now) == attempt
    record = store.get(iid)
    assert record.outcome == "failed" and record.last_error == f"down {MAX_ATTEMPTS}"  # type: ignore[union-attr]
    assert mine(store.due(now + timedelta(days=1)), iid) == []
    assert [d.interrupt_id for d in mine(store.stuck(), iid)] == [iid]  # what /quant status shows
    assert store.retry(iid) and not store.retry(iid)
    assert [d.attempts for d in mine(store.due(utcnow() + timedelta(seconds=1)), iid)] == [0]


def test_a_graph_failure_is_final_until_retried(engine: Engine, ids: tuple[str, str]) -> None:
    iid, key = ids
    store = DecisionStore(engine)
    store.accept(iid, iid, APPROVE, "UALICE", "button")
    store.mark_failed(iid, "KeyError in the graph")
    assert mine(store.due(utcnow() + timedelta(days=1)), iid) == []
    assert store.get(iid).outcome == "failed"  # type: ignore[union-attr]


def test_posts_are_recorded_once_and_listed_until_slack_accepts_them(engine: Engine, ids: tuple[str, str]) -> None:
    iid, key = ids
    posts = PostStore(engine)
    first, created = posts.record(iid, iid, "interrupt")
    again, created_again = posts.record(iid, iid, "interrupt")
    assert created and not created_again and first == again and first.ts is None
    posts.record(key, iid, "result", {"workflow": "signal", "result": {"x": 1}})
    posts.mark_failed(iid, "ratelimited")
    assert [(p.key, p.attempts, p.last_error) for p in mine(posts.unposted(), iid)] == [
        (iid, 1, "ratelimited"), (key, 0, None)]
    posts.mark_posted(iid, "1700000001.000100")  # the message is there; what goes with it (files) is not yet
    assert [p.key for p in mine(posts.unposted(), iid)] == [iid, key]
    posts.mark_complete(iid)
    assert [p.key for p in mine(posts.unposted(), iid)] == [key]
    stored = posts.get(key)
    assert stored is not None and stored.body == {"workflow": "signal", "result": {"x": 1}} and not stored.complete
