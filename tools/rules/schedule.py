"""Rule schedules: cron in the rule's timezone, on exchange trading days, exactly one run per tick.

The job queue's periodic tasks evaluate cron in UTC and are fixed at import, so rules are not periodic tasks.
One every-minute pass (`run_due`) evaluates each enabled rule's cron in its timezone, claims a unique
(rule_id, tick) row for each due tick (insert-or-nothing: one claimer wins across any number of workers) and
enqueues the run once. A tick is a scheduled minute, in UTC.

Trading days are exchange (Asia/Shanghai) dates: a tick whose Shanghai date is not one never runs. Crypto
rules trade every day. Ticks missed while nothing ran (a tick more than `ON_TIME` old) follow the catch-up
policy: "once" runs the latest of them once, unless an on-time tick runs anyway; "skip" runs none. Either way
the latest missed tick is recorded ("skipped" when not run) so the next pass starts after it.

Starting a run (`Enqueue`) roots its thread in Slack, then queues it: two steps nothing makes atomic, and Slack
has no idempotency key. A tick whose start failed ("failed") or whose worker died mid-start (still "claimed"
after LOST_CLAIM) is unfinished: a later pass takes it over and starts it again with `again` set, so the starter
looks for the root an earlier attempt may have posted before posting one. Unfinished ticks follow the same
rules as missed ones: started again while on time, later under the catch-up policy ("once": the rule's latest).

On static data a trader moves a simulated session clock (tools/broker/sim_clock.py): `run_session` runs each
rule's ticks on the session the clock was moved to (its cron in its timezone that day), claimed once in the same
tick table, for rules scheduled before the move; a move older than ON_TIME is caught up by the same policy."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Literal
from zoneinfo import ZoneInfo

from croniter import croniter
from sqlalchemy import Engine, and_, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tools.broker.clock import SHANGHAI
from tools.data.klines import symbol_kind
from tools.data.provider import MarketDataProvider
from tools.rules.records import RuleTick
from tools.rules.store import Rule, RuleStore, aware
from tools.storage.models import utcnow

log = logging.getLogger(__name__)

ON_TIME = timedelta(minutes=5)  # a due tick older than this was missed (nothing ran while it was due)
MAX_DUE_TICKS = 100
MINUTE = timedelta(minutes=1)
SCHEDULED_EXECUTION = re.compile(r"^rule(\d+)-(\d{8}T\d{4}Z)$")  # execution_id_for's form; manual: rule{ID}-m{hex}

CatchUp = Literal["once", "skip"]
IsTradingDay = Callable[[date], bool]
Enqueue = Callable[[Rule, datetime, str, bool], None]  # (rule, tick, execution id, again): root the thread, queue it


@dataclass(frozen=True)
class TickPlan:
    """What to do with a rule's due ticks: run the on-time ones and the catch-up, record the skipped."""

    on_time: list[datetime] = field(default_factory=list)
    catch_up: datetime | None = None
    skipped: list[datetime] = field(default_factory=list)

    @property
    def run(self) -> list[datetime]:
        return sorted([*self.on_time, *([self.catch_up] if self.catch_up else [])])


LOST_CLAIM = timedelta(minutes=2)  # a claim this old and still not enqueued: its worker died mid-start


@dataclass(frozen=True)
class ScheduledRun:
    """A tick this worker claimed and enqueued."""

    rule_id: int
    tick: datetime
    execution_id: str
    catch_up: bool


def trading_day_checker(provider: MarketDataProvider) -> IsTradingDay:
    """`is_trading_day` from the provider's trading calendar, the paper account clock's (weekdays past its
    horizon)."""
    return provider.trading_calendar.is_session


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


def scheduled_tick(execution_id: str) -> datetime | None:
    """The tick (aware UTC) a scheduled run's execution id carries; None for any other id (a manual run's)."""
    match = SCHEDULED_EXECUTION.match(execution_id)
    return datetime.strptime(match.group(2), "%Y%m%dT%H%MZ").replace(tzinfo=UTC) if match else None


def stale_tick(rule: Rule, tick: datetime) -> bool:
    """Whether a queued run of `tick` must not run any more: a rule's ticks at or before its `scheduled_since`
    never run, and resuming the rule (or setting its schedule) moves that past every tick queued before."""
    return rule.scheduled_since is not None and _utc(tick) <= rule.scheduled_since


def claim_tick(engine: Engine, rule_id: int, tick: datetime, owner: str, at: datetime | None = None) -> bool:
    """Claim a rule's tick for `owner` at `at` (the pass's clock; default now); exactly one claimer wins, across
    processes and databases' workers."""
    return _insert_tick(engine, rule_id, tick, owner, "claimed", at)


def last_ticks(engine: Engine) -> dict[int, datetime]:
    """Each rule's latest recorded tick, whatever its status: the next plan starts after it."""
    query = select(RuleTick.rule_id, func.max(RuleTick.tick)).group_by(RuleTick.rule_id)
    with Session(engine) as session:
        return {rule_id: aware(tick) for rule_id, tick in session.execute(query)}


@dataclass(frozen=True)
class SessionTick:
    """A rule's tick on a simulated session; `claimed_at`: when a pass ran (or skipped) it, None while unclaimed."""

    rule: Rule
    tick: datetime
    claimed_at: datetime | None

    @property
    def claimed(self) -> bool:
        return self.claimed_at is not None

    def ran_before(self, moved_at: datetime) -> bool:
        """Claimed before the clock moved at `moved_at`: an earlier move's run, not this one's (which a pass may
        have claimed the moment the move was stored)."""
        return self.claimed_at is not None and self.claimed_at < _utc(moved_at)


def session_ticks(engine: Engine, store: RuleStore, session: date, moved_at: datetime,
                  serves: Callable[[str], bool] = lambda channel: True) -> list[SessionTick]:
    """The ticks on exchange day `session` of each enabled rule scheduled before the clock moved there at
    `moved_at` (and whose channel this worker `serves`), oldest first per rule."""
    start = datetime.combine(session, time(0), SHANGHAI) - MINUTE
    found: list[SessionTick] = []
    for rule in store.scheduled():
        since = rule.scheduled_since or rule.created_at
        if not serves(rule.channel) or since > _utc(moved_at):
            continue
        try:
            ticks = due_ticks(rule, start + timedelta(days=1), start, is_trading_day=lambda day: True)
        except Exception:  # noqa: BLE001 - one rule's bad schedule must not stop every other rule's
            log.exception("rule %d: its schedule %r cannot be evaluated", rule.id, rule.schedule)
            continue
        if not ticks:
            continue
        with Session(engine) as db:
            query = select(RuleTick.tick, RuleTick.claimed_at).where(RuleTick.rule_id == rule.id,
                                                                     RuleTick.tick.in_(ticks))
            claimed = {aware(tick): aware(at) for tick, at in db.execute(query)}
        found += [SessionTick(rule, tick, claimed.get(tick)) for tick in ticks]
    return found


def run_session(engine: Engine, store: RuleStore, session: date, moved_at: datetime, now_utc: datetime,
                enqueue: Enqueue, owner: str, *, catch_up: CatchUp = "once",
                serves: Callable[[str], bool] = lambda channel: True) -> list[ScheduledRun]:
    """The scheduler pass of a simulated session: claim and start each unclaimed tick of `session_ticks` once.
    A move older than ON_TIME was missed: "once" runs each rule's latest tick of the session, "skip" none (the
    rest are recorded "skipped")."""
    late = _utc(now_utc) - _utc(moved_at) >= ON_TIME
    at = max(_utc(now_utc), _utc(moved_at))  # a claim of this move's ticks is never dated before the move
    due: dict[int, list[SessionTick]] = {}
    for found in session_ticks(engine, store, session, moved_at, serves):
        if not found.claimed:
            due.setdefault(found.rule.id, []).append(found)
    runs: list[ScheduledRun] = []
    for ticks in due.values():
        chosen = ticks if not late else ticks[-1:] if catch_up == "once" else []
        for found in ticks:
            if found not in chosen:
                _insert_tick(engine, found.rule.id, found.tick, owner, "skipped", at)
            elif claim_tick(engine, found.rule.id, found.tick, owner, at):
                runs += _start(engine, found.rule, found.tick, enqueue, owner, again=False, catch_up=late)
    return runs


def run_due(engine: Engine, store: RuleStore, now_utc: datetime, enqueue: Enqueue, owner: str, *,
            is_trading_day: IsTradingDay, catch_up: CatchUp = "once",
            serves: Callable[[str], bool] = lambda channel: True) -> list[ScheduledRun]:
    """One scheduler pass: start the unfinished ticks again, then, for every enabled scheduled rule, claim each
    tick to run now and start it once. A tick whose start fails stays claimed as "failed" for a later pass.
    `serves`: whether this worker's surface owns a rule's channel (a rule saved in the console runs there, one saved
    in Slack runs in Slack); other rules' ticks are left to theirs. Returns what this worker started."""
    known: dict[date, bool] = {}

    def trading(day: date) -> bool:  # one calendar look-up per day and pass
        if day not in known:
            known[day] = is_trading_day(day)
        return known[day]

    runs = _restart_unfinished(engine, store, now_utc, enqueue, owner, catch_up, serves)
    last = last_ticks(engine)
    for rule in store.scheduled():
        if not serves(rule.channel):
            continue
        try:
            plan = plan_ticks(rule, now_utc, last.get(rule.id), catch_up, is_trading_day=trading)
        except Exception:  # noqa: BLE001 - one rule's bad schedule must not stop every other rule's
            log.exception("rule %d: its schedule %r cannot be evaluated; skipped this pass", rule.id, rule.schedule)
            continue
        if plan.skipped and _insert_tick(engine, rule.id, plan.skipped[-1], owner, "skipped", now_utc):
            log.info("rule %d: %d missed tick(s) up to %s not run (catch-up %s)", rule.id, len(plan.skipped),
                     f"{plan.skipped[-1]:%Y-%m-%d %H:%M}Z", catch_up)
        for tick in plan.run:
            if claim_tick(engine, rule.id, tick, owner, now_utc):
                runs += _start(engine, rule, tick, enqueue, owner, again=False, catch_up=tick == plan.catch_up)
    return runs


def _start(engine: Engine, rule: Rule, tick: datetime, enqueue: Enqueue, owner: str, *, again: bool,
           catch_up: bool) -> list[ScheduledRun]:
    """Start a claimed tick's run; on failure the tick is left "failed" for a later pass."""
    execution_id = execution_id_for(rule.id, tick)
    try:
        enqueue(rule, tick, execution_id, again)
    except Exception:
        _set_status(engine, rule.id, tick, "failed")
        log.exception("rule %d tick %s: starting the run failed; a later pass starts it again", rule.id,
                      f"{tick:%Y-%m-%d %H:%M}Z")
        return []
    _set_status(engine, rule.id, tick, "enqueued")
    log.info("rule %d tick %s enqueued as %s%s by %s", rule.id, f"{tick:%Y-%m-%d %H:%M}Z", execution_id,
             " (catch-up)" if catch_up else " (again)" if again else "", owner)
    return [ScheduledRun(rule.id, tick, execution_id, catch_up)]


def _restart_unfinished(engine: Engine, store: RuleStore, now_utc: datetime, enqueue: Enqueue, owner: str,
                        policy: CatchUp, serves: Callable[[str], bool]) -> list[ScheduledRun]:
    """Ticks claimed and never enqueued: their start failed, or their worker died mid-start (claimed more than
    LOST_CLAIM ago). One worker takes each over, on the same execution id, and starts it again while it is on
    time; a later one under the catch-up policy ("once": only the rule's latest); the rest, the ticks older than
    a tick of the rule that was enqueued since, and the ticks of a rule paused, unscheduled or resumed since, are
    recorded "skipped"."""
    now, cutoff = _utc(now_utc), _utc(now_utc) - LOST_CLAIM
    unfinished = or_(RuleTick.status == "failed", and_(RuleTick.status == "claimed", RuleTick.claimed_at < cutoff))
    with Session(engine) as session:
        rows = session.execute(select(RuleTick.rule_id, RuleTick.tick).where(unfinished)
                               .order_by(RuleTick.rule_id, RuleTick.tick)).all()
        if not rows:  # the usual pass: nothing to start again, and nothing more to read
            return []
        newest = {rule_id: aware(tick) for rule_id, tick in session.execute(
            select(RuleTick.rule_id, func.max(RuleTick.tick))
            .where(RuleTick.status == "enqueued", RuleTick.rule_id.in_({r for r, _ in rows}))
            .group_by(RuleTick.rule_id)).all()}
    ticks: dict[int, list[datetime]] = {}
    for rule_id, tick in rows:
        ticks.setdefault(rule_id, []).append(aware(tick))
    runs: list[ScheduledRun] = []
    for rule_id, found in ticks.items():
        rule = store.get(rule_id)
        if rule is not None and not serves(rule.channel):
            continue
        ran_since = newest.get(rule_id)  # a newer tick of the rule ran: an older one is not started late
        live = [] if rule is None or not (rule.enabled and rule.schedule) else \
            [tick for tick in found if not stale_tick(rule, tick) and (ran_since is None or tick > ran_since)]
        on_time = [tick for tick in live if now - tick < ON_TIME]
        again = on_time or (live[-1:] if policy == "once" else [])
        for tick in found:
            status = "claimed" if tick in again else "skipped"
            with engine.begin() as connection:
                taken = connection.execute(update(RuleTick).where(
                    RuleTick.rule_id == rule_id, RuleTick.tick == tick, unfinished,
                ).values(status=status, claimed_at=now, claimed_by=owner)).rowcount == 1
            if not taken or rule is None:
                continue
            if status == "skipped":
                log.info("rule %d tick %s was never enqueued and is not run now", rule_id, f"{tick:%Y-%m-%d %H:%M}Z")
                continue
            log.warning("rule %d tick %s was claimed but never enqueued; starting it again", rule_id,
                        f"{tick:%Y-%m-%d %H:%M}Z")
            runs += _start(engine, rule, tick, enqueue, owner, again=True, catch_up=tick not in on_time)
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


def _utc(moment: datetime) -> datetime:
    if moment.tzinfo is None:
        raise ValueError(f"{moment} has no timezone: schedule times must be aware")
    return moment.astimezone(UTC)


def _minute(moment: datetime) -> datetime:
    return _utc(moment).replace(second=0, microsecond=0)


def next_tick(rule: Rule, now_utc: datetime, *, is_trading_day: IsTradingDay,
              horizon_days: int = 31) -> datetime | None:
    """The rule's next cron minute after `now_utc` on a trading day (aware UTC), or None: no schedule, or none
    within `horizon_days`."""
    if rule.schedule is None:
        return None
    every_day = symbol_kind(rule.symbol) == "crypto"
    zone = ZoneInfo(rule.timezone)
    cursor = _minute(now_utc).astimezone(zone)
    limit = _utc(now_utc) + timedelta(days=horizon_days)
    while True:
        tick = croniter(rule.schedule, cursor).get_next(datetime).astimezone(UTC)
        if tick > limit:
            return None
        exchange_day = tick.astimezone(SHANGHAI).date()
        if every_day or is_trading_day(exchange_day):
            return tick
        cursor = datetime.combine(exchange_day + timedelta(days=1), time(0), SHANGHAI).astimezone(zone) - MINUTE
