"""The audit trail in tests: `quantdesk audit` as a child process holding the public keys only, a short desk day to
chain, and the chain as a forger who knows the hashing rewrites it: every entry of a chain linked again over its rows
as they now are (what the rewrite and rollback tests do before they sign, or fail to sign, the new head)."""

from __future__ import annotations

import os
import subprocess
import sys

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from bot.stores.decisions import DecisionStore
from testkit.paths import REPO
from tools.audit.canonical import GENESIS, entry_hash, row_hash
from tools.audit.chain import row_fields
from tools.audit.records import ChainEntry
from tools.broker.records import OrderEvent
from tools.broker.store import log_event, set_trading


def relink(session: Session, chain: str) -> str:
    """Recompute each order-event entry of `chain` (row hash, previous hash, hash) in order; the last hash."""
    prev = GENESIS
    for entry in session.scalars(select(ChainEntry).where(ChainEntry.chain == chain).order_by(ChainEntry.seq)).all():
        entry.row_hash = row_hash("order_events", row_fields(session.get(OrderEvent, entry.source_id)))
        entry.prev_hash = prev
        entry.hash = prev = entry_hash(entry.chain, entry.seq, entry.source, entry.source_id, entry.row_hash,
                                       entry.prev_hash, entry.at)
    return prev


def audit_cli(url: str, *args: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """`quantdesk audit ARGS` in a child holding the public keys only (no signing key); `settings`: more variables,
    by name (an empty value removes one)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("QUANTDESK_", "DATABASE_"))}
    env.update({"DATABASE_URL": url, "PYTHONPATH": str(REPO),
                "QUANTDESK_AUDIT_VERIFY_KEYS": os.environ.get("QUANTDESK_AUDIT_VERIFY_KEYS", "")})
    env.update(settings)
    return subprocess.run([sys.executable, "-m", "bot.cli", "audit", *args], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=120)


def desk_day(engine: Engine) -> None:
    """A short day: an order proposed, approved and submitted on g1, one on g2, the switch off and on, and a
    human decision the bot logs (no account)."""
    log_event(engine, "t1:1", "g1", "proposed", "U_RULE", {"code": "600000.SH", "quantity": 100})
    log_event(engine, "t1:1", "g1", "approved", "U_ANNA", {})
    log_event(engine, "t1:1", "g1", "submitted", "U_ANNA", {"order_id": 1})
    log_event(engine, "t2:1", "g2", "proposed", "U_BO", {"code": "000001.SZ", "quantity": 200})
    set_trading(engine, False, "U_ADMIN")
    set_trading(engine, True, "U_ADMIN")
    DecisionStore(engine).accept("i-1", "console-1", {"type": "reject", "message": "好"}, "U_ANNA", "console")


def event_id(engine: Engine, account: str, event: str) -> int:
    with Session(engine) as session:
        return session.scalars(select(OrderEvent.id).where(OrderEvent.account == account,
                                                           OrderEvent.event == event)).one()
