"""The signed head an export writes as its last row, read back: anchored outside the database, it is what a later
`audit verify --head` holds the chain to."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from typing import TextIO

HEAD_EVENT = "signed head"  # the export's `event` column on its head row
UNSIGNED = "(unsigned: no signing key was configured)"  # its `detail` when the head carries no signature


def signature_kind(signature: str) -> str:
    """How a head's signature is made, for a reader: Ed25519 naming its key, a legacy HMAC, or none."""
    if not signature:
        return "unsigned"
    scheme, _sep, rest = signature.partition(":")
    return f"Ed25519, key {rest.partition(':')[0]}" if scheme == "ed25519" else "legacy HMAC-SHA256"


@dataclass(frozen=True)
class RecordedHead:
    """A chain's head as an export recorded it: its last entry, that entry's hash and the head's signature."""

    chain: str
    seq: int
    hash: str
    signature: str
    at: str = ""  # when a witness recorded it (UTC, ISO 8601); '' for an export's


def recorded_heads(source: TextIO) -> list[RecordedHead]:
    """The signed heads an export wrote (one per chain); ValueError when the file carries none."""
    heads = [RecordedHead(row["chain"], int(row["seq"]), row["hash"],
                          "" if row["detail"] == UNSIGNED else row["detail"])
             for row in csv.DictReader(source) if row.get("event") == HEAD_EVENT]
    if not heads:
        raise ValueError("the file carries no signed head (it is not an `audit export` of a chain that has one)")
    return heads
