"""Rule schedules: cron in the rule's timezone on trading days, missed ticks, and one run per tick across workers."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from sqlalchemy import Engine, select

from testkit.rules import add_scheduled
from tools.data.local import LocalProvider
from tools.rules.records import RuleTick
from tools.rules.schedule import (
    TickPlan,
    claim_tick,
    due_ticks,
    next_tick,
    plan_ticks,
    run_due,
    trading_day_checker,
)
from tools.rules.store import Rule, RuleStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade

NEW_YEAR = date(2024, 1, 1)  # a Monday, and an exchange holiday


def _utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)


def weekdays(day: date) -> bool:
    return day.weekday() < 5


def open_but_new_year(day: date) -> bool:
    return day.weekday() < 5 and day != NEW_YEAR


def _rule(schedule: str, timezone: str = "Asia/Shanghai", symbol: str = "600519.SH") -> Rule:
    since = _utc(2023, 12, 1)
    return Rule(id=1, symbol=symbol, source="llm", requirements="buy when close > ma(30)", owner="UOWNER",
                channel="C1", runtime_status={"position": 0}, schedule=schedule, timezone=timezone,
                scheduled_since=since, enabled=True, size=None, value_cny=None, threshold=0.6, account=None,
                consecutive_failures=0, paused_reason=None, created_at=since, updated_at=since)


class _Clock:
    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


class _Enqueued:
    """A thread-safe enqueue callable that records (rule id, tick, execution id), and which starts were `again`;
    it fails (ConnectionError) while `broken`."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, datetime, str]] = []
        self.again: list[str] = []
        self.broken = False
        self._lock = threading.Lock()

    def __call__(self, rule: Rule, tick: datetime, execution_id: str, again: bool) -> None:
        if self.broken:
            raise ConnectionError("queue unreachable")
        with self._lock:
            self.calls.append((rule.id, tick, execution_id))
            if again:
                self.again.append(execution_id)


@pytest.fixture(params=["sqlite", "postgres"])
def iso_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A database of this test's own (the scheduler pass reads every rule in it)."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'rules.db'}"
    return request.getfixturevalue("fresh_pg_url")


@pytest.fixture
def iso_engine(iso_url: str) -> Iterator[Engine]:
    engine = make_engine(iso_url)
    upgrade(engine)
    yield engine
    engine.dispose()


def _ticks(engine: Engine, rule_id: int) -> list[tuple[datetime, str]]:
    with engine.connect() as connection:
        rows = connection.execute(select(RuleTick.tick, RuleTick.status).where(RuleTick.rule_id == rule_id)
                                  .order_by(RuleTick.tick)).all()
    return [(tick.replace(tzinfo=UTC) if tick.tzinfo is None else tick.astimezone(UTC), status)
            for tick, status in rows]


def test_cron_is_read_in_the_rules_timezone() -> None:
    last, now = _utc(2024, 1, 2, 12), _utc(2024, 1, 4, 12)  # Tuesday noon to Thursday noon, UTC
    shanghai, utc = _rule("30 9 * * 1-5"), _rule("30 9 * * 1-5", "UTC")
    assert due_ticks(shanghai, now, last, is_trading_day=weekdays) == [_utc(2024, 1, 3, 1, 30),
                                                                       _utc(2024, 1, 4, 1, 30)]
    assert due_ticks(utc, now, last, is_trading_day=weekdays) == [_utc(2024, 1, 3, 9, 30), _utc(2024, 1, 4, 9, 30)]
    # the tick's own minute is due from its first second, not before
    assert due_ticks(shanghai, _utc(2024, 1, 3, 1, 30), last, is_trading_day=weekdays) == [_utc(2024, 1, 3, 1, 30)]
    assert due_ticks(shanghai, _utc(2024, 1, 3, 1, 29, 59), last, is_trading_day=weekdays) == []
    new_york = _rule("0 9 * * *", "America/New_York")  # daylight saving time moves it in UTC
    assert due_ticks(new_york, _utc(2024, 7, 2, 14), _utc(2024, 7, 2), is_trading_day=weekdays) == [
        _utc(2024, 7, 2, 13)]
    assert due_ticks(new_york, _utc(2024, 1, 2, 15), _utc(2024, 1, 2), is_trading_day=weekdays) == [
        _utc(2024, 1, 2, 14)]


def test_no_ticks_on_days_the_exchange_is_closed() -> None:
    last, now = _utc(2023, 12, 29, 12), _utc(2024, 1, 2, 12)  # Friday noon to Tuesday noon
    assert due_ticks(_rule("30 9 * * *"), now, last, is_trading_day=open_but_new_year) == [_utc(2024, 1, 2, 1, 30)]
    # trading days are Shanghai dates: 21:00 in New York on New Year's Day is 10:00 on 2 January in Shanghai
    evening = _rule("0 21 * * *", "America/New_York")
    assert due_ticks(evening, now, last, is_trading_day=lambda day: day != date(2024, 1, 2)) == [
        _utc(2023, 12, 30, 2), _utc(2023, 12, 31, 2), _utc(2024, 1, 1, 2)]
    crypto = _rule("0 8 * * *", symbol="BTC/USDT")  # crypto trades every day
    assert due_ticks(crypto, now, last, is_trading_day=open_but_new_year) == [
        _utc(2023, 12, 30), _utc(2023, 12, 31), _utc(2024, 1, 1), _utc(2024, 1, 2)]


def test_due_ticks_keep_the_latest_up_to_the_cap() -> None:
    every_minute = _rule("* * * * *")
    last, now = _utc(2024, 1, 2, 1), _utc(2024, 1, 2, 1, 59, 30)
    assert due_ticks(every_minute, now, last, is_trading_day=weekdays, cap=3) == [
        _utc(2024, 1, 2, 1, 57), _utc(2024, 1, 2, 1, 58), _utc(2024, 1, 2, 1, 59)]
    assert len(due_ticks(every_minute, now, last, is_trading_day=weekdays)) == 59


def test_trading_days_come_from_the_provider_calendar_then_weekdays(tmp_path: Path) -> None:
    rows = [{"ts_code": "600000.SH", "trade_date": d, "open": 10.0, "high": 10.5, "low": 9.5, "close": 10.0,
             "pre_close": 10.0, "vol": 1000.0, "amount": 1000.0} for d in ("20240927", "20240930", "20241008")]
    pd.DataFrame(rows).to_csv(tmp_path / "daily.csv", index=False)
    is_trading_day = trading_day_checker(LocalProvider(tmp_path))
    assert [is_trading_day(day) for day in (date(2024, 9, 30), date(2024, 10, 1), date(2024, 10, 7),
                                            date(2024, 10, 8))] == [True, False, False, True]
    # beyond the data: weekdays
    assert [is_trading_day(day) for day in (date(2024, 10, 9), date(2024, 10, 12))] == [True, False]


def test_ticks_missed_while_down_run_once_or_not_at_all() -> None:
    hourly = _rule("0 * * * *")
    last = _utc(2024, 1, 2, 2)  # 10:00 in Shanghai; then down for three hours, back at 13:20
    missed = [_utc(2024, 1, 2, 3), _utc(2024, 1, 2, 4), _utc(2024, 1, 2, 5)]
    now = _utc(2024, 1, 2, 5, 20)
    assert plan_ticks(hourly, now, last, "once", is_trading_day=weekdays) == TickPlan([], missed[-1], missed[:2])
    assert plan_ticks(hourly, now, last, "skip", is_trading_day=weekdays) == TickPlan([], None, missed)
    back_on_time = _utc(2024, 1, 2, 5, 0, 40)  # back within the 13:00 tick's minutes: it runs, on time
    assert plan_ticks(hourly, back_on_time, last, "once", is_trading_day=weekdays) == TickPlan(
        [missed[-1]], None, missed[:2])
    assert plan_ticks(hourly, back_on_time, last, "once", is_trading_day=weekdays).run == [missed[-1]]


@pytest.mark.parametrize("policy", ["once", "skip"])
def test_run_due_after_three_hours_down(iso_engine: Engine, policy: str) -> None:
    clock = _Clock(_utc(2024, 1, 2, 1))  # 09:00 in Shanghai
    store = RuleStore(iso_engine, frozenset(), clock=clock)
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(30)", "0 * * * *")
    store.add("UOWNER", "C1", "000001.SZ", "on demand only")
    paused = add_scheduled(store, "UOWNER", "C1", "000002.SZ", "paused", "0 * * * *")
    store.pause(paused.id, "UOWNER")
    enqueued = _Enqueued()

    runs = run_due(iso_engine, store, _utc(2024, 1, 2, 2, 0, 20), enqueued, "w1", is_trading_day=weekdays,
                   catch_up=policy)
    assert [(r.rule_id, r.tick, r.execution_id, r.catch_up) for r in runs] == [
        (rule.id, _utc(2024, 1, 2, 2), f"rule{rule.id}-20240102T0200Z", False)]
    assert run_due(iso_engine, store, _utc(2024, 1, 2, 2, 1, 20), enqueued, "w1", is_trading_day=weekdays,
                   catch_up=policy) == []

    back = run_due(iso_engine, store, _utc(2024, 1, 2, 5, 20), enqueued, "w1", is_trading_day=weekdays,
                   catch_up=policy)
    expected_back = [(rule.id, _utc(2024, 1, 2, 5), f"rule{rule.id}-20240102T0500Z", True)] if policy == "once" \
        else []
    assert [(r.rule_id, r.tick, r.execution_id, r.catch_up) for r in back] == expected_back
    assert run_due(iso_engine, store, _utc(2024, 1, 2, 5, 21), enqueued, "w2", is_trading_day=weekdays,
                   catch_up=policy) == []
    later = run_due(iso_engine, store, _utc(2024, 1, 2, 6, 0, 10), enqueued, "w2", is_trading_day=weekdays,
                    catch_up=policy)
    assert [(r.tick, r.catch_up) for r in later] == [(_utc(2024, 1, 2, 6), False)]

    assert [(rule_id, tick) for rule_id, tick, _ in enqueued.calls] == [
        (rule.id, _utc(2024, 1, 2, 2)), *[(r[0], r[1]) for r in expected_back], (rule.id, _utc(2024, 1, 2, 6))]
    recorded = {"once": [(_utc(2024, 1, 2, 2), "enqueued"), (_utc(2024, 1, 2, 4), "skipped"),
                         (_utc(2024, 1, 2, 5), "enqueued"), (_utc(2024, 1, 2, 6), "enqueued")],
                "skip": [(_utc(2024, 1, 2, 2), "enqueued"), (_utc(2024, 1, 2, 5), "skipped"),
                         (_utc(2024, 1, 2, 6), "enqueued")]}
    assert _ticks(iso_engine, rule.id) == recorded[policy]
    assert _ticks(iso_engine, paused.id) == []


def test_a_failed_start_is_started_again_by_the_next_pass_marked_again(iso_engine: Engine) -> None:
    """The start failed (it may have rooted the thread before the queue refused): the tick stays "failed", and the
    next pass starts it again with `again`, so the starter looks for that root before posting another."""
    clock = _Clock(_utc(2024, 1, 2, 1, 29, 30))
    store = RuleStore(iso_engine, frozenset(), clock=clock)
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(30)", "30 9 * * 1-5")
    enqueued = _Enqueued()
    enqueued.broken = True
    assert run_due(iso_engine, store, _utc(2024, 1, 2, 1, 30, 5), enqueued, "w1", is_trading_day=weekdays) == []
    assert _ticks(iso_engine, rule.id) == [(_utc(2024, 1, 2, 1, 30), "failed")]
    enqueued.broken = False
    runs = run_due(iso_engine, store, _utc(2024, 1, 2, 1, 31, 5), enqueued, "w2", is_trading_day=weekdays)
    assert [(r.tick, r.catch_up) for r in runs] == [(_utc(2024, 1, 2, 1, 30), False)]
    assert enqueued.calls == [(rule.id, _utc(2024, 1, 2, 1, 30), f"rule{rule.id}-20240102T0130Z")]
    assert enqueued.again == [f"rule{rule.id}-20240102T0130Z"]
    assert _ticks(iso_engine, rule.id) == [(_utc(2024, 1, 2, 1, 30), "enqueued")]
    assert run_due(iso_engine, store, _utc(2024, 1, 2, 1, 32, 5), enqueued, "w1", is_trading_day=weekdays) == []


def test_a_failed_tick_is_not_started_late_once_a_newer_tick_of_the_rule_ran(iso_engine: Engine) -> None:
    """The 09:30 start failed; the 09:31 tick was enqueued (the queue came back). Past its on-time window the
    09:30 tick is recorded skipped, not run after a newer decision of the rule, even under catch-up "once"."""
    clock = _Clock(_utc(2024, 1, 2, 1, 29, 30))
    store = RuleStore(iso_engine, frozenset(), clock=clock)
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(30)", "30,31 9 * * 1-5")
    enqueued = _Enqueued()
    enqueued.broken = True
    run_due(iso_engine, store, _utc(2024, 1, 2, 1, 30, 5), enqueued, "w1", is_trading_day=weekdays)
    enqueued.broken = False
    with iso_engine.begin() as connection:  # the 09:31 tick was started by another process meanwhile
        connection.execute(RuleTick.__table__.insert().values(
            rule_id=rule.id, tick=_utc(2024, 1, 2, 1, 31), claimed_at=_utc(2024, 1, 2, 1, 31, 2), claimed_by="w9",
            execution_id=f"rule{rule.id}-20240102T0131Z", status="enqueued"))
    assert run_due(iso_engine, store, _utc(2024, 1, 2, 1, 40, 5), enqueued, "w2", is_trading_day=weekdays,
                   catch_up="once") == []
    assert enqueued.calls == []
    assert _ticks(iso_engine, rule.id) == [(_utc(2024, 1, 2, 1, 30), "skipped"), (_utc(2024, 1, 2, 1, 31), "enqueued")]


@pytest.mark.parametrize("policy", ["once", "skip"])
def test_starts_failing_for_an_hour_run_like_missed_ticks(iso_engine: Engine, policy: str) -> None:
    """Every minute's start fails for an hour (the queue is down): once it is back, the ticks still on time run,
    and of the older ones at most the latest (catch-up "once") or none ("skip"); the rest are recorded skipped,
    not run an hour late one by one."""
    clock = _Clock(_utc(2024, 1, 2, 1, 0, 30))
    store = RuleStore(iso_engine, frozenset(), clock=clock)
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(30)", "* * * * *")
    enqueued = _Enqueued()
    enqueued.broken = True
    minutes = [_utc(2024, 1, 2, 1, 1) + timedelta(minutes=i) for i in range(60)]
    for minute in minutes:
        run_due(iso_engine, store, minute + timedelta(seconds=5), enqueued, "w1", is_trading_day=weekdays,
                catch_up=policy)
    failing = [tick for tick, status in _ticks(iso_engine, rule.id) if status == "failed"]
    assert failing == minutes[-5:]  # retried each pass while on time; older ones already recorded skipped
    enqueued.broken = False
    back = minutes[-1] + timedelta(minutes=1, seconds=5)  # 02:01:05: ticks after 01:56:05 are on time
    runs = run_due(iso_engine, store, back, enqueued, "w1", is_trading_day=weekdays, catch_up=policy)
    on_time = minutes[-4:]  # 01:57 .. 02:00 restarted, then 02:01 claimed as usual
    assert sorted(r.tick for r in runs) == [*on_time, _utc(2024, 1, 2, 2, 1)]
    assert not any(r.catch_up for r in runs)  # an on-time tick runs: no catch-up
    statuses = dict(_ticks(iso_engine, rule.id))
    assert [t for t in minutes if statuses[t] == "skipped"] == minutes[:-4]


@pytest.mark.parametrize("separate_engines", [False, True], ids=["threads", "engines"])
def test_two_workers_enqueue_each_tick_once(iso_url: str, separate_engines: bool) -> None:
    first = make_engine(iso_url)
    upgrade(first)
    engines = [first, make_engine(iso_url) if separate_engines else first]
    clock = _Clock(_utc(2024, 1, 2, 1, 29, 30))
    rule = add_scheduled(RuleStore(first, frozenset(), clock=clock), "UOWNER", "C1", "600519.SH",
                         "buy when close > ma(30)", "* * * * *")
    minutes = [_utc(2024, 1, 2, 1, 30) + timedelta(minutes=i) for i in range(20)]
    enqueued = _Enqueued()
    barrier = threading.Barrier(2)
    errors: list[BaseException] = []

    def worker(engine: Engine, name: str) -> None:
        store = RuleStore(engine, frozenset(), clock=clock)
        try:
            for minute in minutes:
                barrier.wait(timeout=60)  # both workers see the same minute at the same moment
                run_due(engine, store, minute + timedelta(seconds=2), enqueued, name, is_trading_day=weekdays)
        except BaseException as exc:
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=worker, args=(engine, f"w{i}")) for i, engine in enumerate(engines)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for engine in set(engines):
        engine.dispose()
    assert errors == []
    assert sorted(tick for _, tick, _ in enqueued.calls) == minutes
    assert {rule_id for rule_id, _, _ in enqueued.calls} == {rule.id}


def test_a_tick_claimed_by_a_worker_that_died_is_enqueued_once_by_another(iso_engine: Engine) -> None:
    """A worker claimed the tick and died before enqueueing it: after LOST_CLAIM one later pass enqueues it, under
    the same execution id, and no pass after that runs it again."""
    engine = iso_engine
    store = RuleStore(engine, frozenset(), clock=lambda: datetime(2026, 11, 20, 0, 0, tzinfo=UTC))
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(5)", "30 9 * * 1-5",
                         source="language")
    tick = datetime(2026, 11, 23, 1, 30, tzinfo=UTC)
    assert claim_tick(engine, rule.id, tick, "dead-worker", at=datetime(2026, 11, 23, 1, 30, 5, tzinfo=UTC))
    seen: list[tuple[int, datetime, str, bool]] = []

    def enqueue(r: Rule, t: datetime, execution_id: str, again: bool) -> None:
        seen.append((r.id, t, execution_id, again))

    def run(at: datetime) -> None:
        run_due(engine, store, at, enqueue, "live-worker", is_trading_day=lambda _d: True)

    run(datetime(2026, 11, 23, 1, 31, 0, tzinfo=UTC))  # within LOST_CLAIM: the claimer may still be at work
    assert seen == []
    run(datetime(2026, 11, 23, 1, 33, 0, tzinfo=UTC))
    run(datetime(2026, 11, 23, 1, 34, 0, tzinfo=UTC))
    # `again`: the dead worker may have rooted the thread already, so the starter looks before posting
    assert seen == [(rule.id, tick, f"rule{rule.id}-20261123T0130Z", True)]


def test_a_lost_tick_of_a_rule_paused_and_resumed_since_is_not_started(iso_engine: Engine) -> None:
    clock = _Clock(datetime(2026, 11, 20, 0, 0, tzinfo=UTC))
    store = RuleStore(iso_engine, frozenset(), clock=clock)
    rule = add_scheduled(store, "UOWNER", "C1", "600519.SH", "buy when close > ma(5)", "30 9 * * 1-5")
    tick = datetime(2026, 11, 23, 1, 30, tzinfo=UTC)
    assert claim_tick(iso_engine, rule.id, tick, "dead-worker", at=tick + timedelta(seconds=5))
    clock.now = tick + timedelta(minutes=1)
    store.pause(rule.id, "UOWNER")
    store.resume(rule.id, "UOWNER")
    enqueued = _Enqueued()
    assert run_due(iso_engine, store, tick + timedelta(minutes=3), enqueued, "w1", is_trading_day=weekdays) == []
    assert enqueued.calls == [] and _ticks(iso_engine, rule.id) == [(tick, "skipped")]


def test_next_tick_skips_to_the_next_trading_day_in_shanghai_time() -> None:
    rule = _rule("30 14 * * 1-5")
    # Friday 2023-12-29 15:00 Shanghai: past Friday's 14:30; the weekend and New Year's Day (Monday) are closed
    assert next_tick(rule, _utc(2023, 12, 29, 7, 0), is_trading_day=open_but_new_year) == _utc(2024, 1, 2, 6, 30)
    # before the day's tick it is that day's: 14:30 Shanghai is 06:30 UTC
    assert next_tick(rule, _utc(2024, 1, 3, 1, 0), is_trading_day=weekdays) == _utc(2024, 1, 3, 6, 30)
    assert next_tick(_rule("30 14 * * 1-5", timezone="America/New_York"), _utc(2024, 1, 3, 1, 0),
                     is_trading_day=weekdays) == _utc(2024, 1, 3, 19, 30)  # 14:30 New York (EST)


def test_next_tick_is_none_without_a_schedule_or_a_trading_day() -> None:
    assert next_tick(replace(_rule("30 14 * * 1-5"), schedule=None), _utc(2024, 1, 3), is_trading_day=weekdays) is None
    assert next_tick(_rule("30 14 * * 1-5"), _utc(2024, 1, 3), is_trading_day=lambda day: False) is None
