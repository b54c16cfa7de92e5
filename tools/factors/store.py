"""The factor library in the database: versions, bulk-loaded values, metrics, near-duplicate search.

A save is one transaction (factor row, values, metrics) keyed by an idempotency key, so a run that
resumes after a crash finds its earlier save instead of writing a second version. Values go in with
PostgreSQL `COPY` (binary) on Postgres and batched inserts on SQLite."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Connection, Engine, func, insert, select
from sqlalchemy.exc import IntegrityError

from tools.factors.records import FactorMetric, FactorRecord, FactorValue

DUPLICATE_CORRELATION = 0.99
# Near-duplicate search compares a bounded sample: the frame's last dates with values, and codes spread evenly
# over its sorted columns, so a save costs the same whatever the library's history.
DUPLICATE_SAMPLE_DATES = 60
DUPLICATE_SAMPLE_CODES = 200
SQLITE_BATCH = 50_000
_COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00" + bytes(8)  # signature, flags 0, header extension length 0
_COPY_TRAILER = b"\xff\xff"  # field count -1


class FactorStoreError(RuntimeError):
    """A factor that cannot be found or saved; the message says why."""


@dataclass(frozen=True)
class FactorInfo:
    id: int
    name: str
    version: int
    description: str
    code: str
    spec: dict[str, Any]
    author: str | None
    reviewer: str | None
    decision: str
    status: str
    created_at: datetime


@dataclass(frozen=True)
class NearDuplicate:
    name: str
    version: int
    correlation: float
    overlap: int  # sampled (date, code) cells both factors have


def _info(row: Any) -> FactorInfo:
    return FactorInfo(row.id, row.name, row.version, row.description, row.code, dict(row.spec or {}), row.author,
                      row.reviewer, row.decision, row.status, row.created_at)


def trade_dates(frame: pd.DataFrame) -> np.ndarray:
    """A frame's dates as the stored YYYYMMDD strings."""
    return pd.DatetimeIndex(frame.index).strftime("%Y%m%d").to_numpy()


def long_values(frame: pd.DataFrame) -> pd.DataFrame:
    """A dates x codes frame as (trade_date YYYYMMDD, ts_code, value) rows, finite values only."""
    values = frame.to_numpy(dtype=float)
    rows, cols = np.nonzero(np.isfinite(values))
    index = trade_dates(frame)
    return pd.DataFrame({"trade_date": index[rows], "ts_code": frame.columns.to_numpy()[cols].astype(str),
                         "value": values[rows, cols]})


def binary_copy_chunks(factor_id: int, frame: pd.DataFrame, chunk_rows: int = 500_000) -> Iterator[bytes]:
    """factor_values rows of a dates x codes frame (finite values only) in PostgreSQL's binary COPY format.

    Built with numpy record arrays, one per ts_code byte length, instead of one Python call per row; the
    header and trailer are included, so the chunks go to `Copy.write` as they are.
    """
    values = frame.to_numpy(dtype=float)
    dates = trade_dates(frame).astype("S8")
    codes = [str(c).encode() for c in frame.columns]
    lengths = np.array([len(c) for c in codes])
    yield _COPY_SIGNATURE
    for length in np.unique(lengths[lengths > 0]):
        columns = np.flatnonzero(lengths == length)
        block = values[:, columns]
        rows, cols = np.nonzero(np.isfinite(block))
        names = np.array([codes[c] for c in columns], dtype=f"S{length}")
        record = np.dtype([("fields", ">i2"), ("id_size", ">i4"), ("id", ">i8"), ("date_size", ">i4"),
                           ("date", "S8"), ("code_size", ">i4"), ("code", f"S{length}"), ("value_size", ">i4"),
                           ("value", ">f8")])
        for start in range(0, len(rows), chunk_rows):
            r, c = rows[start:start + chunk_rows], cols[start:start + chunk_rows]
            out = np.empty(len(r), record)
            out["fields"], out["id_size"], out["id"] = 4, 8, factor_id
            out["date_size"], out["date"] = 8, dates[r]
            out["code_size"], out["code"] = length, names[c]
            out["value_size"], out["value"] = 8, block[r, c]
            yield out.tobytes()
    yield _COPY_TRAILER


class FactorStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def save(self, *, name: str, description: str, code: str, spec: dict[str, Any], author: str | None,
             reviewer: str | None, decision: str, run_key: str, values: pd.DataFrame | None = None,
             metrics: pd.DataFrame | None = None) -> tuple[FactorInfo, bool]:
        """Save a new version of `name` (status active, or rejected when decision is reject).

        Returns (info, created); an existing save with the same `run_key` is returned unchanged."""
        existing = self._by_run_key(run_key)
        if existing is not None:
            return existing, False
        status = "rejected" if decision == "reject" else "active"
        try:
            with self.engine.begin() as conn:
                version = (conn.scalar(select(func.max(FactorRecord.version)).where(FactorRecord.name == name))
                           or 0) + 1
                factor_id = conn.execute(insert(FactorRecord).values(
                    name=name, version=version, description=description, code=code, spec=spec, author=author,
                    reviewer=reviewer, decision=decision, status=status, run_key=run_key,
                    created_at=datetime.now().astimezone()).returning(FactorRecord.id)).scalar_one()
                if values is not None:
                    self._write_values(conn, factor_id, values)
                if metrics is not None:
                    rows = [{"factor_id": factor_id, "period": int(period), "name": str(key),
                             "value": None if not np.isfinite(v) else float(v)}
                            for period, row in metrics.iterrows() for key, v in row.items()]
                    if rows:
                        conn.execute(insert(FactorMetric), rows)
        except IntegrityError:
            existing = self._by_run_key(run_key)  # a concurrent save of the same run won
            if existing is None:
                raise
            return existing, False
        saved = self._by_run_key(run_key)
        assert saved is not None
        return saved, True

    def _write_values(self, conn: Connection, factor_id: int, values: pd.DataFrame) -> None:
        if conn.dialect.name == "postgresql":
            raw = conn.connection.driver_connection
            with raw.cursor() as cursor, cursor.copy(
                    "COPY factor_values (factor_id, trade_date, ts_code, value) FROM STDIN (FORMAT BINARY)") as copy:
                for chunk in binary_copy_chunks(factor_id, values):
                    copy.write(chunk)
            return
        rows = long_values(values)
        records = [{"factor_id": factor_id, "trade_date": d, "ts_code": c, "value": float(v)}
                   for d, c, v in zip(rows["trade_date"], rows["ts_code"], rows["value"], strict=True)]
        for start in range(0, len(records), SQLITE_BATCH):
            conn.execute(insert(FactorValue), records[start:start + SQLITE_BATCH])

    def _by_run_key(self, run_key: str) -> FactorInfo | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(FactorRecord).where(FactorRecord.run_key == run_key)).first()
            return _info(row) if row else None

    def latest(self, name: str, status: str | None = "active") -> FactorInfo | None:
        query = select(FactorRecord).where(FactorRecord.name == name)
        if status:
            query = query.where(FactorRecord.status == status)
        with self.engine.connect() as conn:
            row = conn.execute(query.order_by(FactorRecord.version.desc()).limit(1)).first()
            return _info(row) if row else None

    def get(self, factor_id: int) -> FactorInfo | None:
        with self.engine.connect() as conn:
            row = conn.execute(select(FactorRecord).where(FactorRecord.id == factor_id)).first()
            return _info(row) if row else None

    def versions(self, name: str) -> list[FactorInfo]:
        with self.engine.connect() as conn:
            rows = conn.execute(select(FactorRecord).where(FactorRecord.name == name)
                                .order_by(FactorRecord.version)).all()
            return [_info(r) for r in rows]

    def list(self) -> list[FactorInfo]:
        """The newest version of every factor name (any status), newest first."""
        newest = (select(FactorRecord.name, func.max(FactorRecord.version).label("version"))
                  .group_by(FactorRecord.name).subquery())
        query = (select(FactorRecord)
                 .join(newest, (FactorRecord.name == newest.c.name) & (FactorRecord.version == newest.c.version))
                 .order_by(FactorRecord.created_at.desc()))
        with self.engine.connect() as conn:
            return [_info(r) for r in conn.execute(query).all()]

    def metrics(self, factor_id: int) -> pd.DataFrame:
        """periods x metric names."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(FactorMetric.period, FactorMetric.name, FactorMetric.value)
                                .where(FactorMetric.factor_id == factor_id)).all()
        if not rows:
            return pd.DataFrame()
        long = pd.DataFrame(rows, columns=["period", "name", "value"])
        return long.pivot(index="period", columns="name", values="value").astype(float)

    def values(self, factor_id: int, start: str | None = None, end: str | None = None) -> pd.DataFrame:
        """A stored factor as a dates x codes frame (DatetimeIndex)."""
        query = select(FactorValue.trade_date, FactorValue.ts_code, FactorValue.value).where(
            FactorValue.factor_id == factor_id)
        if start:
            query = query.where(FactorValue.trade_date >= start)
        if end:
            query = query.where(FactorValue.trade_date <= end)
        with self.engine.connect() as conn:
            long = pd.DataFrame(conn.execute(query).all(), columns=["trade_date", "ts_code", "value"])
        if long.empty:
            return pd.DataFrame(dtype=float)
        wide = long.pivot(index="trade_date", columns="ts_code", values="value").astype(float)
        wide.index = pd.to_datetime(wide.index, format="%Y%m%d")
        return wide.sort_index()

    def count_values(self, factor_id: int) -> int:
        with self.engine.connect() as conn:
            return int(conn.scalar(select(func.count()).where(FactorValue.factor_id == factor_id)) or 0)

    def near_duplicates(self, frame: pd.DataFrame, threshold: float = DUPLICATE_CORRELATION,
                        min_overlap: int = 100) -> builtins.list[NearDuplicate]:
        """Active factors whose stored values correlate with `frame` at `threshold` or more: Pearson over the
        sampled (date, code) cells both have (see `duplicate_sample`), one query for the whole library."""
        dates, codes = duplicate_sample(frame)
        if not dates or not codes:
            return []
        active = {info.id: info for info in self.list() if info.status == "active"}
        if not active:
            return []
        query = select(FactorValue.factor_id, FactorValue.trade_date, FactorValue.ts_code, FactorValue.value).where(
            FactorValue.factor_id.in_(list(active)), FactorValue.trade_date.in_(dates), FactorValue.ts_code.in_(codes))
        with self.engine.connect() as conn:
            long = pd.DataFrame(conn.execute(query).all(), columns=["factor_id", "trade_date", "ts_code", "value"])
        sample = frame.set_axis(trade_dates(frame), axis=0).set_axis(frame.columns.astype(str), axis=1)
        a = sample.loc[dates, codes].to_numpy(dtype=float).ravel()
        found = []
        for factor_id, rows in long.groupby("factor_id"):
            stored = rows.pivot(index="trade_date", columns="ts_code", values="value").reindex(index=dates,
                                                                                               columns=codes)
            b = stored.to_numpy(dtype=float).ravel()
            both = np.isfinite(a) & np.isfinite(b)
            if both.sum() < min_overlap or np.std(a[both]) == 0 or np.std(b[both]) == 0:
                continue
            corr = float(np.corrcoef(a[both], b[both])[0, 1])
            if corr >= threshold:
                info = active[int(factor_id)]
                found.append(NearDuplicate(info.name, info.version, corr, int(both.sum())))
        return sorted(found, key=lambda d: -d.correlation)


def duplicate_sample(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The cells near-duplicate search compares: the last `DUPLICATE_SAMPLE_DATES` dates (YYYYMMDD) with a finite
    value, and up to `DUPLICATE_SAMPLE_CODES` of the codes with a value on them, evenly spread over the sorted
    codes. Deterministic, so a factor and its copy are sampled alike."""
    if frame.empty:
        return [], []
    finite = np.isfinite(frame.to_numpy(dtype=float))
    rows = np.flatnonzero(finite.any(axis=1))[-DUPLICATE_SAMPLE_DATES:]
    columns = np.flatnonzero(finite[rows].any(axis=0))
    codes = np.sort(frame.columns.to_numpy()[columns].astype(str))
    if len(codes) > DUPLICATE_SAMPLE_CODES:
        codes = codes[np.unique(np.linspace(0, len(codes) - 1, DUPLICATE_SAMPLE_CODES).round().astype(int))]
    return trade_dates(frame)[rows].tolist(), codes.tolist()
