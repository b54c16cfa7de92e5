"""Reconciliation (a registry BackgroundJob): every account is compared with its broker, and where the broker holds
a position otherwise than the fills the desk booked make it, the difference is posted to the account's channel in
a thread of its own. Only a difference seen on two passes in a row is posted (not a fill still on its way into
the book), each once; it also stays on the account's notes and Home until it is gone. Nothing is overwritten."""

from __future__ import annotations

import hashlib
import json
import logging
import threading
from dataclasses import asdict
from functools import partial
from typing import Any

from graphs.background import BackgroundCall, Notice, ScheduledRun
from graphs.order.deps import OrderDeps, accounts
from tools.broker.orders import Difference
from tools.i18n import _, ngettext

log = logging.getLogger(__name__)

OWNER = "quantdesk"  # whom the posted thread is for: nobody asked (its language is the workspace's)
_lock = threading.Lock()
_last_seen: dict[str, str] = {}  # account -> the key of what its last pass found ("" for no difference)
_posted: set[str] = set()  # the keys this process started (a restart finds the earlier root: `again`)
_failed: set[str] = set()  # the keys whose start failed once (said once in the log; tried again each pass)


def reconcile_title(account: str, count: int) -> str:
    """The thread's root, in the language in effect."""
    return ngettext("Reconciliation: account {account} differs from its broker in {count} position",
                    "Reconciliation: account {account} differs from its broker in {count} positions", count).format(
        account=account, count=count)


def reconcile_reply(request: dict[str, Any]) -> str:
    """The differences and what to do about them, in the thread's language."""
    account = str(request["account"])
    return "\n".join([
        _("The broker's positions in account {account} differ from the fills QuantDesk booked. Nothing was changed: "
          "check the account at the broker (orders placed outside QuantDesk, transfers and corporate actions are the "
          "usual reasons).").format(account=account),
        *(Difference(**d).line() for d in request["differences"]),
        _("`account {account}` shows it; a new difference is posted again.").format(account=account)])


def _key(account: str, found: list[Difference]) -> str:
    digest = hashlib.sha256(json.dumps([asdict(d) for d in found], sort_keys=True).encode()).hexdigest()[:16]
    return f"reconcile:{account}:{digest}"


def reconciliation_job(ctx: OrderDeps, call: BackgroundCall) -> list[Notice]:
    """One pass over the accounts this process's surface serves; a broker that does not answer is skipped (the
    account's notes say so)."""
    if ctx.broker is None:
        return []
    desk = accounts(ctx)
    for name in desk.names():
        if not call.serves(name):
            continue
        try:
            found = desk.broker(name).differences()
        except ConnectionError:
            continue
        key = _key(name, found) if found else ""
        with _lock:
            confirmed = bool(found) and _last_seen.get(name) == key and key not in _posted
            _last_seen[name] = key
        if not confirmed:
            continue
        request = {"workflow": "order", "reconcile": {"account": name, "differences": [asdict(d) for d in found]}}
        try:
            call.start(ScheduledRun(name, OWNER, key, partial(reconcile_title, name, len(found)), request), True)
        except Exception as exc:  # noqa: BLE001 - the surface refused (an account that is no channel): next pass
            if key not in _failed:
                log.warning("reconciliation of account %s could not be posted: %s", name, exc)
                _failed.add(key)
            continue
        with _lock:
            _posted.add(key)
    return []
