"""Rule schedules: cron in the rule's timezone, on exchange trading days, exactly one run per tick.

The job queue's periodic tasks evaluate cron in UTC and are fixed at import, so rules are not periodic tasks.
One every-minute pass (`run_due`) evaluates each enabled rule's cron in its timezone, claims a unique
(rule_id, tick) row for each due tick (insert-or-nothing: one claimer wins across any number of workers) and
enqueues the run once. A tick is a scheduled minute, in UTC.

Trading days are exchange (Asia/Shanghai) dates: a tick whose Shanghai date is not one never runs. Crypto
rules trade every day. Ticks missed while nothing ran (a tick more than `ON_TIME` old) follow the catch-up
policy: "once" runs the latest of them once, unless an on-time tick runs anyway; "skip" runs none. Either way
the latest missed tick is recorded ("skipped" when not run) so the next pass starts after it."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from croniter import croniter
from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tools.broker.clock import SHANGHAI, trading_days, ymd
from tools.data.provider import MarketDataProvider
from tools.klines import symbol_kind
from tools.rule_store import Rule, RuleStore, aware
from tools.storage.models import utcnow
from tools.storage.rule_records import RuleTick

log = logging.getLogger(__name__)

ON_TIME = timedelta(minutes=5)  # a due tick older than this was missed (nothing ran while it was due)
MAX_DUE_TICKS = 100
MINUTE = timedelta(minutes=1)
SCHEDULED_EXECUTION = re.compile(r"^rule(\d+)-\d{8}T\d{4}Z$")  # execution_id_for's form; manual: rule{ID}-m{hex}

CatchUp = Literal["once", "skip"]
IsTradingDay = Callable[[date], bool]
Enqueue = Callable[[Rule, datetime, str], None]


@dataclass(frozen=True)
class TickPlan:
    """What to do with a rule's due ticks: run the on-time ones and the catch-up, record the skipped."""

    on_time: list[datetime] = field(default_factory=list)
    catch_up: datetime | None = None
    skipped: list[datetime] = field(default_factory=list)

    @property
    def run(self) -> list[datetime]:
        return sorted([*self.on_time, *([self.catch_up] if self.catch_up else [])])


LOST_CLAIM = timedelta(minutes=2)  # a claim this old and still not enqueued: its worker died


@dataclass(frozen=True)
class ScheduledRun:
    """A tick this worker claimed and enqueued."""

    rule_id: int
    tick: datetime
    execution_id: str
    catch_up: bool


def trading_day_checker(provider: MarketDataProvider) -> IsTradingDay:
    """`is_trading_day` from the provider's calendar, and every weekday beyond its last day (holidays past the
    calendar are not known), as the paper account's clock assumes."""

    def is_trading_day(day: date) -> bool:
        days, _note = trading_days(provider, ymd(day), 1)
        return days[0] == ymd(day)

    return is_trading_day


def due_ticks(rule: Rule, now_utc: datetime, last_seen: datetime, *, is_trading_day: IsTradingDay,
              cap: int = MAX_DUE_TICKS) -> list[datetime]:
    """The minutes in (last_seen, now] that match the rule's cron in its timezone on trading days, oldest first,
    as aware UTC; at most the latest `cap` of them."""
    if rule.schedule is None:
        return []
    every_day = symbol_kind(rule.symbol) == "crypto"
    zone = ZoneInfo(rule.timezone)
    floor = _utc(last_seen)
    cursor = (_minute(now_utc) + MINUTE).astimezone(zone)
    ticks: list[datetime] = []
    while len(ticks) < cap:
        tick = croniter(rule.schedule, cursor).get_prev(datetime).astimezone(UTC)
        if tick <= floor:
            break
        exchange_day = tick.astimezone(SHANGHAI).date()
        if every_day or is_trading_day(exchange_day):
            ticks.append(tick)
            cursor = tick.astimezone(zone)
        else:  # skip the rest of that exchange day at once
            cursor = datetime.combine(exchange_day, time(0), SHANGHAI).astimezone(zone)
    return ticks[::-1]


def plan_ticks(rule: Rule, now_utc: datetime, last_claimed: datetime | None, policy: CatchUp, *,
               is_trading_day: IsTradingDay) -> TickPlan:
    """What to run now, given the rule's last claimed (or skipped) tick: ticks within ON_TIME run; of the older
    (missed) ones, "once" runs the latest when no on-time tick runs, "skip" none."""
    since = max(moment for moment in (last_claimed, rule.scheduled_since, rule.created_at) if moment is not None)
    ticks = due_ticks(rule, now_utc, since, is_trading_day=is_trading_day)
    on_time = [tick for tick in ticks if _utc(now_utc) - tick < ON_TIME]
    missed = [tick for tick in ticks if tick not in on_time]
    catch_up = missed[-1] if missed and policy == "once" and not on_time else None
    return TickPlan(on_time, catch_up, [tick for tick in missed if tick != catch_up])


def execution_id_for(rule_id: int, tick: datetime) -> str:
    """The execution id of a scheduled run: the same for the same tick, so a re-run logs nothing twice."""
    return f"rule{rule_id}-{_utc(tick):%Y%m%dT%H%MZ}"


def scheduled_rule_id(execution_id: str) -> int | None:
    """The rule of a scheduled run's execution id (`execution_id_for`); None for any other id (a manual run's)."""
    match = SCHEDULED_EXECUTION.match(execution_id)
    return int(match.group(1)) if match else None


def claim_tick(engine: Engine, rule_id: int, tick: datetime, owner: str, at: datetime | None = None) -> bool:
    """Claim a rule's tick for `owner` at `at` (the pass's clock; default now); exactly one claimer wins, across
    processes and databases' workers."""
    return _insert_tick(engine, rule_id, tick, owner, "claimed", at)


def last_ticks(engine: Engine) -> dict[int, datetime]:
    """Each rule's latest claimed or skipped tick."""
    query = select(RuleTick.rule_id, func.max(RuleTick.tick)).group_by(RuleTick.rule_id)
    with Session(engine) as session:
        return {rule_id: aware(tick) for rule_id, tick in session.execute(query)}


def run_due(engine: Engine, store: RuleStore, now_utc: datetime, enqueue: Enqueue, owner: str, *,
            is_trading_day: IsTradingDay, catch_up: CatchUp = "once") -> list[ScheduledRun]:
    """One scheduler pass: for every enabled scheduled rule, claim each tick to run now and enqueue it once.
    A tick whose enqueue fails is released (its claim deleted) for the next pass to claim again. Returns what
    this worker enqueued."""
    known: dict[date, bool] = {}

    def trading(day: date) -> bool:  # one calendar look-up per day and pass
        if day not in known:
            known[day] = is_trading_day(day)
        return known[day]

    last = last_ticks(engine)
    runs: list[ScheduledRun] = [*_rerun_lost(engine, store, now_utc, enqueue, owner)]
    for rule in store.scheduled():
        try:
            plan = plan_ticks(rule, now_utc, last.get(rule.id), catch_up, is_trading_day=trading)
        except Exception:  # noqa: BLE001 - one rule's bad schedule must not stop every other rule's
            log.exception("rule %d: its schedule %r cannot be evaluated; skipped this pass", rule.id, rule.schedule)
            continue
        if plan.skipped and _insert_tick(engine, rule.id, plan.skipped[-1], owner, "skipped", now_utc):
            log.info("rule %d: %d missed tick(s) up to %s not run (catch-up %s)", rule.id, len(plan.skipped),
                     f"{plan.skipped[-1]:%Y-%m-%d %H:%M}Z", catch_up)
        for tick in plan.run:
            if not claim_tick(engine, rule.id, tick, owner, now_utc):
                continue
            execution_id = execution_id_for(rule.id, tick)
            try:
                enqueue(rule, tick, execution_id)
            except Exception:
                _release(engine, rule.id, tick)
                log.exception("rule %d tick %s: enqueueing the run failed; the tick was released", rule.id,
                              f"{tick:%Y-%m-%d %H:%M}Z")
                continue
            _set_status(engine, rule.id, tick, "enqueued")
            runs.append(ScheduledRun(rule.id, tick, execution_id, tick == plan.catch_up))
            log.info("rule %d tick %s enqueued as %s%s by %s", rule.id, f"{tick:%Y-%m-%d %H:%M}Z", execution_id,
                     " (catch-up)" if tick == plan.catch_up else "", owner)
    return runs


def _rerun_lost(engine: Engine, store: RuleStore, now_utc: datetime, enqueue: Enqueue, owner: str,
                ) -> list[ScheduledRun]:
    """Ticks claimed more than LOST_CLAIM ago and never enqueued (their worker died between the claim and the
    enqueue): one worker takes each over and enqueues it, under the same execution id."""
    cutoff = _utc(now_utc) - LOST_CLAIM
    with Session(engine) as session:
        lost = session.execute(select(RuleTick.rule_id, RuleTick.tick).where(
            RuleTick.status == "claimed", RuleTick.claimed_at < cutoff)).all()
    runs = []
    for rule_id, tick in lost:
        with engine.begin() as connection:
            taken = connection.execute(update(RuleTick).where(
                RuleTick.rule_id == rule_id, RuleTick.tick == tick, RuleTick.status == "claimed",
                RuleTick.claimed_at < cutoff).values(claimed_at=_utc(now_utc), claimed_by=owner)).rowcount == 1
        rule = store.get(rule_id) if taken else None
        if rule is None or not rule.enabled:
            continue
        execution_id = execution_id_for(rule_id, aware(tick))
        try:
            enqueue(rule, aware(tick), execution_id)
        except Exception:
            log.exception("rule %d: re-enqueueing a lost tick failed; a later pass tries again", rule_id)
            continue
        _set_status(engine, rule_id, aware(tick), "enqueued")
        log.warning("rule %d tick %s was claimed but never enqueued; enqueued now as %s", rule_id,
                    f"{aware(tick):%Y-%m-%d %H:%M}Z", execution_id)
        runs.append(ScheduledRun(rule_id, aware(tick), execution_id, True))
    return runs


def _insert_tick(engine: Engine, rule_id: int, tick: datetime, owner: str, status: str,
                 at: datetime | None = None) -> bool:
    """Insert-or-nothing on the unique (rule_id, tick); True when this call inserted the row."""
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    moment = _minute(tick)
    statement = insert(RuleTick).values(
        rule_id=rule_id, tick=moment, claimed_at=_utc(at) if at is not None else utcnow(), claimed_by=owner,
        execution_id=execution_id_for(rule_id, moment) if status == "claimed" else None, status=status,
    ).on_conflict_do_nothing(index_elements=["rule_id", "tick"]).returning(RuleTick.rule_id)
    try:
        with engine.begin() as connection:
            return connection.execute(statement).first() is not None
    except IntegrityError:  # the rule was deleted since the pass read it
        log.info("rule %d is gone; tick %s not %s", rule_id, f"{moment:%Y-%m-%d %H:%M}Z", status)
        return False


def _set_status(engine: Engine, rule_id: int, tick: datetime, status: str) -> None:
    with engine.begin() as connection:
        connection.execute(update(RuleTick).where(RuleTick.rule_id == rule_id, RuleTick.tick == _minute(tick))
                           .values(status=status))


def _release(engine: Engine, rule_id: int, tick: datetime) -> None:
    with engine.begin() as connection:
        connection.execute(delete(RuleTick).where(RuleTick.rule_id == rule_id, RuleTick.tick == _minute(tick)))


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{moment} has no timezone: schedule times must be aware")
    return moment.astimezone(UTC)


def _minute(moment: datetime) -> datetime:
    return _utc(moment).replace(second=0, microsecond=0)
