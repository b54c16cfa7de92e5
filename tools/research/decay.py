"""The decay monitor's arithmetic: a factor's daily rank IC on new sessions, its rolling 20- and 60-session means,
the 60-session ICIR and t-statistic against the factor's holdout level, and a state per factor (active, weakening,
dead) with hysteresis: a state is entered and left at different levels, and only after CONFIRM sessions in a row
point to it, so a factor does not flap from one day to the next.

States, with s the sign of the reference (holdout) rank IC and |ref| its size:
- weakening: the 20-session mean × s falls below WEAK_ENTER × |ref| (left again at WEAK_LEAVE × |ref|);
- dead: the 60-session mean × s falls below DEAD_ENTER × |ref| and its t-statistic × s below DEAD_T (left again
  only at DEAD_LEAVE × |ref| with t ≥ LIVE_T);
- active: neither."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from tools.research.records import DecayRecord

SHORT, LONG = 20, 60
CONFIRM = 3
WEAK_ENTER, WEAK_LEAVE = 0.5, 0.75
DEAD_ENTER, DEAD_LEAVE, DEAD_T, LIVE_T = 0.25, 0.5, 1.0, 2.0
STATES = ("active", "weakening", "dead")
KEPT = LONG  # daily ICs kept with the state


@dataclass(frozen=True)
class Figures:
    session: str
    ic20: float
    ic60: float
    icir60: float
    t60: float
    reference: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def daily_rank_ic(factor: pd.DataFrame, close: pd.DataFrame) -> pd.Series:
    """Spearman correlation of each session's factor with the next session's return, dated by that next session
    (the day its close completes it); a pair without two codes that vary is NaN."""
    close = close.reindex(index=factor.index, columns=factor.columns)
    forward = close.shift(-1) / close - 1
    f, r = factor.to_numpy(dtype=float)[:-1], forward.to_numpy(dtype=float)[:-1]
    both = np.isfinite(f) & np.isfinite(r)
    f, r = np.where(both, f, np.nan), np.where(both, r, np.nan)
    n = both.sum(axis=1, keepdims=True)
    rf = pd.DataFrame(f).rank(axis=1).to_numpy(copy=True)  # average ranks for ties, as Rank IC
    rr = pd.DataFrame(r).rank(axis=1).to_numpy(copy=True)
    rf -= np.nansum(rf, axis=1, keepdims=True) / np.maximum(n, 1)
    rr -= np.nansum(rr, axis=1, keepdims=True) / np.maximum(n, 1)
    num = np.nansum(rf * rr, axis=1)
    den = np.sqrt(np.nansum(rf * rf, axis=1) * np.nansum(rr * rr, axis=1))
    ic = np.divide(num, den, out=np.full(len(num), np.nan), where=(den > 0) & (n[:, 0] >= 2))
    return pd.Series(ic, index=factor.index[1:])


def figures(ics: pd.Series, reference: float) -> Figures:
    """The rolling figures at the last session of `ics` (the daily rank ICs, oldest first)."""
    short, long = ics.iloc[-SHORT:].dropna(), ics.iloc[-LONG:].dropna()
    sd = float(long.std(ddof=1)) if len(long) > 1 else float("nan")
    icir = float(long.mean()) / sd if sd and math.isfinite(sd) and sd > 0 else float("nan")
    t = icir * math.sqrt(len(long)) if math.isfinite(icir) else float("nan")
    return Figures(f"{ics.index[-1]:%Y%m%d}", float(short.mean()) if len(short) else float("nan"),
                   float(long.mean()) if len(long) else float("nan"), icir, t, reference)


def pointed(state: str, figs: Figures) -> str:
    """The state the figures point to from `state` (the levels to leave a state are stricter than to enter it)."""
    size, sign = abs(figs.reference), 1.0 if figs.reference >= 0 else -1.0
    if size == 0 or not math.isfinite(figs.ic60):
        return state
    strength20, strength60, t = sign * figs.ic20 / size, sign * figs.ic60 / size, sign * figs.t60
    if state == "dead":
        alive = strength60 >= DEAD_LEAVE and math.isfinite(t) and t >= LIVE_T
        if not alive:
            return "dead"
    elif strength60 < DEAD_ENTER and (not math.isfinite(t) or t < DEAD_T):
        return "dead"
    weak_level = WEAK_LEAVE if state in ("weakening", "dead") else WEAK_ENTER
    return "weakening" if strength20 < weak_level else "active"


@dataclass
class Tracker:
    """A factor's monitored state as stored: the state, since when, the last session seen, a state the figures
    point to and for how many sessions in a row, the kept daily ICs and the changes not yet posted."""

    state: str
    since: str
    checked: str
    pending: str | None
    pending_count: int
    ics: dict[str, float]
    unposted: list[dict[str, Any]]
    last: dict[str, Any] | None = None

    def step(self, figs: Figures) -> dict[str, Any] | None:
        """Take one session's figures; the change (from, to, session, figures) when the state changes."""
        self.checked, self.last = figs.session, figs.as_dict()
        target = pointed(self.state, figs)
        if target == self.state:
            self.pending, self.pending_count = None, 0
            return None
        self.pending_count = self.pending_count + 1 if target == self.pending else 1
        self.pending = target
        if self.pending_count < CONFIRM:
            return None
        change = {"from": self.state, "to": target, "session": figs.session, "figures": figs.as_dict()}
        self.state, self.since, self.pending, self.pending_count = target, figs.session, None, 0
        self.unposted.append(change)
        return change


class DecayStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def load(self, factor_id: int) -> Tracker | None:
        with Session(self.engine) as session:
            row = session.get(DecayRecord, factor_id)
            if row is None:
                return None
            data = dict(row.figures or {})
            return Tracker(row.state, row.since, row.checked, row.pending, row.pending_count,
                           dict(data.get("ics") or {}), list(data.get("unposted") or []), data.get("last"))

    def save(self, factor_id: int, tracker: Tracker) -> None:
        kept = dict(sorted(tracker.ics.items())[-KEPT:])
        figures = {"ics": kept, "unposted": tracker.unposted, "last": tracker.last}
        with Session(self.engine) as session, session.begin():
            row = session.get(DecayRecord, factor_id)
            if row is None:
                row = DecayRecord(factor_id=factor_id)
                session.add(row)
            row.state, row.since, row.checked = tracker.state, tracker.since, tracker.checked
            row.pending, row.pending_count, row.figures = tracker.pending, tracker.pending_count, figures

    def states(self) -> dict[int, Tracker]:
        with Session(self.engine) as session:
            ids = [r.factor_id for r in session.query(DecayRecord.factor_id)]
        return {i: t for i in ids if (t := self.load(i)) is not None}
