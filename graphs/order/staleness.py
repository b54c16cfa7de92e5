"""Stale cards: at approval the order is previewed again on the current account and market; if what the trader saw
no longer holds (the price basis moved more than QUANTDESK_STALE_MOVE, a check now passes or fails because cash,
the position or the limit-up/limit-down status changed, or the session changed), nothing is placed and the
re-checked card is shown instead. The words of each change are here, together."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

RECHECKED = ("re-checked at {who}'s approval, nothing was placed: {changes}; the card shows the new numbers, decide "
             "again")


def stale_changes(seen: dict[str, Any], now: dict[str, Any], move: Decimal) -> list[str]:
    """What changed between the proposal the card showed (`seen`) and the one rebuilt now, in words; empty when the
    card still holds."""
    changes: list[str] = []
    before, after = seen.get("reference_price"), now.get("reference_price")
    if before and after and Decimal(before) > 0:
        moved = (Decimal(after) - Decimal(before)) / Decimal(before)
        if abs(moved) > move:
            changes.append(f"the price basis moved {moved:+.1%} ({before} → {after}), more than {move:.0%}")
    if seen["session_date"] != now["session_date"]:
        changes.append(f"the session changed ({seen['session_date']} → {now['session_date']})")
    shown = {check["name"]: check["passed"] for check in seen["checks"]}
    for check in now["checks"]:
        if check["name"] in shown and shown[check["name"]] != check["passed"]:
            changes.append(f"{check['name']} now {'PASSES' if check['passed'] else 'FAILS'} ({check['detail']})")
    return changes
