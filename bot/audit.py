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
from tools.audit.verify import verify
from tools.settings import Settings
from tools.storage.db import make_engine


def run_verify(settings: Settings, account: str | None, out: TextIO = sys.stdout) -> int:
    """Print each chain's state; 1 when any chain is broken or a row is in no chain, else 0."""
    key = audit_key()
    reports, strays = verify(make_engine(settings.database_url_value), key, account)
    for report in reports:
        if report.problem:
            print(f"{report.chain}: BROKEN after {report.entries} good entries: {report.problem}", file=out)
        else:
            signed = "head signature valid" if report.signed else "head signature not checked"
            print(f"{report.chain}: {report.entries} entries intact, {signed}", file=out)
    for stray in strays:
        print(f"INSERTED: {stray}", file=out)
    if not reports:
        print(f"no audit entries{f' for account {account}' if account else ''}", file=out)
    if not key:
        print("QUANTDESK_AUDIT_KEY is not set: a chain rewritten whole with correct hashes cannot be told apart",
              file=out)
    return 1 if strays or any(report.problem for report in reports) else 0


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
