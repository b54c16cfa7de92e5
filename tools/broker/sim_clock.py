"""The simulated session clock on static data: one session date for the whole database (every paper account
shares it). A new clock, and again whenever the data's last day changes (new bars, another provider), starts
`START_SESSIONS` of the data's sessions before its last day, so a trader can buy, move the clock (`clock next`) and
sell for a month of sessions before the data runs out. The account sees no bar after it. Each move is in the order
audit trail ("clock moved": who, from, to)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tools.broker.clock import Clock, clock_for, day, ymd
from tools.broker.records import SimulatedClock
from tools.broker.store import record_event
from tools.data.provider import MarketDataProvider
from tools.storage.models import utcnow

CLOCK_ROW = 1
START_SESSIONS = 20  # a new clock stands this many of the data's sessions before its last day: a month to trade
START_LOOKBACK = timedelta(days=90)  # calendar days searched for them (20 sessions span at most ~45)


def stored_session(session: Session, lock: bool = False) -> SimulatedClock | None:
    """The clock's row (None until it first moves); `lock` holds it for the rest of a PostgreSQL transaction."""
    return session.get(SimulatedClock, CLOCK_ROW, with_for_update=lock and session.get_bind().dialect.name != "sqlite")


def start_session(provider: MarketDataProvider, data_end: str) -> str:
    """Where a new clock starts: `START_SESSIONS` of the data's sessions (days with bars) before `data_end`; data
    with fewer sessions in the ~three months before its end (a few days of bars) starts at its last day."""
    days = [d for d in provider.calendar(ymd(day(data_end) - START_LOOKBACK), data_end) if d <= data_end]
    return days[-1 - START_SESSIONS] if len(days) > START_SESSIONS else data_end


def simulated_today(session: Session, provider: MarketDataProvider, data_end: str) -> str:
    """The simulated session date: the stored one while the data still ends where it did at the move, else where a
    new clock starts."""
    row = stored_session(session)
    return start_session(provider, data_end) if row is None or row.data_end != data_end else row.session_date


def paper_clock(engine: Engine, provider: MarketDataProvider, live_days: int, now: datetime | None = None) -> Clock:
    """The paper account's clock: live as `clock_for` decides, else simulated on the stored session date, with the
    data the account may read ending there."""
    clock = clock_for(provider, live_days, now)
    if not clock.simulated:
        return clock
    with Session(engine) as session:
        today = simulated_today(session, provider, clock.data_end)
    return replace(clock, today=today, data_end=today)


@dataclass(frozen=True)
class SessionMove:
    """The session a trader last moved the simulated clock to, and when (aware UTC)."""

    session: str
    moved_at: datetime


def last_move(engine: Engine, provider: MarketDataProvider, live_days: int, now: datetime | None = None,
              ) -> SessionMove | None:
    """Where the clock of this data was last moved to; None on live data or before its first move on this data."""
    clock = clock_for(provider, live_days, now)
    if not clock.simulated:
        return None
    with Session(engine) as session:
        row = stored_session(session)
        if row is None or row.data_end != clock.data_end:
            return None
        moved_at = row.moved_at if row.moved_at.tzinfo else row.moved_at.replace(tzinfo=UTC)  # SQLite: naive UTC
        return SessionMove(row.session_date, moved_at.astimezone(UTC))


def set_session(session: Session, before: str, after: str, data_end: str, by: str) -> None:
    """Store `after` as the simulated session date on data ending `data_end` and record the move (inside the
    caller's write lock)."""
    row = stored_session(session)
    if row is None:
        session.add(SimulatedClock(id=CLOCK_ROW, session_date=after, data_end=data_end, moved_by=by, moved_at=utcnow()))
    else:
        row.session_date, row.data_end, row.moved_by, row.moved_at = after, data_end, by, utcnow()
    record_event(session, None, None, "clock moved", by, {"from": before, "to": after, "data_end": data_end})
