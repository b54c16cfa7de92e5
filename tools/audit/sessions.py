"""The trading session each audit entry belongs to, for `audit export --session-from/--session-to`: on a simulated
clock the wall-clock date is not the session. An order's events are its order's session (`paper_orders`); any other
entry is the session the simulated clock stood at when it was written (the last `clock moved` before it), and
before any move (or on live data) its Shanghai date."""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from datetime import date, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from tools.audit.canonical import as_utc
from tools.audit.records import ChainEntry
from tools.broker.clock import SHANGHAI
from tools.broker.records import OrderEvent, PaperOrder


def sessions_of(session: Session, entries: Sequence[ChainEntry],
                rows: dict[tuple[str, int], dict[str, Any]]) -> dict[int, date]:
    """Each entry's session date, by entry id."""
    orders = {cid: day for cid, day in session.execute(select(PaperOrder.client_order_id, PaperOrder.session_date))}
    moves = sorted((as_utc(at), str(detail.get("to") or "")) for at, detail in session.execute(
        select(OrderEvent.at, OrderEvent.detail).where(OrderEvent.event == "clock moved")))
    times = [at for at, _to in moves]
    found = {}
    for entry in entries:
        row = rows.get((entry.source, entry.source_id), {})
        day = orders.get(row.get("client_order_id") or "")
        if day is None:
            at = as_utc(row.get("at") or row.get("created_at") or entry.at)
            index = bisect.bisect_right(times, at) - 1
            day = moves[index][1] if index >= 0 else ""
            found[entry.id] = _day(day) if day else at.astimezone(SHANGHAI).date()
        else:
            found[entry.id] = _day(day)
    return found


def _day(yyyymmdd: str) -> date:
    return datetime.strptime(yyyymmdd, "%Y%m%d").date()
