"""The decision desk's log: every decision with its inputs, resolved once its outcome is known, and the
reflections the analysts' memory receives.

A decision's `target_position` is a weight: the fraction of the account to hold, a Decimal in [0, 1]. Its `price`
is the reference close of `trade_date`.

Resolution (`resolve_due`) at horizon h: the exit day is the h-th trading day after trade_date (the provider's
calendar). The decision is due once the exit day is strictly before `as_of_date`, because the exit close is known
only after that day's close; `reflections_for` applies the same rule, so nothing shows before it was knowable.
realised return = exit close / trade_date close - 1 (the provider's closes, so the same price basis as the
benchmark); the benchmark is the equal-weight mean of the universe codes' returns over the same two days, codes
without both closes left out (`benchmark_codes` says how many were used); excess = realised - benchmark. Returns are
exact Decimals rounded (half even) to 10 places; excess is the difference of the rounded values.

hit: Buy or Overweight with excess > 0; Sell or Underweight with excess < 0; Hold with |excess| < 2%. With no
benchmark (no universe code had both closes) excess and hit are None. A decision whose own code lacks either close
(a suspension, a non-trading trade_date, or data not yet in) stays unresolved and is logged."""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from datetime import date as Date
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation, localcontext
from itertools import groupby

import pandas as pd
from sqlalchemy import Engine, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, normalize_date
from tools.desk.records import DeskDecision, DeskDecisionOutcome
from tools.i18n import N_, _
from tools.storage.models import utcnow

log = logging.getLogger(__name__)

# the five-step scale, stored in English; the words are how views say each rating
RATING_WORDS = {"Buy": N_("Buy"), "Overweight": N_("Overweight"), "Hold": N_("Hold"),
                "Underweight": N_("Underweight"), "Sell": N_("Sell")}
RATINGS = tuple(RATING_WORDS)
HOLD_BAND = Decimal("0.02")  # a Hold hits when the excess return stays inside ±2%
PLACES = Decimal("1E-10")
_WIDTHS = {"namespace": 128, "ts_code": 32, "thread_id": 64, "decision_id": 64}
_MINUS = "\u2212"


def rating_word(rating: object) -> str:
    """A rating as the reader says it (an unknown value as it is)."""
    text = str(rating)
    return _(RATING_WORDS[text]) if text in RATING_WORDS else text


@dataclass(frozen=True)
class Resolution:
    """A decision's outcome `horizon` trading days on; returns are decimal fractions (Decimal("-0.02") is -2%)."""

    decision_id: str
    namespace: str
    ts_code: str
    trade_date: str
    rating: str
    thread_id: str  # where the decision was made
    horizon: int
    exit_date: str
    entry_close: Decimal
    exit_close: Decimal
    realised_return: Decimal
    benchmark_return: Decimal | None
    excess_return: Decimal | None
    benchmark_codes: int  # universe codes with both closes, the benchmark mean's n
    universe_size: int
    hit: bool | None
    resolved_at: datetime


@dataclass(frozen=True)
class Decision:
    """A logged decision with its resolutions (one per horizon resolved so far)."""

    id: str
    namespace: str
    ts_code: str
    trade_date: str
    as_of: datetime
    rating: str
    target_position: Decimal  # weight: fraction of the account, 0 to 1
    confidence: float
    price: Decimal
    report_ids: dict[str, str]
    universe: list[str]
    thread_id: str
    summary: dict
    created_at: datetime
    resolutions: tuple[Resolution, ...]


def record_decision(engine: Engine, *, namespace: str, ts_code: str, trade_date: str | Date, as_of: datetime,
                    rating: str, target_position: Decimal | int | str, confidence: float,
                    price: Decimal | int | str, report_ids: dict[str, str], universe: Sequence[str],
                    thread_id: str, summary: dict, decision_id: str | None = None) -> str:
    """Store a decision with its inputs and return its id. Given a `decision_id` that exists (a re-run of the node
    that made it), the stored decision is replaced and keeps that id."""
    if as_of.tzinfo is None:
        raise ValueError("as_of must be an aware datetime")
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {', '.join(RATINGS)}, not {rating!r}")
    weight = _decimal("target_position", target_position)
    if not Decimal(0) <= weight <= Decimal(1):
        raise ValueError(f"target_position is a weight from 0 to 1, not {target_position!r}")
    reference = _decimal("price", price)
    if reference <= 0:
        raise ValueError(f"price must be above 0, not {price!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, int | float) or not (
            math.isfinite(confidence) and 0 <= confidence <= 1):
        raise ValueError(f"confidence is a number from 0 to 1, not {confidence!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in report_ids.items()):
        raise ValueError("report_ids maps analyst names to report ids, both strings")
    codes = list(universe)
    if not all(isinstance(code, str) and code for code in codes):
        raise ValueError("universe is a list of ts_codes")
    values = {
        "namespace": _text("namespace", namespace), "ts_code": _text("ts_code", ts_code),
        "trade_date": normalize_date(trade_date, "trade date"), "as_of": as_of.astimezone(UTC), "rating": rating,
        "target_position": weight, "confidence": float(confidence), "price": reference,
        "report_ids": dict(report_ids), "universe": codes, "thread_id": _text("thread_id", thread_id),
        "summary": summary, "created_at": utcnow(),
    }
    stored_id = uuid.uuid4().hex if decision_id is None else _text("decision_id", decision_id)
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    statement = insert(DeskDecision).values(id=stored_id, **values)
    statement = statement.on_conflict_do_update(
        index_elements=["id"], set_={name: statement.excluded[name] for name in values if name != "created_at"})
    with engine.begin() as connection:
        connection.execute(statement)
    log.info("decision %s in %s: %s %s on %s, weight %s", stored_id, values["namespace"], rating,
             values["ts_code"], values["trade_date"], weight)
    return stored_id


def resolve_due(engine: Engine, provider: MarketDataProvider, *, namespace: str, as_of_date: str | Date,
                horizon: int = 5) -> list[Resolution]:
    """Resolve every decision in `namespace` whose exit day (the `horizon`-th trading day after its trade_date)
    is before `as_of_date` and that has no resolution at this horizon yet; returns the ones resolved now."""
    if isinstance(horizon, bool) or not isinstance(horizon, int) or horizon < 1:
        raise ValueError(f"horizon is a whole number of trading days, at least 1, not {horizon!r}")
    as_of = normalize_date(as_of_date, "as-of date")
    done = select(DeskDecisionOutcome.decision_id).where(DeskDecisionOutcome.horizon == horizon)
    with Session(engine) as db:
        pending = list(db.scalars(select(DeskDecision).where(
            DeskDecision.namespace == namespace, DeskDecision.trade_date < as_of, DeskDecision.id.not_in(done),
        ).order_by(DeskDecision.trade_date, DeskDecision.as_of, DeskDecision.id)))
    if not pending:
        return []
    calendar = provider.calendar(pending[0].trade_date, as_of)
    resolved: list[Resolution] = []
    for trade_date, group in groupby(pending, key=lambda d: d.trade_date):
        later = [day for day in calendar if day > trade_date]
        if len(later) < horizon or later[horizon - 1] >= as_of:  # the exit day must be before as_of_date
            continue
        exit_date = later[horizon - 1]
        decisions = list(group)
        closes = _closes(provider, [code for d in decisions for code in (d.ts_code, *d.universe)], trade_date,
                         exit_date)
        for decision in decisions:
            outcome = _outcome(decision, closes, horizon, exit_date)
            if outcome is None:
                log.warning("decision %s (%s on %s) stays unresolved: no close for %s on %s and %s", decision.id,
                            decision.ts_code, trade_date, decision.ts_code, trade_date, exit_date)
            elif _store(engine, outcome):
                resolved.append(_resolution(decision, outcome))
    log.info("resolved %d of %d pending decisions in %s at horizon %d as of %s", len(resolved), len(pending),
             namespace, horizon, as_of)
    return resolved


def reflection_text(resolution: Resolution) -> str:
    """One deterministic line on how a decision turned out, e.g. "Decision on 20221213 rated Buy at 1,750.00;
    5 trading days later 1,715.00 (−2.00%), benchmark −2.50%, excess +0.50%: hit"."""
    verdict = {True: _("hit"), False: _("miss"), None: _("unscored")}[resolution.hit]
    if resolution.benchmark_return is None or resolution.excess_return is None:
        versus = _("benchmark n/a (no universe code had both closes), excess n/a")
    else:
        versus = _("benchmark {benchmark}, excess {excess}").format(
            benchmark=_percent(resolution.benchmark_return), excess=_percent(resolution.excess_return))
    return _("Decision on {date} rated {rating} at {entry}; {horizon} trading days later {exit} ({change}), "
             "{versus}: {verdict}").format(
        date=resolution.trade_date, rating=rating_word(resolution.rating), entry=f"{resolution.entry_close:,.2f}",
        horizon=resolution.horizon,
        exit=f"{resolution.exit_close:,.2f}", change=_percent(resolution.realised_return), versus=versus,
        verdict=verdict)


def reflections_for(engine: Engine, namespace: str, ts_code: str, as_of_date: str | Date, horizon: int, *,
                    limit: int = 10) -> list[str]:
    """Reflection lines on `ts_code`'s decisions whose outcome was knowable by `as_of_date` (exit day before it),
    the newest `limit`, oldest first."""
    as_of = normalize_date(as_of_date, "as-of date")
    query = (select(DeskDecision, DeskDecisionOutcome)
             .join(DeskDecisionOutcome, DeskDecisionOutcome.decision_id == DeskDecision.id)
             .where(DeskDecision.namespace == namespace, DeskDecision.ts_code == ts_code,
                    DeskDecisionOutcome.horizon == horizon, DeskDecisionOutcome.exit_date < as_of)
             .order_by(DeskDecision.trade_date.desc(), DeskDecision.as_of.desc(), DeskDecision.id.desc())
             .limit(limit))
    with Session(engine) as db:
        rows = db.execute(query).all()
    return [reflection_text(_resolution(decision, outcome)) for decision, outcome in reversed(rows)]


def list_decisions(engine: Engine, namespace: str = "live", ts_code: str | None = None,
                   limit: int = 20) -> list[Decision]:
    """The newest `limit` decisions (of one code, or all), newest first, with their resolutions."""
    query = select(DeskDecision).where(DeskDecision.namespace == namespace)
    if ts_code is not None:
        query = query.where(DeskDecision.ts_code == ts_code)
    query = query.order_by(DeskDecision.trade_date.desc(), DeskDecision.as_of.desc(), DeskDecision.id.desc())
    with Session(engine) as db:
        decisions = list(db.scalars(query.limit(limit)))
        outcomes = db.scalars(select(DeskDecisionOutcome).where(
            DeskDecisionOutcome.decision_id.in_([d.id for d in decisions])).order_by(DeskDecisionOutcome.horizon))
        by_decision: dict[str, list[DeskDecisionOutcome]] = {}
        for outcome in outcomes:
            by_decision.setdefault(outcome.decision_id, []).append(outcome)
    return [Decision(
        id=d.id, namespace=d.namespace, ts_code=d.ts_code, trade_date=d.trade_date, as_of=_utc(d.as_of),
        rating=d.rating, target_position=d.target_position, confidence=d.confidence, price=d.price,
        report_ids=d.report_ids, universe=d.universe, thread_id=d.thread_id, summary=d.summary,
        created_at=_utc(d.created_at),
        resolutions=tuple(_resolution(d, o) for o in by_decision.get(d.id, ())),
    ) for d in decisions]


@dataclass(frozen=True)
class RatingScore:
    """How one rating's resolved decisions did at one horizon: mean realised and excess returns (exact decimal
    fractions, to ten places, half up) and the verdicts."""

    rating: str
    horizon: int
    count: int
    mean_return: Decimal
    mean_excess: Decimal | None  # over the decisions that had a benchmark; None when none had
    hits: int
    scored: int  # decisions with a verdict (hit or miss)


def scores_by_rating(engine: Engine, namespace: str = "live", horizons: Sequence[int] = (5, 20)) -> list[RatingScore]:
    """The realised return by rating at each horizon, over every resolved decision of `namespace` (as TradingAgents
    scores its decision log), in the ratings' order, then by horizon."""
    with Session(engine) as db:
        rows = db.execute(select(DeskDecision.rating, DeskDecisionOutcome.horizon, DeskDecisionOutcome.realised_return,
                                 DeskDecisionOutcome.excess_return, DeskDecisionOutcome.hit)
                          .join(DeskDecisionOutcome, DeskDecisionOutcome.decision_id == DeskDecision.id)
                          .where(DeskDecision.namespace == namespace,
                                 DeskDecisionOutcome.horizon.in_(list(horizons)))).all()
    groups: dict[tuple[str, int], list[tuple[Decimal, Decimal | None, bool | None]]] = {}
    for rating, horizon, realised, excess, hit in rows:
        groups.setdefault((rating, horizon), []).append((realised, excess, hit))
    order = {rating: i for i, rating in enumerate(RATINGS)}
    scores = []
    for (rating, horizon), found in sorted(groups.items(), key=lambda g: (order.get(g[0][0], len(order)), g[0][1])):
        excesses = [e for _r, e, _h in found if e is not None]
        verdicts = [h for _r, _e, h in found if h is not None]
        scores.append(RatingScore(rating, horizon, len(found), _mean([r for r, _e, _h in found]),
                                  _mean(excesses) if excesses else None, sum(verdicts), len(verdicts)))
    return scores


def _mean(values: list[Decimal]) -> Decimal:
    return (sum(values, Decimal(0)) / len(values)).quantize(Decimal("1e-10"), rounding=ROUND_HALF_UP)


def _closes(provider: MarketDataProvider, codes: Iterable[str], entry: str,
            exit_date: str) -> dict[str, tuple[Decimal, Decimal]]:
    """(entry close, exit close) of each code that has both, as exact Decimals of the provider's floats."""
    known = provider.known_codes()
    wanted = [code for code in dict.fromkeys(codes) if known is None or code in known]
    if not wanted:
        return {}
    try:
        frame = provider.wide("close", wanted, entry, exit_date, warnings=[])
    except DataError as exc:
        log.warning("no closes for %d codes from %s to %s: %s", len(wanted), entry, exit_date, exc)
        return {}
    frame = frame.set_axis(frame.index.strftime("%Y%m%d"))
    if entry not in frame.index or exit_date not in frame.index:
        return {}
    first, last = frame.loc[entry], frame.loc[exit_date]
    return {code: (_exact(first[code]), _exact(last[code])) for code in wanted
            if pd.notna(first[code]) and pd.notna(last[code]) and first[code] > 0}


def _outcome(decision: DeskDecision, closes: dict[str, tuple[Decimal, Decimal]], horizon: int,
             exit_date: str) -> DeskDecisionOutcome | None:
    """The decision's outcome from the closes, or None when its own code lacks one."""
    if decision.ts_code not in closes:
        return None
    universe = list(dict.fromkeys(decision.universe))
    with localcontext(Context(prec=28)):
        entry, exit_close = closes[decision.ts_code]
        realised = (exit_close / entry - 1).quantize(PLACES)
        returns = [closes[code][1] / closes[code][0] - 1 for code in universe if code in closes]
        benchmark = (sum(returns, Decimal(0)) / len(returns)).quantize(PLACES) if returns else None
        excess = None if benchmark is None else realised - benchmark
    return DeskDecisionOutcome(
        decision_id=decision.id, horizon=horizon, exit_date=exit_date, entry_close=entry, exit_close=exit_close,
        realised_return=realised, benchmark_return=benchmark, excess_return=excess, benchmark_codes=len(returns),
        universe_size=len(universe), hit=_hit(decision.rating, excess), resolved_at=utcnow(),
    )


def _hit(rating: str, excess: Decimal | None) -> bool | None:
    if excess is None:
        return None
    if rating in ("Buy", "Overweight"):
        return excess > 0
    if rating in ("Sell", "Underweight"):
        return excess < 0
    return abs(excess) < HOLD_BAND


def _store(engine: Engine, outcome: DeskDecisionOutcome) -> bool:
    """Insert an outcome; False when a concurrent resolver stored it first."""
    columns = {column.key: getattr(outcome, column.key) for column in DeskDecisionOutcome.__table__.columns}
    insert = postgresql.insert if engine.dialect.name == "postgresql" else sqlite.insert
    statement = insert(DeskDecisionOutcome).values(columns).on_conflict_do_nothing(
        index_elements=["decision_id", "horizon"]).returning(DeskDecisionOutcome.decision_id)
    with engine.begin() as connection:
        return connection.execute(statement).scalar_one_or_none() is not None


def _resolution(decision: DeskDecision, outcome: DeskDecisionOutcome) -> Resolution:
    return Resolution(
        decision_id=decision.id, namespace=decision.namespace, ts_code=decision.ts_code,
        trade_date=decision.trade_date, rating=decision.rating, thread_id=decision.thread_id,
        horizon=outcome.horizon,
        exit_date=outcome.exit_date, entry_close=outcome.entry_close, exit_close=outcome.exit_close,
        realised_return=outcome.realised_return, benchmark_return=outcome.benchmark_return,
        excess_return=outcome.excess_return, benchmark_codes=outcome.benchmark_codes,
        universe_size=outcome.universe_size, hit=outcome.hit, resolved_at=_utc(outcome.resolved_at),
    )


def _percent(value: Decimal) -> str:
    """A signed percentage to two places (half up), with a true minus sign."""
    rounded = (value * 100).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    return f"{_MINUS if rounded < 0 else '+'}{abs(rounded)}%"


def _exact(value: float) -> Decimal:
    """The shortest decimal that reads back as this float (1715.0 -> Decimal("1715.0"))."""
    return Decimal(repr(float(value)))


def _decimal(what: str, value: Decimal | int | str) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, Decimal | int | str):
        raise ValueError(f"{what} is a Decimal, an int or a decimal string, not {type(value).__name__}")
    try:
        number = Decimal(value)
    except InvalidOperation:
        raise ValueError(f"{what} {value!r} is not a number") from None
    if not number.is_finite():
        raise ValueError(f"{what} must be finite, not {value!r}")
    return number


def _text(what: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > _WIDTHS[what]:
        raise ValueError(f"{what} must be a non-empty string of at most {_WIDTHS[what]} characters, not {value!r}")
    return value


def _utc(moment: datetime) -> datetime:
    """SQLite hands back naive datetimes; they were stored in UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
