"""`quantdesk audit verify` and `quantdesk audit export` (tools/audit): what they print and their exit codes."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path
from typing import TextIO

import bot.stores.records  # noqa: F401 - the audited tables: the bot's audit log and the order events
import tools.broker.records  # noqa: F401
from tools.audit.chain import audit_key, chain_of
from tools.audit.export import export_csv
from tools.audit.heads import recorded_heads
from tools.audit.verify import against_head, verify
from tools.settings import Settings
from tools.storage.db import make_engine


def run_verify(settings: Settings, account: str | None, head: Path | None = None,
               out: TextIO = sys.stdout) -> int:
    """Print each chain's state; 1 when any chain is broken or a row is in no chain, else 0. `head`: an export
    (`audit export`) whose signed heads the chains must still hold (of `account`'s chain only, with one)."""
    key = audit_key()
    engine = make_engine(settings.database_url_value)
    recorded = []
    if head is not None:
        try:
            with head.open(encoding="utf-8", newline="") as source:
                recorded = [r for r in recorded_heads(source) if account is None or r.chain == chain_of(account)]
        except (OSError, ValueError, KeyError) as exc:
            print(f"cannot read the recorded head in {head}: {exc}", file=out)
            return 2
    reports, strays = verify(engine, key, account)
    anchored = [(r, against_head(engine, key, r)) for r in recorded]
    for report in reports:
        if report.problem:
            print(f"{report.chain}: BROKEN after {report.entries} good entries: {report.problem}", file=out)
        else:
            signed = "head signature valid" if report.signed else "head signature not checked"
            print(f"{report.chain}: {report.entries} entries intact, {signed}", file=out)
    for stray in strays:
        print(f"INSERTED: {stray}", file=out)
    for found, problem in anchored:
        print(f"{found.chain}: " + (f"BROKEN against the recorded head in {head}: {problem}" if problem else
                                    f"holds the recorded head #{found.seq} of {head}"), file=out)
    if not reports:
        print(f"no audit entries{f' for account {account}' if account else ''}", file=out)
    if not key:
        print("QUANTDESK_AUDIT_KEY is not set: a chain rewritten whole with correct hashes cannot be told apart",
              file=out)
    return 1 if strays or any(report.problem for report in reports) or any(p for _, p in anchored) else 0


def run_export(settings: Settings, account: str, start: date, end: date, path: Path | None) -> int:
    """Write the account's chain from `start` to `end` as CSV to `path` (stdout without one)."""
    engine = make_engine(settings.database_url_value)
    if path is None:
        count = export_csv(engine, chain_of(account), start, end, sys.stdout)
    else:
        with path.open("w", newline="", encoding="utf-8") as out:
            count = export_csv(engine, chain_of(account), start, end, out)
        print(f"{count} audit entries of account {account} written to {path}", file=sys.stderr)
    return 0
