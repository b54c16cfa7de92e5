"""Stale cards: at approval the order is previewed again on the current account and market; if what the trader saw
no longer holds (the price basis moved more than QUANTDESK_STALE_MOVE, a check now passes or fails because cash,
the position or the limit-up/limit-down status changed, or the session changed), nothing is placed and the
re-checked card is shown instead. The words of each change are here, together."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tools.i18n import N_, _

RECHECKED = N_("re-checked at {who}'s approval, nothing was placed: {changes}; the card shows the new numbers, "
               "decide again")
MOVED = N_("the price basis moved {moved} ({before} → {after}), more than {limit}")
SESSION = N_("the session changed ({before} → {after})")
PASSES = N_("{check} now PASSES ({detail})")
FAILS = N_("{check} now FAILS ({detail})")


def stale_changes(seen: dict[str, Any], now: dict[str, Any], move: Decimal) -> list[str]:
    """What changed between the proposal the card showed (`seen`) and the one rebuilt now, in words; empty when the
    card still holds."""
    changes: list[str] = []
    before, after = seen.get("reference_price"), now.get("reference_price")
    if before and after and Decimal(before) > 0:
        moved = (Decimal(after) - Decimal(before)) / Decimal(before)
        if abs(moved) > move:
            changes.append(_(MOVED).format(moved=f"{moved:+.1%}", before=before, after=after, limit=f"{move:.0%}"))
    if seen["session_date"] != now["session_date"]:
        changes.append(_(SESSION).format(before=seen["session_date"], after=now["session_date"]))
    shown = {check["name"]: check["passed"] for check in seen["checks"]}
    for check in now["checks"]:
        if check["name"] in shown and shown[check["name"]] != check["passed"]:
            changes.append(_(PASSES if check["passed"] else FAILS).format(check=check["name"], detail=check["detail"]))
    return changes
