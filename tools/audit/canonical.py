"""Canonical JSON of an audited row and the hashes of the chain: the same bytes whether computed from the objects
just written or from the row read back (SQLite drops time zones, JSON columns turn keys into strings)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

GENESIS = "0" * 64  # the previous hash of a chain's first entry


def as_utc(moment: datetime) -> datetime:
    """An aware UTC time; a naive one (SQLite gives them back so) is taken as UTC, as every writer stores UTC."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _plain(value: Any) -> Any:
    if isinstance(value, datetime):
        return as_utc(value).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if isinstance(value, Decimal):
        return str(value)
    return value


def canonical(fields: Mapping[str, Any], read_back: bool = False) -> str:
    """Sorted keys, no spaces, UTF-8 text; values as a JSON column gives them back. `read_back`: the values were
    read from the database (a JSON column's keys are strings already), so one encoding gives the same text as the
    round trip the writer's objects take (an integer key, a tuple) and costs half."""
    plain = {key: _plain(value) for key, value in fields.items()}
    if not read_back:
        plain = json.loads(json.dumps(plain, default=str))
    return json.dumps(plain, default=str, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digest(fields: Mapping[str, Any], read_back: bool = False) -> str:
    return hashlib.sha256(canonical(fields, read_back).encode()).hexdigest()


def row_hash(source: str, row: Mapping[str, Any], read_back: bool = False) -> str:
    """The hash of one audited row: its table and every column (`read_back`: as read from the database)."""
    return digest({"table": source, **row}, read_back)


def entry_hash(chain: str, seq: int, source: str, source_id: int, row_digest: str, prev_hash: str,
               at: datetime) -> str:
    return digest({"chain": chain, "seq": seq, "source": source, "source_id": source_id, "row_hash": row_digest,
                   "prev_hash": prev_hash, "at": at}, read_back=True)  # strings, integers and a time: no round trip

