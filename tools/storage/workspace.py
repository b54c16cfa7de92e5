"""Per-thread workspace: named wide frames (ohlcv/, indicators/, signal/, factor/) persisted in the database.

Replaces the seeds' process-global GLOBAL_DATA_STATE. Every read returns a fresh copy, so no two
threads (or two nodes) share mutable frames; another process on the same database sees the same data.
"""

from __future__ import annotations

import builtins
import io
import re
from dataclasses import dataclass
from datetime import datetime

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import DateTime, Engine, Integer, LargeBinary, String, delete, select
from sqlalchemy.orm import Mapped, Session, mapped_column

from tools.i18n import _
from tools.storage.models import Base, utcnow

NAMESPACES = ("ohlcv", "indicators", "signal", "factor")
_NAME = re.compile(r"^(ohlcv|indicators|signal|factor)/[A-Za-z0-9_.\-]{1,150}$")


class WorkspaceFrame(Base):
    """A named wide frame of one thread's workspace, stored as Parquet bytes."""

    __tablename__ = "workspace_frames"

    thread_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    name: Mapped[str] = mapped_column(String(200), primary_key=True)
    n_rows: Mapped[int] = mapped_column(Integer)
    n_cols: Mapped[int] = mapped_column(Integer)
    first_date: Mapped[str | None] = mapped_column(String(10))
    last_date: Mapped[str | None] = mapped_column(String(10))
    data: Mapped[bytes] = mapped_column(LargeBinary)
    version: Mapped[int] = mapped_column(Integer, default=1)
    updated_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow, onupdate=utcnow)


class WorkspaceError(KeyError):
    """A missing frame or a bad frame name."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "workspace error"


@dataclass(frozen=True)
class FrameInfo:
    """What graph state keeps about a frame: its name and shape, never the data."""

    name: str
    rows: int
    cols: int
    first_date: str | None
    last_date: str | None
    version: int

    def describe(self) -> str:
        span = f" {self.first_date}..{self.last_date}" if self.first_date else ""
        return f"{self.name} {self.rows}x{self.cols}{span}"


def check_name(name: str) -> str:
    if not _NAME.match(name):
        raise WorkspaceError(_("bad workspace name {name!r}: use <namespace>/<name> with namespace one of "
                               "{namespaces} and letters, digits, _ . - in the name").format(
            name=name, namespaces=", ".join(NAMESPACES)))
    return name


def _date_span(frame: pd.DataFrame) -> tuple[str | None, str | None]:
    if isinstance(frame.index, pd.DatetimeIndex) and len(frame.index):
        return frame.index.min().strftime("%Y%m%d"), frame.index.max().strftime("%Y%m%d")
    return None, None


def encode_frame(frame: pd.DataFrame) -> bytes:
    """Parquet bytes of a frame (index kept); a data-only format."""
    sink = io.BytesIO()
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=True), sink, compression="lz4")
    return sink.getvalue()


def decode_frame(data: bytes) -> pd.DataFrame:
    return pq.read_table(io.BytesIO(data)).to_pandas()


class Workspace:
    """The frames of one thread. Cheap to create; all state lives in the database."""

    def __init__(self, engine: Engine, thread_id: str) -> None:
        if not thread_id:
            raise WorkspaceError("a workspace needs a thread id")
        self.engine = engine
        self.thread_id = thread_id

    def put(self, name: str, frame: pd.DataFrame) -> FrameInfo:
        """Store (or replace) a frame; returns its info for graph state."""
        check_name(name)
        if not isinstance(frame, pd.DataFrame):
            raise WorkspaceError(f"{name}: only DataFrames go into the workspace, not {type(frame).__name__}")
        first, last = _date_span(frame)
        data = encode_frame(frame)
        with Session(self.engine) as session, session.begin():
            row = session.get(WorkspaceFrame, (self.thread_id, name), with_for_update=True)
            if row is None:
                row = WorkspaceFrame(thread_id=self.thread_id, name=name, version=0)
                session.add(row)
            row.n_rows, row.n_cols = frame.shape
            row.first_date, row.last_date = first, last
            row.data = data
            row.version = (row.version or 0) + 1
            row.updated_at = utcnow()
            info = _info(row)
        return info

    def get(self, name: str) -> pd.DataFrame:
        """A fresh copy of a stored frame."""
        check_name(name)
        with Session(self.engine) as session:
            data = session.scalar(
                select(WorkspaceFrame.data).where(
                    WorkspaceFrame.thread_id == self.thread_id, WorkspaceFrame.name == name
                )
            )
        if data is None:
            raise WorkspaceError(_("no frame {name!r} in this thread's workspace; have: {names}").format(
                name=name, names=self.names() or _("none")))
        return decode_frame(data)

    def info(self, name: str) -> FrameInfo:
        for item in self.list(name.split("/", 1)[0]):
            if item.name == name:
                return item
        raise WorkspaceError(_("no frame {name!r} in this thread's workspace").format(name=name))

    def __contains__(self, name: str) -> bool:
        return name in self.names()

    def list(self, namespace: str | None = None) -> list[FrameInfo]:
        """Frames of the thread, optionally one namespace, sorted by name."""
        columns = (WorkspaceFrame.name, WorkspaceFrame.n_rows, WorkspaceFrame.n_cols,
                   WorkspaceFrame.first_date, WorkspaceFrame.last_date, WorkspaceFrame.version)
        query = select(*columns).where(WorkspaceFrame.thread_id == self.thread_id)
        if namespace:
            if namespace not in NAMESPACES:
                raise WorkspaceError(_("unknown namespace {namespace!r}; use one of {namespaces}").format(
                    namespace=namespace, namespaces=", ".join(NAMESPACES)))
            query = query.where(WorkspaceFrame.name.startswith(f"{namespace}/"))
        with Session(self.engine) as session:
            rows = session.execute(query.order_by(WorkspaceFrame.name)).all()
        return [FrameInfo(*row) for row in rows]

    def names(self) -> builtins.list[str]:
        return [item.name for item in self.list()]

    def clear(self) -> None:
        with Session(self.engine) as session, session.begin():
            session.execute(delete(WorkspaceFrame).where(WorkspaceFrame.thread_id == self.thread_id))


def _info(row: WorkspaceFrame) -> FrameInfo:
    return FrameInfo(row.name, row.n_rows, row.n_cols, row.first_date, row.last_date, row.version)
