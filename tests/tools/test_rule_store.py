"""Saved rules and execution logs: CRUD, validation, ownership, idempotent step logs, auto-pause, migrations."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Constraint, Engine, Index, Table, insert, inspect, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from testkit.rules import add_scheduled
from tools.broker.records import OrderEvent
from tools.rules.records import ExecutionLog
from tools.rules.store import GateRefused, RuleError, RuleStore
from tools.storage.db import make_engine
from tools.storage.migrate import current_revision, downgrade, upgrade
from tools.storage.models import Base

RULE_TABLES = {"saved_rules", "execution_logs", "rule_ticks", "rule_overrides"}
T0 = datetime(2024, 1, 2, 1, 0, tzinfo=UTC)


class _Clock:
    """A settable clock for the store."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> _Clock:
    return _Clock(T0)


@pytest.fixture
def store(engine: Engine, clock: _Clock) -> RuleStore:
    return RuleStore(engine, frozenset({"UADMIN"}), max_failures=3, clock=clock)


@pytest.fixture
def channel() -> str:
    return f"C{uuid.uuid4().hex[:10]}"


def test_add_get_and_list(store: RuleStore, channel: str, clock: _Clock) -> None:
    saved = store.add("UOWNER", channel, " 600519.sh ", "  buy when close > ma(30)  ", source="language",
                      value_cny="10000.50", threshold=0.7, account="alpha")
    assert (saved.schedule, saved.scheduled_since, saved.verdict) == (None, None, None)  # saved unscheduled
    clock.now = T0 + timedelta(minutes=1)
    rule = store.update_schedule(saved.id, "UOWNER", "30  9 * * 1-5", anyway="a test of the fields")
    other = store.add("UOTHER", channel, "btc-usdt", "buy the dip", size=2)
    assert store.get(rule.id) == rule
    assert (rule.symbol, rule.source, rule.requirements, rule.owner, rule.channel) == (
        "600519.SH", "language", "buy when close > ma(30)", "UOWNER", channel)
    assert (rule.schedule, rule.timezone, rule.scheduled_since, rule.enabled) == (
        "30 9 * * 1-5", "Asia/Shanghai", T0 + timedelta(minutes=1), True)
    assert (rule.size, rule.value_cny, rule.threshold, rule.account) == (None, Decimal("10000.50"), 0.7, "alpha")
    assert (rule.runtime_status, rule.consecutive_failures, rule.paused_reason) == ({"position": 0}, 0, None)
    assert (rule.created_at, rule.updated_at) == (T0, T0 + timedelta(minutes=1))
    assert (other.symbol, other.size, other.value_cny, other.threshold, other.schedule, other.scheduled_since) == (
        "BTC/USDT", 2, None, 0.6, None, None)
    assert [r.id for r in store.list(channel=channel)] == [rule.id, other.id]
    assert [r.id for r in store.list(channel=channel, owner="UOTHER")] == [other.id]
    assert store.get(other.id + 1000) is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"symbol": "600519"}, "'600519' needs its exchange suffix: 600519.SH (Shanghai), 600519.SZ (Shenzhen) or "
                           "600519.BJ (Beijing)"),
    ({"timezone": "Mars/Olympus"}, "unknown timezone 'Mars/Olympus': use an IANA name like Asia/Shanghai or UTC"),
    ({"size": 100, "value_cny": 5000}, "give the order size in shares (size=) or in CNY (value=), not both"),
    ({"size": 0}, "size= is a whole number of shares from 1 to 100,000,000, not 0"),
    ({"size": 10**20}, "size= is a whole number of shares from 1 to 100,000,000, not 100000000000000000000"),
    ({"value_cny": "10.001"}, "value= is an amount in CNY above 0 and at most 100,000,000,000, with at most two "
                              "decimals, not '10.001'"),
    ({"value_cny": "lots"}, "value= is an amount in CNY above 0 and at most 100,000,000,000, with at most two "
                            "decimals, not 'lots'"),
    ({"value_cny": "1e30"}, "value= is an amount in CNY above 0 and at most 100,000,000,000, with at most two "
                            "decimals, not '1e30'"),
    ({"threshold": 1.5}, "threshold is the confidence a decision needs, between 0 and 1, not 1.5"),
    ({"threshold": float("nan")}, "threshold is the confidence a decision needs, between 0 and 1, not nan"),
    ({"source": "python"}, "a rule's source is 'llm' (requirements in words) or 'language' (the rule language), "
                           "not 'python'"),
    ({"requirements": "   "}, "a rule needs its requirements: when to buy, when to sell"),
])
def test_add_refuses_bad_fields(store: RuleStore, channel: str, kwargs: dict, message: str) -> None:
    fields = {"symbol": "600519.SH", "requirements": "buy low"} | kwargs
    with pytest.raises(RuleError) as caught:
        store.add("UOWNER", channel, fields.pop("symbol"), fields.pop("requirements"), **fields)
    assert str(caught.value).startswith(message)
    assert store.list(channel=channel) == []


@pytest.mark.parametrize(("cron", "message"), [
    ("30 9 * *", "schedule '30 9 * *' is not a cron expression: give five fields, minute hour day month weekday, like "
                 "'30 9 * * 1-5' (09:30 on weekdays)"),
    ("0 30 9 * * 1-5", "schedule '0 30 9 * * 1-5' is not a cron expression"),
    ("61 9 * * *", "schedule '61 9 * * *' is not a cron expression"),
    ("0 0 31 2 *", "schedule '0 0 31 2 *' never fires (no such date): check the day and month fields"),
])
def test_a_schedule_that_is_not_cron_is_refused(store: RuleStore, channel: str, cron: str, message: str) -> None:
    rule = store.add("UOWNER", channel, "600519.SH", "buy low")
    with pytest.raises(RuleError) as caught:
        store.update_schedule(rule.id, "UOWNER", cron, anyway="a reason")
    assert str(caught.value).startswith(message) and store.overrides(rule.id) == []


def test_a_schedule_needs_a_passing_verdict_or_a_reason_kept_and_audited(store: RuleStore, channel: str,
                                                                           engine: Engine) -> None:
    """The gate in the store, whoever calls it: without a passing verdict and without a reason nothing changes;
    with a reason the override is kept and chained in the same transaction; a passing verdict needs none; off,
    pause and resume never ask."""
    rule = store.add("UOWNER", channel, "600519.SH", "buy when close > ma(30)", source="language")
    for anyway in (None, "", "   "):
        with pytest.raises(GateRefused) as refused:
            store.update_schedule(rule.id, "UOWNER", "30 9 * * 1-5", anyway=anyway)
        assert refused.value.rule.verdict is None
    failed = {"passed": False, "holdout": {"in_sample": 0.5, "holdout": -0.2, "ok": False},
              "dsr": {"probability": 0.4, "threshold": 0.95, "ok": False}}
    store.set_verdict(rule.id, failed)
    with pytest.raises(GateRefused) as refused:
        store.update_schedule(rule.id, "UADMIN", "30 9 * * 1-5")
    assert refused.value.rule.verdict == failed and store.get(rule.id).schedule is None  # type: ignore[union-attr]
    over = store.update_schedule(rule.id, "UADMIN", "30 9 * * 1-5", anyway="  the desk wants it live  ")
    assert over.schedule == "30 9 * * 1-5"
    (kept,) = store.overrides(rule.id)
    assert (kept.by, kept.reason, kept.schedule, kept.timezone, kept.verdict, kept.at) == (
        "UADMIN", "the desk wants it live", "30 9 * * 1-5", "Asia/Shanghai", failed, T0)
    with Session(engine) as session:
        (event,) = [e for e in session.scalars(select(OrderEvent).where(OrderEvent.event == "scheduled anyway"))
                    if e.detail["rule"] == rule.id]
    assert (event.actor, event.account, event.detail["reason"], event.detail["verdict"]) == (
        "UADMIN", None, "the desk wants it live", failed)
    assert store.update_schedule(rule.id, "UOWNER", None).schedule is None
    assert store.pause(rule.id, "UOWNER").enabled is False and store.resume(rule.id, "UOWNER").enabled
    store.set_verdict(rule.id, {**failed, "passed": True})
    assert store.update_schedule(rule.id, "UOWNER", "0 10 * * 1-5").schedule == "0 10 * * 1-5"
    assert len(store.overrides(rule.id)) == 1  # a passing verdict needs no reason, and none is kept


def test_only_the_owner_or_an_admin_may_change_or_delete(store: RuleStore, channel: str, clock: _Clock) -> None:
    rule = store.add("UOWNER", channel, "000001.SZ", "buy when rsi(14) < 30")
    refused = (f"rule {rule.id} belongs to UOWNER: only its owner or an admin (`roles` lists them) may change or "
               "delete it")
    for change in (lambda: store.update_schedule(rule.id, "UOTHER", "0 10 * * *"),
                   lambda: store.pause(rule.id, "UOTHER"), lambda: store.resume(rule.id, "UOTHER"),
                   lambda: store.delete(rule.id, "UOTHER")):
        with pytest.raises(RuleError) as caught:
            change()
        assert str(caught.value) == refused
    assert store.get(rule.id) == rule

    clock.now = T0 + timedelta(hours=1)
    scheduled = store.update_schedule(rule.id, "UOWNER", "0 10 * * 1-5", "UTC", anyway="on the owner's word")
    assert (scheduled.schedule, scheduled.timezone, scheduled.scheduled_since) == (
        "0 10 * * 1-5", "UTC", T0 + timedelta(hours=1))
    paused = store.pause(rule.id, "UADMIN", "earnings week")
    assert (paused.enabled, paused.paused_reason) == (False, "earnings week")
    assert rule.id not in [r.id for r in store.scheduled()]
    clock.now = T0 + timedelta(hours=2)
    resumed = store.resume(rule.id, "UOWNER")
    assert (resumed.enabled, resumed.paused_reason, resumed.scheduled_since) == (True, None, T0 + timedelta(hours=2))
    assert store.update_schedule(rule.id, "UADMIN", None).scheduled_since is None
    assert store.pause(rule.id, "UOWNER").paused_reason == "paused by UOWNER"
    store.delete(rule.id, "UADMIN")
    assert store.get(rule.id) is None
    with pytest.raises(RuleError, match=f"^there is no rule {rule.id}$"):
        store.delete(rule.id, "UOWNER")


def test_log_step_is_idempotent_on_execution_and_step(store: RuleStore, channel: str, clock: _Clock,
                                                      engine: Engine) -> None:
    rule = store.add("UOWNER", channel, "600519.SH", "buy when close > ma(30)")
    execution = f"exec-{uuid.uuid4().hex[:8]}"
    fetch = {"type": "tool_call", "step": 1, "action": {"tool_name": "get_kline_data", "params": {"limit": 100}}}
    assert store.log_step(rule.id, "600519.SH", execution, 1, "tool_call", fetch, {"bars": 100}) is True
    clock.now = T0 + timedelta(seconds=5)
    assert store.log_step(rule.id, "600519.SH", execution, 1, "tool_call", {"rewritten": True}, None) is False
    ma = {"type": "calculation", "step": 2, "intermediate_result": {"ma30": 1702.5}}
    assert store.log_step(rule.id, "600519.SH", execution, 2, "calculation", ma) is True
    clock.now = T0 + timedelta(seconds=9)
    decision = {"type": "decision", "step": 3, "action": {"action": "buy", "confidence": 0.75}}
    assert store.log_step(rule.id, "600519.SH", execution, 3, "decision", decision, {"proposed": True}) is True
    assert store.log_step(rule.id, "600519.SH", execution, 3, "decision", decision, {"proposed": True}) is False

    steps = store.steps(rule.id, execution)
    assert [(s.step, s.action_type, s.action_data, s.result_data, s.timestamp) for s in steps] == [
        (1, "tool_call", fetch, {"bars": 100}, T0),
        (2, "calculation", ma, None, T0 + timedelta(seconds=5)),
        (3, "decision", decision, {"proposed": True}, T0 + timedelta(seconds=9)),
    ]
    with pytest.raises(IntegrityError), engine.begin() as connection:  # the database itself refuses a duplicate
        connection.execute(insert(ExecutionLog).values(
            rule_id=rule.id, symbol="600519.SH", execution_id=execution, step=2, action_type="calculation",
            action_data={}, timestamp=T0))

    later = f"exec-{uuid.uuid4().hex[:8]}"
    clock.now = T0 + timedelta(minutes=1)
    assert store.log_step(rule.id, "600519.SH", later, 1, "tool_call", fetch) is True
    assert [(s.execution_id, s.step) for s in store.steps(rule.id)] == [
        (execution, 1), (execution, 2), (execution, 3), (later, 1)]
    assert [(e.execution_id, e.started_at, e.finished_at, e.steps, e.decision)
            for e in store.executions(rule.id)] == [
        (later, T0 + timedelta(minutes=1), T0 + timedelta(minutes=1), 1, None),
        (execution, T0, T0 + timedelta(seconds=9), 3, decision),
    ]
    with pytest.raises(RuleError, match="^a step number is a whole number from 1, not 0$"):
        store.log_step(rule.id, "600519.SH", later, 0, "tool_call", fetch)
    with pytest.raises(RuleError, match=f"^there is no rule {rule.id + 1000}$"):
        store.log_step(rule.id + 1000, "600519.SH", f"exec-{uuid.uuid4().hex[:8]}", 1, "tool_call", fetch)

    store.delete(rule.id, "UOWNER")  # the logs go with the rule
    assert store.steps(rule.id) == []


def test_consecutive_failures_pause_the_rule(store: RuleStore, channel: str) -> None:
    rule = add_scheduled(store, "UOWNER", channel, "600519.SH", "buy when close > ma(30)", "30 9 * * 1-5")
    assert store.record_failure(rule.id, "data provider timed out") is False
    store.record_success(rule.id)
    assert store.get(rule.id).consecutive_failures == 0
    assert store.record_failure(rule.id, "data provider timed out") is False
    assert store.record_failure(rule.id, "data provider timed out") is False
    assert store.get(rule.id).consecutive_failures == 2
    assert store.record_failure(rule.id, "model returned no JSON") is True
    paused = store.get(rule.id)
    assert (paused.enabled, paused.consecutive_failures, paused.paused_reason) == (
        False, 3, "paused after 3 consecutive failures; last: model returned no JSON")
    assert rule.id not in [r.id for r in store.scheduled()]
    assert store.record_failure(rule.id, "again") is False  # already paused: paused once, told once
    resumed = store.resume(rule.id, "UOWNER")
    assert (resumed.enabled, resumed.consecutive_failures, resumed.paused_reason) == (True, 0, None)
    store.set_runtime_status(rule.id, {"position": 100, "last_action": "buy"})
    assert store.get(rule.id).runtime_status == {"position": 100, "last_action": "buy"}
    with pytest.raises(RuleError, match=f"^there is no rule {rule.id + 1000}$"):
        store.record_failure(rule.id + 1000, "x")


def test_models_and_migrations_agree(engine: Engine) -> None:
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True,
                                                               "compare_server_default": True})
        differences = compare_metadata(context, Base.metadata)
    assert [d for d in differences if _table_of(d) in RULE_TABLES] == []


def test_migration_0008_up_and_down(db_url: str) -> None:
    engine = make_engine(db_url)
    upgrade(engine)
    downgrade(engine, "0007")
    assert current_revision(engine) == "0007"
    assert not RULE_TABLES & set(inspect(engine).get_table_names())
    upgrade(engine)
    assert set(inspect(engine).get_table_names()) >= RULE_TABLES
    assert {c["name"] for c in inspect(engine).get_columns("execution_logs")} == {
        "id", "rule_id", "symbol", "execution_id", "step", "action_type", "action_data", "result_data", "timestamp"}
    engine.dispose()


def _table_of(difference: tuple | list) -> str:
    """The table an autogenerate difference is about (modify_* differences come as lists of tuples)."""
    item = difference[0] if isinstance(difference, list) else difference
    target = item[1]
    if isinstance(target, Table):
        return target.name
    if isinstance(target, Index | Constraint):
        return target.table.name
    return item[2]  # add_column, remove_column, modify_*: (kind, schema, table, ...)
