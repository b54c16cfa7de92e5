"""Four-eyes approval: an order whose notional is above QUANTDESK_SECOND_APPROVAL_ABOVE needs two different
traders. The first approval asks again (a second interrupt, so each decision is its own row, first decision wins);
the second must come from another trader who did not propose the order (maker-checker). The words of the card's
line and of each refusal are here, together."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tools.broker.money import money_text
from tools.i18n import N_, _

SAME_TRADER = N_("{who} already approved this order; a second, different trader must approve it")
PROPOSER = N_("{who} proposed this order and cannot be its second approver (maker-checker): another trader must "
              "approve it")
NONE_YET = N_("none yet (0 of 2: two traders above {threshold} CNY)")
FIRST = N_("{approvers} (1 of 2: two traders above {threshold} CNY); waits for a second, different trader")


def needs_two(threshold: Decimal | None, proposal: dict[str, Any]) -> bool:
    """Whether the order's notional is above the threshold (None: four-eyes is off)."""
    return threshold is not None and Decimal(proposal["estimated_value"]) > threshold


def second_refusal(approvals: list[str], proposer: str | None, who: str) -> str | None:
    """Why `who` cannot give the second approval (None: they can)."""
    if who in approvals:
        return _(SAME_TRADER).format(who=who)
    if proposer is not None and who == proposer:
        return _(PROPOSER).format(who=who)
    return None


def approvals_text(threshold: Decimal, approvals: list[str]) -> str:
    """The card's line: who approved so far, out of two."""
    if not approvals:
        return _(NONE_YET).format(threshold=money_text(threshold))
    return _(FIRST).format(approvers=", ".join(approvals), threshold=money_text(threshold))


def approvers(approvals: list[str], who: str | None) -> str | None:
    """The order's approved_by: both names when two traders approved it, else the one who did."""
    return ",".join(approvals) if approvals else who
