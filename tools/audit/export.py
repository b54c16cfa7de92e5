"""`quantdesk audit export`: one chain's entries between two dates (written, trading session or both) as a CSV a
compliance officer reads (times in Asia/Shanghai, the session, who, what, on which order, the details), each with
its hashes, and a last row carrying the chain's signed head: kept outside the database, it anchors the chain (a
later verify must find the same entry there)."""

from __future__ import annotations

import csv
import json
from datetime import UTC, date, datetime, time, timedelta
from typing import TextIO

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from tools.audit.canonical import as_utc
from tools.audit.heads import HEAD_EVENT, UNSIGNED, signature_kind
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.sessions import sessions_of
from tools.audit.verify import audited_rows
from tools.broker.clock import SHANGHAI

COLUMNS = ["chain", "seq", "time (Asia/Shanghai)", "session", "record", "event", "order", "by", "detail",
           "row_hash", "prev_hash", "hash"]
Days = tuple[date, date]  # first and last day, both included


def export_csv(engine: Engine, chain: str, days: Days | None, out: TextIO, sessions: Days | None = None) -> int:
    """Write the chain's entries written on `days` (Shanghai dates) and of trading `sessions` (either or both; None:
    any) and its signed head; the number of entries written."""
    query = select(ChainEntry).where(ChainEntry.chain == chain).order_by(ChainEntry.seq)
    if days is not None:
        # in UTC: SQLite keeps the UTC wall time and drops the zone, so a Shanghai midnight would compare 8 hours late
        since = datetime.combine(days[0], time(), SHANGHAI).astimezone(UTC)
        until = datetime.combine(days[1] + timedelta(days=1), time(), SHANGHAI).astimezone(UTC)
        query = query.where(ChainEntry.at >= since, ChainEntry.at < until)
    with Session(engine) as session:
        entries = session.scalars(query).all()
        rows = audited_rows(session, entries)
        of_session = sessions_of(session, entries, rows)
        head = session.get(ChainHead, chain)
    if sessions is not None:
        entries = [e for e in entries if sessions[0] <= of_session[e.id] <= sessions[1]]
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for entry in entries:
        row = rows.get((entry.source, entry.source_id), {})
        shown = as_utc(row.get("at") or row.get("created_at") or entry.at).astimezone(SHANGHAI)
        writer.writerow([chain, entry.seq, shown.strftime("%Y-%m-%d %H:%M:%S"), f"{of_session[entry.id]:%Y-%m-%d}",
                         f"{entry.source} {entry.source_id}",
                         row.get("event") or row.get("action") or "(row missing)",
                         row.get("client_order_id") or row.get("thread_id") or "",
                         row.get("actor") or row.get("user_id") or "",
                         json.dumps(row.get("detail") or {}, ensure_ascii=False, sort_keys=True),
                         entry.row_hash, entry.prev_hash, entry.hash])
    if head is not None:
        writer.writerow([chain, head.seq, "", "", signature_kind(head.signature), HEAD_EVENT, "", "",
                         head.signature or UNSIGNED, "", "", head.hash])
    return len(entries)

