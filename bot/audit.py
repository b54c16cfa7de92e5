"""`quantdesk audit verify`, `export` and `keygen` (tools/audit): what they print and their exit codes."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TextIO

import bot.stores.records  # noqa: F401 - the audited tables: the bot's audit log and the order events
import tools.broker.records  # noqa: F401
from tools.audit.chain import chain_of
from tools.audit.completeness import missing
from tools.audit.export import Days, export_csv
from tools.audit.heads import RecordedHead, recorded_heads
from tools.audit.keys import legacy_key, verify_keys
from tools.audit.replay import differences
from tools.audit.signing import write_pair
from tools.audit.verify import Keys, against_head, verify
from tools.audit.witness import read_file, witness_problems
from tools.settings import Settings
from tools.storage.db import make_engine


def run_verify(settings: Settings, account: str | None, head: Path | None = None, unsigned: bool = False,
               witness: str | None = None, out: TextIO = sys.stdout) -> int:
    """Print each chain's state; 1 when any chain is broken, a row is in no chain, an account or order has no
    chain, a state table differs from the replay of the chained events, the database disagrees with a witness,
    or a head's signature cannot be checked (no public key for it) without `unsigned`; else 0. `head`: an export
    (`audit export`) whose signed heads the chains must still hold;
    `witness`: a witness file's path, or `slack` (QUANTDESK_AUDIT_CHANNEL); of `account`'s chain only, with one."""
    keys = Keys(verify_keys(), legacy_key())
    engine = make_engine(settings.database_url_value)
    try:
        recorded = _recorded(head, account)
        witnessed = _witnessed(settings, witness) if witness is not None else None
    except WitnessError as exc:
        print(str(exc), file=out)
        return 2
    reports, strays = verify(engine, keys, account)
    absent = list(missing(engine, account))
    changed = list(differences(engine, account))
    anchored = [(r, against_head(engine, keys, r)) for r in recorded]
    disagreements, newest = (witness_problems(engine, witnessed, keys.check, chain_of(account) if account else None)
                             if witnessed is not None else ([], {}))
    for report in reports:
        if report.problem:
            print(f"{report.chain}: BROKEN after {report.entries} good entries: {report.problem}", file=out)
        else:
            seen = newest.get(report.chain)
            print(f"{report.chain}: {report.entries} entries intact, {report.signature.label}"
                  + (f"; newest witnessed head #{seen.seq} at {seen.at}" if seen else ""), file=out)
    for stray in strays:
        print(f"INSERTED: {stray}", file=out)
    for line in absent:
        print(f"MISSING: {line}", file=out)
    for difference in changed:
        print(f"STATE: {difference} (the table was changed outside the audit trail)", file=out)
    for found, problem in anchored:
        print(f"{found.chain}: " + (f"BROKEN against the recorded head in {head}: {problem}" if problem else
                                    f"holds the recorded head #{found.seq} of {head}"), file=out)
    for disagreement in disagreements:
        print(f"WITNESS ({witness}): {disagreement}", file=out)
    if not reports:
        print(f"no audit entries{f' for account {account}' if account else ''}", file=out)
    unchecked = [r.chain for r in reports if not r.problem and r.signature.valid is None]
    if unchecked:
        print(f"{len(unchecked)} head signature(s) could not be checked ({', '.join(unchecked)}): a chain rewritten "
              "whole with correct hashes cannot be told apart. " +
              ("Accepted with --unsigned." if unsigned else
               "Set QUANTDESK_AUDIT_VERIFY_KEYS (and sign with QUANTDESK_AUDIT_SIGNING_KEY), or pass --unsigned to "
               "check the links only."), file=out)
    broken = (strays or absent or changed or disagreements or any(r.problem for r in reports)
              or any(p for _, p in anchored))
    return 1 if broken or (unchecked and not unsigned) else 0


class WitnessError(Exception):
    """An anchor (export or witness) that cannot be read: said in one line, exit 2."""


def _recorded(head: Path | None, account: str | None) -> list[RecordedHead]:
    if head is None:
        return []
    try:
        with head.open(encoding="utf-8", newline="") as source:
            return [r for r in recorded_heads(source) if account is None or r.chain == chain_of(account)]
    except (OSError, ValueError, KeyError) as exc:
        raise WitnessError(f"cannot read the recorded head in {head}: {exc}") from None


def _witnessed(settings: Settings, witness: str) -> list[RecordedHead]:
    """The heads a witness recorded: the file's lines, or the Slack channel's messages."""
    if witness != "slack":
        try:
            return read_file(Path(witness))
        except OSError as exc:
            raise WitnessError(f"cannot read the witness file {witness}: {exc.strerror or exc}") from None
    if not settings.audit_channel or settings.slack_bot_token is None:
        raise WitnessError("--witness slack needs QUANTDESK_AUDIT_CHANNEL and SLACK_BOT_TOKEN")
    from slack_sdk.errors import SlackApiError

    from bot.slack.app import make_client
    from bot.slack.witness import slack_heads

    try:
        return slack_heads(make_client(settings), settings.audit_channel)
    except (SlackApiError, OSError) as exc:
        raise WitnessError(f"cannot read the witness channel {settings.audit_channel}: {exc}") from None


def run_export(settings: Settings, account: str | None, days: Days | None, path: Path | None,
               sessions: Days | None = None) -> int:
    """Write the account's chain (the global chain without one), its entries written on `days` and of trading
    `sessions` (either or both), as CSV to `path` (stdout without one)."""
    engine = make_engine(settings.database_url_value)
    chain = chain_of(account)
    if path is None:
        count = export_csv(engine, chain, days, sys.stdout, sessions)
    else:
        with path.open("w", newline="", encoding="utf-8") as out:
            count = export_csv(engine, chain, days, out, sessions)
        print(f"{count} audit entries of {chain} written to {path}", file=sys.stderr)
    return 0


def run_keygen(directory: Path, out: TextIO = sys.stdout) -> int:
    """Write a new Ed25519 key pair's private key into `directory` and print where, its key id and the public
    key for QUANTDESK_AUDIT_VERIFY_KEYS."""
    try:
        path, public = write_pair(directory)
    except OSError as exc:
        print(f"cannot write the key into {directory}: {exc}", file=out)
        return 2
    ident = public.partition(":")[0]
    print(f"key id: {ident}", file=out)
    print(f"private key (signers only, mode 0600): {path}", file=out)
    print(f"QUANTDESK_AUDIT_SIGNING_KEY={path}", file=out)
    print(f"add to QUANTDESK_AUDIT_VERIFY_KEYS (comma-separated, keep the old ones): {public}", file=out)
    return 0
