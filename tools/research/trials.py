"""Trials: every evaluation of a variant (a factor on a universe and period, each code attempt of the assistant
included) is recorded per research thread and per person, with its in-sample return series kept compactly, so the
Deflated Sharpe Ratio and the probability of backtest overfitting can be computed from what was really tried."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine, func, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.orm import Session

from tools.research.overfitting import PBO_BLOCKS, PBO_MIN_TRIALS, deflated_sharpe, moments, pbo
from tools.research.records import TrialRecord


@dataclass(frozen=True)
class Trial:
    """A trial as recorded: `returns` (dates → return) is None for a code attempt that was never evaluated."""

    key: str
    thread_id: str
    person: str | None
    kind: str
    name: str
    universe: str
    start: str
    end: str
    returns: pd.Series | None = None


@dataclass(frozen=True)
class Judgement:
    """What the trials behind a result say of it: the DSR and, with enough trials with series, the PBO."""

    trials: int  # in the research thread, the chosen one included
    person_trials: int  # by the same person, everywhere
    dsr: float
    sharpe: float  # the chosen trial's in-sample Sharpe ratio, per observation
    benchmark: float  # the expected maximum Sharpe ratio of that many trials without skill
    pbo: float | None  # None: fewer than PBO_MIN_TRIALS trials with a return series

    def as_dict(self) -> dict[str, Any]:
        return {"trials": self.trials, "person_trials": self.person_trials, "dsr": self.dsr, "sharpe": self.sharpe,
                "benchmark": self.benchmark, "pbo": self.pbo}


def universe_key(codes: list[str]) -> str:
    """A universe named by its codes (empty: the provider's whole universe), short enough to index."""
    if not codes:
        return "all"
    return "codes:" + hashlib.sha256(",".join(sorted(codes)).encode()).hexdigest()[:16]


def body_key(body: str) -> str:
    """A code variant, named by the hash of its non-blank lines."""
    lines = [line.rstrip() for line in body.strip("\n").splitlines() if line.strip()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]


def _pack(returns: pd.Series) -> tuple[bytes, bytes, dict[str, Any]]:
    clean = returns.dropna()
    clean = clean[np.isfinite(clean.to_numpy(dtype=float))]
    dates = pd.DatetimeIndex(clean.index).strftime("%Y%m%d").astype(int).to_numpy(dtype=np.int32)
    values = clean.to_numpy(dtype=np.float32)
    m = moments(clean.to_numpy(dtype=float))
    return dates.tobytes(), values.tobytes(), {"sharpe": m.sharpe, "observations": m.n, "skew": m.skew,
                                               "kurtosis": m.kurtosis}


def _unpack(dates: bytes, values: bytes) -> pd.Series:
    index = pd.to_datetime(np.frombuffer(dates, dtype=np.int32).astype(str), format="%Y%m%d")
    return pd.Series(np.frombuffer(values, dtype=np.float32).astype(float), index=index)


class TrialStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def record(self, trials: list[Trial]) -> int:
        """Record `trials` (one already recorded under its key is left as it is); how many were new."""
        rows = []
        for trial in trials:
            row: dict[str, Any] = {"key": trial.key, "thread_id": trial.thread_id, "person": trial.person,
                                   "kind": trial.kind, "name": trial.name, "universe": trial.universe,
                                   "start": trial.start, "end": trial.end}
            if trial.returns is not None and trial.returns.notna().sum() >= 2:
                row["dates"], row["returns"], figures = _pack(trial.returns)
                row.update(figures)
            rows.append(row)
        if not rows:
            return 0
        dialect = self.engine.dialect.name
        insert = pg_insert if dialect == "postgresql" else sqlite_insert
        with Session(self.engine) as session, session.begin():
            before = session.scalar(select(func.count()).select_from(TrialRecord)) or 0
            for row in rows:
                session.execute(insert(TrialRecord).values(**row).on_conflict_do_nothing(index_elements=["key"]))
            after = session.scalar(select(func.count()).select_from(TrialRecord)) or 0
        return after - before

    def of_thread(self, thread_id: str) -> list[TrialRecord]:
        with Session(self.engine) as session:
            return list(session.scalars(select(TrialRecord).where(TrialRecord.thread_id == thread_id)
                                        .order_by(TrialRecord.id)))

    def count_of(self, person: str | None) -> int:
        if person is None:
            return 0
        with Session(self.engine) as session:
            return session.scalar(select(func.count()).select_from(TrialRecord)
                                  .where(TrialRecord.person == person)) or 0


def judge(chosen: pd.Series, records: list[TrialRecord], person_trials: int) -> Judgement:
    """The DSR of the chosen trial's in-sample returns among `records` (its research thread's trials, itself
    included: each counts, the Sharpe ratios of those with a series give the variance) and, with at least
    PBO_MIN_TRIALS series, the PBO of the search by CSCV over the dates they share."""
    sharpes = [r.sharpe for r in records if r.sharpe is not None]
    variance = float(np.var(sharpes, ddof=1)) if len(sharpes) > 1 else 0.0
    trials = max(len(records), 1)  # an attempt without a series counts; the series give the variance
    deflated = deflated_sharpe(moments(chosen.dropna().to_numpy(dtype=float)), trials, variance)
    return Judgement(trials, max(person_trials, 1), deflated.probability, deflated.sharpe, deflated.benchmark,
                     _pbo(records))


def _pbo(records: list[TrialRecord]) -> float | None:
    series = [_unpack(r.dates, r.returns) for r in records if r.dates is not None and r.returns is not None]
    if len(series) < PBO_MIN_TRIALS:
        return None
    matrix = pd.concat(series, axis=1, join="inner").dropna()
    blocks = min(PBO_BLOCKS, (len(matrix) // 2) // 2 * 2)
    if blocks < 2:
        return None
    return pbo(matrix.to_numpy(), blocks=blocks)
