"""Witnessed heads: every new signed head, published outside the database (an append-only JSON-lines file, a Slack
channel), and `audit verify --witness` holding the database to them. A chain rolled back, rewritten (even re-signed
with the signing key) or deleted is caught as soon as one witnessed head is newer than, or differs from, the
database's; a chain ahead of its witness names the entries nobody witnessed."""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select, tuple_
from sqlalchemy.orm import Session

from tools.audit.canonical import as_utc
from tools.audit.heads import RecordedHead
from tools.audit.records import ChainEntry, ChainHead
from tools.audit.signing import Check

Checker = Callable[[str, str, int, str], Check]  # (signature, chain, seq, hash): what the signature proves
KIND = "quantdesk-audit-head"  # every witnessed line and message carries it
_IN_TEXT = re.compile(r"```(\{.*?\})```", re.S)  # a head as a Slack message shows it


def current_heads(engine: Engine) -> list[dict[str, Any]]:
    """Every chain's head as a witness records it: chain, seq, hash, signature, key id, time."""
    with Session(engine) as session:
        heads = session.scalars(select(ChainHead).where(ChainHead.seq > 0).order_by(ChainHead.chain)).all()
    return [record(head) for head in heads]


def record(head: ChainHead) -> dict[str, Any]:
    scheme, _sep, rest = head.signature.partition(":")
    return {"kind": KIND, "chain": head.chain, "seq": head.seq, "hash": head.hash, "signature": head.signature,
            "key_id": rest.partition(":")[0] if scheme == "ed25519" else "",
            "at": as_utc(head.updated_at).strftime("%Y-%m-%dT%H:%M:%SZ")}


def line(head: dict[str, Any]) -> str:
    return json.dumps(head, sort_keys=True, separators=(",", ":"))


def parsed(text: str) -> RecordedHead | None:
    """The head a witness line (or a message's JSON) records, or None when it records none."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict) or value.get("kind") != KIND:
        return None
    return RecordedHead(str(value["chain"]), int(value["seq"]), str(value["hash"]), str(value["signature"]),
                        str(value.get("at") or ""))


def in_message(text: str) -> RecordedHead | None:
    """The head a witness message in Slack carries (its JSON between ``` marks), or None."""
    found = _IN_TEXT.search(text or "")
    return parsed(found.group(1)) if found else None


class WitnessFile:
    """The append-only file witness: one JSON line per head. Processes sharing it take an exclusive lock to read
    what others appended and append what is new, so no head is written twice."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._seqs: dict[str, int] = {}

    def publish(self, heads: Iterable[dict[str, Any]]) -> int:
        """Append the heads newer than the file's; how many."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a+", encoding="utf-8") as out:
            fcntl.flock(out, fcntl.LOCK_EX)
            out.seek(self._offset)
            for text in out.read().splitlines():
                head = parsed(text)
                if head is not None:
                    self._seqs[head.chain] = max(head.seq, self._seqs.get(head.chain, 0))
            new = [h for h in heads if h["seq"] > self._seqs.get(h["chain"], 0)]
            for head in new:
                out.write(line(head) + "\n")
                self._seqs[head["chain"]] = head["seq"]
            out.flush()
            os.fsync(out.fileno())
            self._offset = out.tell()
        return len(new)


def read_file(path: Path) -> list[RecordedHead]:
    """Every head the file witnessed (OSError when it cannot be read)."""
    with path.open(encoding="utf-8") as source:
        return [head for head in map(parsed, source) if head is not None]


def witness_problems(engine: Engine, witnessed: list[RecordedHead], check: Checker,
                     account_chain: str | None = None) -> tuple[list[str], dict[str, RecordedHead]]:
    """What in the database disagrees with the witnessed heads (one line per chain, naming the seqs), and the
    newest witnessed head of each chain; `account_chain`: that chain only."""
    if account_chain is not None:
        witnessed = [w for w in witnessed if w.chain == account_chain]
    newest: dict[str, RecordedHead] = {}
    for head in witnessed:
        if head.chain not in newest or head.seq > newest[head.chain].seq:
            newest[head.chain] = head
    with Session(engine) as session:
        heads = {h.chain: h.seq for h in session.scalars(select(ChainHead).where(ChainHead.seq > 0))}
        wanted = {(w.chain, w.seq) for w in witnessed}
        hashes = {(chain, seq): digest for chain, seq, digest in session.execute(
            select(ChainEntry.chain, ChainEntry.seq, ChainEntry.hash).where(
                tuple_(ChainEntry.chain, ChainEntry.seq).in_(wanted)))} if wanted else {}
    problems = []
    for chain in sorted(set(newest) | ({account_chain} & set(heads) if account_chain else set(heads))):
        problem = _chain_problem(chain, heads.get(chain, 0), newest.get(chain),
                                 [w for w in witnessed if w.chain == chain], hashes, check)
        if problem:
            problems.append(f"{chain}: {problem}")
    return problems, newest


def _chain_problem(chain: str, ends: int, newest: RecordedHead | None, all_witnessed: list[RecordedHead],
                   hashes: dict[tuple[str, int], str], check: Checker) -> str | None:
    if newest is None:
        return f"no head of this chain was witnessed: entries {_seqs(1, ends)} are not witnessed"
    forged = [w for w in all_witnessed if check(w.signature, w.chain, w.seq, w.hash).valid is False]
    if forged:
        return f"the witnessed head #{forged[0].seq} is not validly signed: the witness was written by someone else"
    if ends < newest.seq:
        return (f"the database's head is #{ends}, behind the witnessed head #{newest.seq}: entries "
                f"{_seqs(ends + 1, newest.seq)} are missing (deleted and an older head put back)")
    differ = sorted(w.seq for w in all_witnessed if hashes.get((chain, w.seq)) != w.hash)
    if differ:
        return (f"entry #{differ[0]} is not the one witnessed (hash differs): the chain was rewritten from entry "
                f"#{differ[0]} or before, even if its head is validly signed")
    if ends > newest.seq:
        return (f"the database's head is #{ends}, ahead of the witnessed head #{newest.seq}: entries "
                f"{_seqs(newest.seq + 1, ends)} are not witnessed (run again after the background service's next "
                "pass; if they stay so, they were written past the witness)")
    return None


def _seqs(first: int, last: int) -> str:
    return f"#{first}" if first == last else f"#{first} to #{last}"
