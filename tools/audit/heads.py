"""The signed head an export writes as its last row, read back: anchored outside the database, it is what a later
`audit verify --head` holds the chain to."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import TextIO

HEAD_EVENT = "signed head"  # the export's `event` column on its head row


@dataclass(frozen=True)
class RecordedHead:
    """A chain's head as an export recorded it: its last entry, that entry's hash and the head's signature."""

    chain: str
    seq: int
    hash: str
    signature: str


def recorded_heads(source: TextIO) -> list[RecordedHead]:
    """The signed heads an export wrote (one per chain); ValueError when the file carries none."""
    heads = [RecordedHead(row["chain"], int(row["seq"]), row["hash"], row["detail"])
             for row in csv.DictReader(source) if row.get("event") == HEAD_EVENT]
    if not heads:
        raise ValueError("the file carries no signed head (it is not an `audit export` of a chain that has one)")
    return heads
