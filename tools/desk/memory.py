"""Durable analyst memory: seed 001's Memory Controller, one per analyst, on the application database.

Every row lives in a namespace: "live" for the live desk, a replay's own (like "replay:<id>") for a replay, so a
replay starts empty and shares nothing with the live desk or another replay.

Every report is kept: a second report of the same (symbol, day, session), a re-analysis, is a new version, and
today_report is the newest (or, given its id, the one a decision read). The summaries read the newest version of
each (day, session).

Reads are point in time. `get_memory_summary(symbol, date, session)` sees only reports of earlier days and of the
same day at or before `session` (pre_open < intraday < post_close), and only summaries whose as-of (day, session)
is at or before (date, session): a summary written after the close of X never shows for X's open or any day
before X.

When summaries are written (`refresh_summaries`, or `due_summary` then `write_summary`; the caller runs it on
trading days: a post-close one after saving the day's reports, or, by a desk deciding before the next open, then; a
pre-open one before the session's reports are read; summaries are kept per as-of day, never overwritten):

- memory_summary_post_close, only in the post_close session, and only when reports arrived after the previous
  post-close summary's day:
  market: once per day, a summary of the last 5 reports (the market analyst has no longer memory; its
  today_report is simply its newest report, after every report);
  news and sentiment: once per day, the previous post-close summary merged with the reports since it;
  fundamentals: once per ISO week (the first post_close refresh of the week), merged the same way.
- memory_summary_pre_open, in the pre_open or intraday session, from the newest post-close summary of an earlier
  day, when no pre-open summary was yet made from that one (so for fundamentals only after a new weekly summary).
  Its content predates the day, so it is stored as of (day, pre_open) and is visible all day.

`summarize(instruction, texts) -> summary` is the light model, handed in by the graph layer; it is called only
when a summary is due. Without one (None), a summary is the first 600 characters of the newest report it would
have covered, under a label saying so (method "excerpt")."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date as Date
from datetime import datetime, time
from typing import Any, TypedDict

from sqlalchemy import ColumnElement, Engine, Select, and_, case, exists, func, literal, or_, select, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import InstrumentedAttribute, Session, aliased

from tools.broker.clock import SHANGHAI
from tools.data.schema import normalize_date
from tools.desk.records import AnalystReport, AnalystSummary
from tools.storage.models import utcnow

log = logging.getLogger(__name__)

ANALYSTS = ("market", "news", "sentiment", "fundamentals")
SESSIONS = ("pre_open", "intraday", "post_close")  # in time order
MARKET_OPEN, MARKET_CLOSE = time(9, 30), time(15, 0)
EXCERPT_CHARS = 600
MARKET_WINDOW = 5  # reports in the market analyst's post-close summary
_WIDTHS = {"namespace": 128, "symbol": 32, "report_id": 64}
KEY = ("namespace", "analyst", "symbol", "trade_date", "session")  # a report's key; each save is a new version of it

Summarize = Callable[[str, list[str]], str]


@dataclass(frozen=True)
class DueSummary:
    """A summary that is due: what the summariser reads (`instruction`, `texts`) and where the result is stored."""

    kind: str  # pre_open or post_close
    symbol: str
    day: str  # its as-of day
    through: str  # the day of the newest report (post_close) or of the post-close summary (pre_open) it covers
    instruction: str
    texts: list[str]
    latest: tuple[str, str, str]  # the newest report it covers: day, session, text (the excerpt without a model)


class AnalystMemorySummary(TypedDict):
    """What the Fusion node reads from one analyst; an empty string where there is nothing yet."""

    today_report: str
    memory_summary_pre_open: str
    memory_summary_post_close: str


def session_at(moment: datetime) -> str:
    """The trading session of an aware moment in Asia/Shanghai: pre_open before 09:30, post_close from 15:00,
    intraday between (the lunch break included). The day's calendar is not consulted."""
    if moment.tzinfo is None:
        raise ValueError("session_at needs an aware datetime (a naive one has no known timezone)")
    clock = moment.astimezone(SHANGHAI).time()
    if clock < MARKET_OPEN:
        return "pre_open"
    return "intraday" if clock < MARKET_CLOSE else "post_close"


class MemoryController:
    """One analyst's reports and memory summaries in one namespace; all state is in the database."""

    def __init__(self, engine: Engine, analyst: str, namespace: str = "live",
                 summarize: Summarize | None = None) -> None:
        if analyst not in ANALYSTS:
            raise ValueError(f"unknown analyst {analyst!r}; use one of: {', '.join(ANALYSTS)}")
        self.engine = engine
        self.analyst = analyst
        self.namespace = _text("namespace", namespace)
        self.summarize = summarize

    def save_today_report(self, symbol: str, trade_date: str | Date, report: str, *, session: str,
                          written_at: datetime, report_id: str | None = None) -> str:
        """Store the analyst's report for (symbol, day, session) as a new version and return its id: earlier
        reports of the key are kept, and the newest is today_report. Saving again under an existing `report_id` (a
        re-run of the step that saved it, after a crash) replaces that version's text in place."""
        if written_at.tzinfo is None:
            raise ValueError("written_at must be an aware datetime")
        row = {
            "id": uuid.uuid4().hex if report_id is None else _text("report_id", report_id),
            "namespace": self.namespace, "analyst": self.analyst, "symbol": _text("symbol", symbol),
            "trade_date": _day(trade_date), "session": _session(session), "report": report,
            "written_at": written_at, "updated_at": utcnow(),
        }
        version = self._save(row)
        log.debug("%s report %s (version %d) for %s %s %s in %s", self.analyst, row["id"], version, row["symbol"],
                  row["trade_date"], row["session"], self.namespace)
        return row["id"]

    def _save(self, row: dict[str, Any]) -> int:
        """Store `row`: in place when its id exists (with the same key), else as the key's next version, counted
        and inserted in one statement (atomic on SQLite; on PostgreSQL concurrent saves of the key queue on a
        transaction lock); returns the version."""
        table = AnalystReport.__table__
        key = [table.c[name] == row[name] for name in KEY]
        with self.engine.begin() as connection:
            if self.engine.dialect.name == "postgresql":
                connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:key))"),
                                   {"key": "analyst_reports:" + "|".join(row[name] for name in KEY)})
            stored = connection.execute(select(*[table.c[name] for name in (*KEY, "version")])
                                        .where(table.c.id == row["id"])).first()
            if stored is not None:
                if tuple(stored)[:len(KEY)] != tuple(row[name] for name in KEY):
                    raise ValueError(f"report {row['id']} belongs to another analyst, symbol, day or session")
                connection.execute(table.update().where(table.c.id == row["id"]).values(
                    report=row["report"], written_at=row["written_at"], updated_at=row["updated_at"]))
                return int(stored.version)
            following = select(*[literal(value, table.c[name].type) for name, value in row.items()],
                               func.coalesce(func.max(table.c.version), 0) + 1).where(*key)
            connection.execute(table.insert().from_select([*row, "version"], following))
            return int(connection.scalar(select(table.c.version).where(table.c.id == row["id"])))

    def get_memory_summary(self, symbol: str, date: str | Date, session: str, *,
                           report_id: str | None = None) -> AnalystMemorySummary:
        """today_report (the newest report of `date` at or before `session`) and the summaries in force then.
        With `report_id`, today_report is that report instead: the very text a decision's analyst wrote, even when
        a later re-analysis of the day has a newer version."""
        symbol, day, session = _text("symbol", symbol), _day(date), _session(session)
        with Session(self.engine) as db:
            query = self._reports(symbol, day, session).where(AnalystReport.trade_date == day)
            if report_id is not None:
                today = db.scalars(query.where(AnalystReport.id == report_id)).first()
                if today is None:
                    raise ValueError(f"no {self.analyst} report {report_id} on {symbol} for {day} {session} in "
                                     f"{self.namespace}")
            else:
                today = db.scalars(query.order_by(_rank(AnalystReport.session).desc(),
                                                  AnalystReport.version.desc()).limit(1)).first()
            pre_open = self._summary(db, symbol, "pre_open", day, session)
            post_close = self._summary(db, symbol, "post_close", day, session)
        return AnalystMemorySummary(
            today_report="" if today is None else today.report,
            memory_summary_pre_open="" if pre_open is None else pre_open.text,
            memory_summary_post_close="" if post_close is None else post_close.text,
        )

    def refresh_summaries(self, symbol: str, date: str | Date, session: str) -> str | None:
        """Write the summary that is due at (date, session), per the module docstring; returns its kind
        ("pre_open" or "post_close"), or None when none was due."""
        due = self.due_summary(symbol, date, session)
        return None if due is None else self.write_summary(due)

    def due_summary(self, symbol: str, date: str | Date, session: str) -> DueSummary | None:
        """The summary due at (date, session), with the texts its summariser would read, or None: written by
        `write_summary`, so a caller can weigh the call (its prompt) before making it."""
        symbol, day, session = _text("symbol", symbol), _day(date), _session(session)
        if session == "post_close":
            return self._due_post_close(symbol, day)
        return self._due_pre_open(symbol, day)

    def write_summary(self, due: DueSummary) -> str:
        """Summarise `due` and store it; returns its kind. A summary stored meanwhile (a concurrent refresh) wins."""
        text, method = self._summarize(due)
        return self._store(due.kind, due.symbol, due.day, due.through, text, method)

    def _due_post_close(self, symbol: str, day: str) -> DueSummary | None:
        with Session(self.engine) as db:
            previous = self._summary(db, symbol, "post_close", day, "post_close")
            if previous is not None and self._period(previous.as_of_date) == self._period(day):
                return None
            reports = self._reports(symbol, day, "post_close", newest=True)
            if previous is not None:
                reports = reports.where(AnalystReport.trade_date > previous.as_of_date)
            new = list(db.scalars(reports.order_by(AnalystReport.trade_date, _rank(AnalystReport.session))))
            if not new:
                return None
            if self.analyst == "market":
                window = db.scalars(self._reports(symbol, day, "post_close", newest=True).order_by(
                    AnalystReport.trade_date.desc(), _rank(AnalystReport.session).desc()).limit(MARKET_WINDOW))
                texts = [r.report for r in reversed(list(window))]
                instruction = (f"Summarize the {len(texts)} most recent market-analyst reports on {symbol}, oldest "
                               f"first, into a concise post-close memory as of {day}: trend, key price levels, "
                               "volume and volatility, and what changed across them.")
            else:
                texts = ([] if previous is None else [previous.text]) + [r.report for r in new]
                instruction = (f"You keep the long-term memory of the {self.analyst} analyst for {symbol}. "
                               + ("Merge the previous memory (the first text) with the newer reports that follow "
                                  if previous is not None else "Condense these reports ")
                               + f"into one concise post-close memory as of {day}: keep the developments, "
                               "views and open questions that still matter, drop what is stale.")
            return DueSummary("post_close", symbol, day, new[-1].trade_date, instruction, texts, _latest(new[-1]))

    def _due_pre_open(self, symbol: str, day: str) -> DueSummary | None:
        with Session(self.engine) as db:
            source = db.scalars(self._summaries(symbol, "post_close").where(AnalystSummary.as_of_date < day)
                                .order_by(AnalystSummary.as_of_date.desc()).limit(1)).first()
            if source is None:
                return None
            current = self._summary(db, symbol, "pre_open", day, "pre_open")
            if current is not None and current.through_date == source.as_of_date:
                return None
            latest = db.scalars(self._reports(symbol, source.as_of_date, "post_close", newest=True).order_by(
                AnalystReport.trade_date.desc(), _rank(AnalystReport.session).desc()).limit(1)).first()
            if latest is None:
                return None
            instruction = (f"From the {self.analyst} analyst's post-close memory of {symbol} as of "
                           f"{source.as_of_date}, write a short pre-open brief for the {day} session: what to watch "
                           "at the open and which views still hold.")
            return DueSummary("pre_open", symbol, day, source.as_of_date, instruction, [source.text], _latest(latest))

    def _summarize(self, due: DueSummary) -> tuple[str, str]:
        if self.summarize is None:
            label = (f"[no summary model: the first {EXCERPT_CHARS} characters of the latest {self.analyst} report, "
                     f"{due.latest[0]} {due.latest[1]}]")
            return f"{label}\n{due.latest[2][:EXCERPT_CHARS]}", "excerpt"
        summary = self.summarize(due.instruction, due.texts)
        if not isinstance(summary, str):
            raise TypeError(f"summarize must return a str, not {type(summary).__name__}")
        return summary.strip(), "model"

    def _store(self, kind: str, symbol: str, day: str, through: str, text: str, method: str) -> str:
        """Insert a summary; a concurrent refresh that stored it first wins (its text is as good)."""
        insert = postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert
        statement = insert(AnalystSummary).values(
            namespace=self.namespace, analyst=self.analyst, symbol=symbol, kind=kind, as_of_date=day,
            as_of_session="post_close" if kind == "post_close" else "pre_open", through_date=through,
            method=method, text=text, created_at=utcnow(),
        ).on_conflict_do_nothing(index_elements=["namespace", "analyst", "symbol", "kind", "as_of_date"])
        with self.engine.begin() as connection:
            connection.execute(statement)
        log.info("%s %s summary of %s as of %s (%s) in %s", self.analyst, kind, symbol, day, method,
                 self.namespace)
        return kind

    def _period(self, day: str) -> str:
        """The span a post-close summary covers: an ISO week for fundamentals, else the day."""
        if self.analyst != "fundamentals":
            return day
        year, week, _ = datetime.strptime(day, "%Y%m%d").isocalendar()
        return f"{year}-W{week:02d}"

    def _reports(self, symbol: str, day: str, session: str, *, newest: bool = False) -> Select[tuple[AnalystReport]]:
        """This analyst's reports on `symbol` visible at (day, session); with `newest`, only the newest version of
        each (day, session) (what the summaries read: a superseded report is history, not news)."""
        query = select(AnalystReport).where(
            AnalystReport.namespace == self.namespace, AnalystReport.analyst == self.analyst,
            AnalystReport.symbol == symbol,
            _visible(AnalystReport.trade_date, AnalystReport.session, day, session))
        if newest:
            later = aliased(AnalystReport)
            query = query.where(~exists().where(*[getattr(later, name) == getattr(AnalystReport, name)
                                                  for name in KEY], later.version > AnalystReport.version))
        return query

    def _summaries(self, symbol: str, kind: str) -> Select[tuple[AnalystSummary]]:
        return select(AnalystSummary).where(
            AnalystSummary.namespace == self.namespace, AnalystSummary.analyst == self.analyst,
            AnalystSummary.symbol == symbol, AnalystSummary.kind == kind)

    def _summary(self, db: Session, symbol: str, kind: str, day: str, session: str) -> AnalystSummary | None:
        """The newest `kind` summary visible at (day, session)."""
        query = self._summaries(symbol, kind).where(
            _visible(AnalystSummary.as_of_date, AnalystSummary.as_of_session, day, session))
        return db.scalars(query.order_by(AnalystSummary.as_of_date.desc()).limit(1)).first()


def _latest(report: AnalystReport) -> tuple[str, str, str]:
    return report.trade_date, report.session, report.report


def _visible(day_column: InstrumentedAttribute[str], session_column: InstrumentedAttribute[str], day: str,
             session: str) -> ColumnElement[bool]:
    """Rows of an earlier day, or of `day` at or before `session`."""
    allowed = SESSIONS[:SESSIONS.index(session) + 1]
    return or_(day_column < day, and_(day_column == day, session_column.in_(allowed)))


def _rank(column: InstrumentedAttribute[str]) -> ColumnElement[int]:
    """A session's place in the day, for ordering."""
    return case({name: rank for rank, name in enumerate(SESSIONS)}, value=column)


def _day(value: str | Date) -> str:
    return normalize_date(value, "trade date")


def _session(value: str) -> str:
    if value not in SESSIONS:
        raise ValueError(f"unknown session {value!r}; use one of: {', '.join(SESSIONS)}")
    return value


def _text(what: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _WIDTHS[what]:
        raise ValueError(f"{what} must be a non-empty string of at most {_WIDTHS[what]} characters, not {value!r}")
    return value
