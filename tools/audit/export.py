"""`quantdesk audit export`: one chain's entries between two dates as a CSV a compliance officer reads (times in
Asia/Shanghai, who, what, on which order, the details), each with its hashes, and a last row carrying the chain's
signed head: kept outside the database, it anchors the chain (a later verify must find the same entry there)."""

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
from tools.audit.verify import audited_rows
from tools.broker.clock import SHANGHAI

COLUMNS = ["chain", "seq", "time (Asia/Shanghai)", "record", "event", "order", "by", "detail", "row_hash",
           "prev_hash", "hash"]
def export_csv(engine: Engine, chain: str, start: date, end: date, out: TextIO) -> int:
    """Write the chain's entries from `start` to `end` (Shanghai dates, both included) and its signed head; the
    number of entries written."""
    # in UTC: SQLite keeps the UTC wall time and drops the zone, so a Shanghai midnight would compare 8 hours late
    since = datetime.combine(start, time(), SHANGHAI).astimezone(UTC)
    until = datetime.combine(end + timedelta(days=1), time(), SHANGHAI).astimezone(UTC)
    with Session(engine) as session:
        entries = session.scalars(select(ChainEntry).where(ChainEntry.chain == chain, ChainEntry.at >= since,
                                                           ChainEntry.at < until).order_by(ChainEntry.seq)).all()
        rows = audited_rows(session, entries)
        head = session.get(ChainHead, chain)
    writer = csv.writer(out)
    writer.writerow(COLUMNS)
    for entry in entries:
        row = rows.get((entry.source, entry.source_id), {})
        shown = as_utc(row.get("at") or row.get("created_at") or entry.at).astimezone(SHANGHAI)
        writer.writerow([chain, entry.seq, shown.strftime("%Y-%m-%d %H:%M:%S"), f"{entry.source} {entry.source_id}",
                         row.get("event") or row.get("action") or "(row missing)",
                         row.get("client_order_id") or row.get("thread_id") or "",
                         row.get("actor") or row.get("user_id") or "",
                         json.dumps(row.get("detail") or {}, ensure_ascii=False, sort_keys=True),
                         entry.row_hash, entry.prev_hash, entry.hash])
    if head is not None:
        writer.writerow([chain, head.seq, "", signature_kind(head.signature), HEAD_EVENT, "", "",
                         head.signature or UNSIGNED, "", "", head.hash])
    return len(entries)

