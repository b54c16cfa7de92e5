"""Saved execution rules and their step logs (seed 002) on the application database.

A rule belongs to the user who saved it: only that owner, or a user in QUANTDESK_ADMINS, may change, pause or
delete it. Runs call `log_step` for every step as it happens; it is idempotent on (execution_id, step), so a node
that re-runs on resume writes nothing twice. `record_failure` pauses a rule after `max_failures` consecutive
failed runs. A rule's orders carry its tag (`order_tag`): its position is what they filled, and it is the
proposer whose one order card at a time tools.broker.proposal_claims keeps.

The gate: a rule is saved unscheduled, and `update_schedule` sets a schedule only when the verdict of its latest
backtest (`set_verdict`) passed, or with a person's reason (`anyway`): then the override is kept with the rule and
chained on the global audit trail as a `scheduled anyway` event, in the same transaction as the schedule."""

from __future__ import annotations

import builtins
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import CroniterBadDateError, croniter
from sqlalchemy import Engine, delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from tools.audit.chain import GLOBAL, lock
from tools.broker.store import record_event, write_lock
from tools.data.klines import KlineError, symbol_kind
from tools.i18n import _
from tools.rules.records import ExecutionLog, RuleOverride, SavedRule
from tools.storage.models import utcnow

log = logging.getLogger(__name__)

DEFAULT_TIMEZONE = "Asia/Shanghai"
DEFAULT_THRESHOLD = 0.6
SOURCES = ("llm", "language")
MAX_REQUIREMENTS = 8000
_WIDTHS = {"owner": 64, "channel": 64, "account": 64, "execution_id": 64, "action_type": 32}
_FEN = Decimal("0.01")

Source = Literal["llm", "language"]
SCHEDULED_ANYWAY = "scheduled anyway"  # the audit event (order_events.event holds 16 characters)


class RuleError(ValueError):
    """A rule request that cannot be done; the message says why, for the user."""


class GateRefused(RuleError):
    """A schedule the gate refuses: the rule is in words (it cannot be backtested), has no backtest yet, or the
    verdict of its latest backtest failed (`verdict`); the caller says which, and the way forward."""

    def __init__(self, rule: Rule) -> None:
        super().__init__(f"rule {rule.id}: the gate refuses a schedule without a reason")
        self.rule = rule


@dataclass(frozen=True)
class Rule:
    """A saved rule as stored. `value_cny` is the order value (CNY, to the fen) when sized by value."""

    id: int
    symbol: str
    source: str
    requirements: str
    owner: str
    channel: str
    runtime_status: dict
    schedule: str | None
    timezone: str
    scheduled_since: datetime | None  # ticks at or before it never run: set with the schedule and on resume
    enabled: bool
    size: int | None
    value_cny: Decimal | None
    threshold: float
    account: str | None
    consecutive_failures: int
    paused_reason: str | None
    created_at: datetime
    updated_at: datetime
    verdict: dict | None = None  # the gate's verdict on the latest backtest; None: never backtested

    @property
    def gate_passed(self) -> bool:
        return bool((self.verdict or {}).get("passed"))


@dataclass(frozen=True)
class Override:
    """A schedule set over the gate, on `by`'s word."""

    by: str
    reason: str
    schedule: str
    timezone: str
    verdict: dict | None  # the verdict it overrode; None: the rule had no backtest
    at: datetime


@dataclass(frozen=True)
class Step:
    """One logged step of one execution: the seed's action JSON and what it produced."""

    rule_id: int
    symbol: str
    execution_id: str
    step: int
    action_type: str
    action_data: dict
    result_data: Any
    timestamp: datetime


@dataclass(frozen=True)
class Execution:
    """One execution of a rule, for the timeline: when, how many steps, and its decision step's action if any."""

    execution_id: str
    started_at: datetime
    finished_at: datetime
    steps: int
    decision: dict | None


class RuleStore:
    """Rules and execution logs on one engine; all state is in the database."""

    def __init__(self, engine: Engine, admins: frozenset[str] | Callable[[], frozenset[str]], *,
                 max_failures: int = 3, clock: Callable[[], datetime] = utcnow) -> None:
        """`admins`: fixed, or read at each check (the database's roles)."""
        if max_failures < 1:
            raise ValueError("max_failures must be at least 1")
        self.engine = engine
        self.admins = admins if callable(admins) else lambda: admins
        self.max_failures = max_failures
        self.clock = clock

    def add(self, owner: str, channel: str, symbol: str, requirements: str, *, source: Source = "llm",
            timezone: str = DEFAULT_TIMEZONE, size: int | None = None, value_cny: Decimal | int | str | None = None,
            threshold: float = DEFAULT_THRESHOLD, account: str | None = None) -> Rule:
        """Validate and save a new rule, enabled, unscheduled (`update_schedule` passes the gate), with no position;
        returns it with its id."""
        _text("owner", owner)
        _text("channel", channel)
        if source not in SOURCES:
            raise RuleError(f"a rule's source is 'llm' (requirements in words) or 'language' (the rule language), "
                            f"not {source!r}")
        requirements = requirements.strip()
        if not requirements:
            raise RuleError(_("a rule needs its requirements: when to buy, when to sell"))
        if len(requirements) > MAX_REQUIREMENTS:
            raise RuleError(_("a rule's requirements are at most {most} characters, these have {n}").format(
                most=MAX_REQUIREMENTS, n=len(requirements)))
        if size is not None and value_cny is not None:
            raise RuleError(_("give the order size in shares (size=) or in CNY (value=), not both"))
        now = self.clock()
        row = SavedRule(
            symbol=check_symbol(symbol), source=source, requirements=requirements, owner=owner, channel=channel,
            runtime_status={"position": 0}, schedule=None, timezone=check_timezone(timezone), scheduled_since=None,
            enabled=True, size=_size(size), value_fen=_fen(value_cny),
            threshold=check_threshold(threshold), account=None if account is None else _text("account", account),
            consecutive_failures=0, created_at=now, updated_at=now,
        )
        with Session(self.engine) as session, session.begin():
            session.add(row)
            session.flush()
            rule = _rule(row)
        log.info("rule %d saved by %s in %s: %s", rule.id, owner, channel, rule.symbol)
        return rule

    def get(self, rule_id: int) -> Rule | None:
        with Session(self.engine) as session:
            row = session.get(SavedRule, rule_id)
            return None if row is None else _rule(row)

    def list(self, *, channel: str | None = None, owner: str | None = None) -> list[Rule]:
        """Rules in a channel and/or of an owner (all rules when neither is given), oldest first."""
        query = select(SavedRule).order_by(SavedRule.id)
        if channel is not None:
            query = query.where(SavedRule.channel == channel)
        if owner is not None:
            query = query.where(SavedRule.owner == owner)
        with Session(self.engine) as session:
            return [_rule(row) for row in session.scalars(query)]

    def scheduled(self) -> builtins.list[Rule]:
        """Enabled rules with a schedule: what the scheduler evaluates."""
        query = (select(SavedRule).where(SavedRule.enabled.is_(True), SavedRule.schedule.is_not(None))
                 .order_by(SavedRule.id))
        with Session(self.engine) as session:
            return [_rule(row) for row in session.scalars(query)]

    def update_schedule(self, rule_id: int, user: str, schedule: str | None, timezone: str | None = None, *,
                        anyway: str | None = None) -> Rule:
        """Set (or with None, drop) a rule's cron schedule and optionally its timezone; the schedule starts now,
        so no earlier tick is caught up. A schedule needs the latest backtest's verdict passed (else GateRefused),
        or `anyway`, the reason it is set over the gate: kept with the rule and audited, in this transaction (with
        a passing verdict no reason is needed, and none is kept)."""
        cron = check_schedule(schedule)
        zone = None if timezone is None else check_timezone(timezone)
        reason = (anyway or "").strip() or None
        with write_lock(self.engine) as session:
            row = self._owned(session, rule_id, user)
            if cron is not None and not _rule(row).gate_passed:
                if reason is None:
                    raise GateRefused(_rule(row))
                self._override(session, row, user, reason, cron, zone or row.timezone)
            row.schedule = cron
            row.timezone = zone or row.timezone
            row.scheduled_since = self.clock() if cron else None
            row.updated_at = self.clock()
            rule = _rule(row)
        log.info("rule %d schedule set by %s: %s%s", rule_id, user, f"{cron} ({rule.timezone})" if cron else "off",
                 " over the gate" if cron and not rule.gate_passed else "")
        return rule

    def _override(self, session: Session, row: SavedRule, user: str, reason: str, cron: str, zone: str) -> None:
        """Keep and audit a schedule set over the gate (the global chain's lock first, as every chained write)."""
        lock(session, GLOBAL)
        session.add(RuleOverride(rule_id=row.id, by=_text("owner", user), reason=reason, schedule=cron, timezone=zone,
                                 verdict=row.verdict, at=self.clock()))
        record_event(session, None, None, SCHEDULED_ANYWAY, user,
                     {"rule": row.id, "symbol": row.symbol, "schedule": cron, "timezone": zone, "reason": reason,
                      "verdict": row.verdict})

    def set_verdict(self, rule_id: int, verdict: dict) -> None:
        """Store the gate's verdict on the rule's latest backtest (whoever ran it: a backtest changes no setting)."""
        self._set(rule_id, verdict=verdict)

    def overrides(self, rule_id: int) -> builtins.list[Override]:
        """The schedules set over the gate, oldest first."""
        query = select(RuleOverride).where(RuleOverride.rule_id == rule_id).order_by(RuleOverride.id)
        with Session(self.engine) as session:
            return [Override(o.by, o.reason, o.schedule, o.timezone, o.verdict, aware(o.at))
                    for o in session.scalars(query)]

    def pause(self, rule_id: int, user: str, reason: str | None = None) -> Rule:
        """Disable a rule: its schedule stops until it is resumed."""
        with Session(self.engine) as session, session.begin():
            row = self._owned(session, rule_id, user)
            row.enabled = False
            row.paused_reason = reason or f"paused by {user}"
            row.updated_at = self.clock()
            rule = _rule(row)
        log.info("rule %d paused: %s", rule_id, rule.paused_reason)
        return rule

    def resume(self, rule_id: int, user: str) -> Rule:
        """Enable a rule again with its failure count cleared; ticks while it was paused are not caught up."""
        with Session(self.engine) as session, session.begin():
            row = self._owned(session, rule_id, user)
            now = self.clock()
            row.enabled = True
            row.paused_reason = None
            row.consecutive_failures = 0
            row.scheduled_since = now if row.schedule else None
            row.updated_at = now
            rule = _rule(row)
        log.info("rule %d resumed by %s", rule_id, user)
        return rule

    def delete(self, rule_id: int, user: str) -> None:
        """Drop a rule with its execution logs and schedule ticks."""
        with Session(self.engine) as session, session.begin():
            self._owned(session, rule_id, user)
            session.execute(delete(SavedRule).where(SavedRule.id == rule_id))
        log.info("rule %d deleted by %s", rule_id, user)

    def set_runtime_status(self, rule_id: int, status: dict) -> None:
        """Replace a rule's runtime (position) state; done by runs, not users."""
        self._set(rule_id, runtime_status=status)

    def record_success(self, rule_id: int) -> None:
        """A run finished: the consecutive-failure count starts again from 0."""
        self._set(rule_id, consecutive_failures=0)

    def record_failure(self, rule_id: int, error: str) -> bool:
        """Count a failed run; returns True when this failure paused the rule (the caller tells its owner)."""
        now = self.clock()
        with Session(self.engine) as session, session.begin():
            counted = session.execute(update(SavedRule).where(SavedRule.id == rule_id).values(
                consecutive_failures=SavedRule.consecutive_failures + 1, updated_at=now)).rowcount
            if not counted:
                raise RuleError(_("there is no rule {id}").format(id=rule_id))
            failures = session.scalar(select(SavedRule.consecutive_failures).where(SavedRule.id == rule_id))
            paused = session.execute(update(SavedRule).where(
                SavedRule.id == rule_id, SavedRule.enabled.is_(True),
                SavedRule.consecutive_failures >= self.max_failures,
            ).values(enabled=False, paused_reason=f"paused after {failures} consecutive failures; last: {error}",
                     updated_at=now)).rowcount == 1
        log.log(logging.WARNING if paused else logging.INFO, "rule %d failed (%d in a row)%s: %s", rule_id,
                failures, ", paused" if paused else "", error)
        return paused

    def log_step(self, rule_id: int, symbol: str, execution_id: str, step: int, action_type: str,
                 action_data: dict, result_data: Any = None) -> bool:
        """Log one step; returns False (and writes nothing) when (execution_id, step) is already logged."""
        _text("execution_id", execution_id)
        _text("action_type", action_type)
        if isinstance(step, bool) or not isinstance(step, int) or step < 1:
            raise RuleError(_("a step number is a whole number from 1, not {step!r}").format(step=step))
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        statement = insert(ExecutionLog).values(
            rule_id=rule_id, symbol=symbol, execution_id=execution_id, step=step, action_type=action_type,
            action_data=action_data, result_data=result_data, timestamp=self.clock(),
        ).on_conflict_do_nothing(index_elements=["execution_id", "step"]).returning(ExecutionLog.id)
        try:
            with self.engine.begin() as connection:
                written = connection.execute(statement).first() is not None
        except IntegrityError as exc:  # the only constraint left is the foreign key
            raise RuleError(_("there is no rule {id}").format(id=rule_id)) from exc
        log.debug("rule %d execution %s step %d %s: %s", rule_id, execution_id, step, action_type,
                  "logged" if written else "already logged")
        return written

    def steps(self, rule_id: int, execution_id: str | None = None) -> builtins.list[Step]:
        """A rule's logged steps: of one execution in step order, or of all in the order they were logged."""
        query = select(ExecutionLog).where(ExecutionLog.rule_id == rule_id)
        if execution_id is not None:
            query = query.where(ExecutionLog.execution_id == execution_id).order_by(ExecutionLog.step)
        else:
            query = query.order_by(ExecutionLog.id)
        with Session(self.engine) as session:
            return [Step(row.rule_id, row.symbol, row.execution_id, row.step, row.action_type, row.action_data,
                         row.result_data, aware(row.timestamp)) for row in session.scalars(query)]

    def executions(self, rule_id: int, limit: int = 20) -> builtins.list[Execution]:
        """A rule's latest executions, newest first."""
        started = func.min(ExecutionLog.timestamp)
        query = (select(ExecutionLog.execution_id, started, func.max(ExecutionLog.timestamp), func.count())
                 .where(ExecutionLog.rule_id == rule_id).group_by(ExecutionLog.execution_id)
                 .order_by(started.desc(), ExecutionLog.execution_id.desc()).limit(limit))
        with Session(self.engine) as session:
            rows = session.execute(query).all()
            decisions = dict(session.execute(
                select(ExecutionLog.execution_id, ExecutionLog.action_data).where(
                    ExecutionLog.rule_id == rule_id, ExecutionLog.action_type == "decision",
                    ExecutionLog.execution_id.in_([row[0] for row in rows]))).all())
        return [Execution(execution_id, aware(first), aware(last), count, decisions.get(execution_id))
                for execution_id, first, last, count in rows]

    def _owned(self, session: Session, rule_id: int, user: str) -> SavedRule:
        """The rule's row, when `user` may change it."""
        row = session.get(SavedRule, rule_id)
        if row is None:
            raise RuleError(_("there is no rule {id}").format(id=rule_id))
        if user != row.owner and user not in self.admins():
            log.info("rule %d: %s may not change it (owner %s)", rule_id, user, row.owner)
            raise RuleError(_("rule {id} belongs to {owner}: only its owner or an admin (`roles` lists them) may "
                              "change or delete it").format(id=rule_id, owner=row.owner))
        return row

    def _set(self, rule_id: int, **values: Any) -> None:
        with Session(self.engine) as session, session.begin():
            changed = session.execute(update(SavedRule).where(SavedRule.id == rule_id).values(
                updated_at=self.clock(), **values)).rowcount
        if not changed:
            raise RuleError(_("there is no rule {id}").format(id=rule_id))


def order_tag(rule_id: int) -> str:
    """The tag of a rule's orders (and its proposer name for order card claims)."""
    return f"rule:{rule_id}"


def check_symbol(symbol: str) -> str:
    """An A-share ts_code (600519.SH) or a crypto pair (BTC/USDT, BTCUSDT), upper-cased."""
    try:
        kind = symbol_kind(symbol)
    except KlineError as exc:
        raise RuleError(str(exc)) from exc
    text = symbol.strip().upper()
    return text if kind == "a-share" else text.replace("-", "/").replace("_", "/")


def check_schedule(schedule: str | None) -> str | None:
    """A five-field cron expression (minute hour day month weekday), or None for on demand only."""
    if schedule is None:
        return None
    cron = " ".join(schedule.split())
    if len(cron.split(" ")) != 5 or not croniter.is_valid(cron):
        raise RuleError(_("schedule {schedule!r} is not a cron expression: give five fields, minute hour day month "
                          "weekday, like '30 9 * * 1-5' (09:30 on weekdays)").format(schedule=schedule))
    try:
        croniter(cron, datetime(2000, 1, 1, tzinfo=UTC)).get_next(datetime)
    except (CroniterBadDateError, ValueError):
        raise RuleError(_("schedule {schedule!r} never fires (no such date): check the day and month fields").format(
            schedule=schedule)) from None
    return cron


def check_timezone(timezone: str) -> str:
    try:
        ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise RuleError(_("unknown timezone {timezone!r}: use an IANA name like Asia/Shanghai or UTC").format(
            timezone=timezone)) from None
    return timezone


def check_threshold(threshold: float) -> float:
    """A confidence between 0 and 1."""
    if isinstance(threshold, bool) or not isinstance(threshold, int | float | Decimal) \
            or not math.isfinite(threshold) or not 0 <= threshold <= 1:
        raise RuleError(_("threshold is the confidence a decision needs, between 0 and 1, not {threshold!r}").format(
            threshold=threshold))
    return float(threshold)


def aware(moment: datetime) -> datetime:
    """A stored time as aware UTC (SQLite hands them back naive)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


MAX_SHARES = 100_000_000  # an order size no paper account could place
MAX_VALUE_FEN = 10**13  # 100 billion CNY


def _size(size: int | None) -> int | None:
    if size is not None and (isinstance(size, bool) or not isinstance(size, int) or not 0 < size <= MAX_SHARES):
        raise RuleError(_("size= is a whole number of shares from 1 to {most}, not {size!r}").format(
            most=f"{MAX_SHARES:,}", size=size))
    return size


def _fen(value: Decimal | int | str | None) -> int | None:
    """A CNY amount as integer fen."""
    if value is None:
        return None
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or amount <= 0 or amount > MAX_VALUE_FEN * _FEN or amount != amount.quantize(_FEN):
        raise RuleError(_("value= is an amount in CNY above 0 and at most {most}, with at most two decimals, not "
                          "{value!r}").format(most=f"{MAX_VALUE_FEN // 100:,}", value=value))
    return int(amount / _FEN)


def _text(name: str, value: str) -> str:
    if not value or len(value) > _WIDTHS[name]:
        raise RuleError(f"{name.replace('_', ' ')} must be 1 to {_WIDTHS[name]} characters, not {value!r}")
    return value


def _rule(row: SavedRule) -> Rule:
    return Rule(
        id=row.id, symbol=row.symbol, source=row.source, requirements=row.requirements, owner=row.owner,
        channel=row.channel, runtime_status=dict(row.runtime_status or {}), schedule=row.schedule,
        timezone=row.timezone, scheduled_since=None if row.scheduled_since is None else aware(row.scheduled_since),
        enabled=row.enabled, size=row.size, value_cny=None if row.value_fen is None else row.value_fen * _FEN,
        threshold=row.threshold, account=row.account, consecutive_failures=row.consecutive_failures,
        paused_reason=row.paused_reason, created_at=aware(row.created_at), updated_at=aware(row.updated_at),
        verdict=row.verdict,
    )
