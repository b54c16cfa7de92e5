"""Who may decide a pause: the permission policy every surface shares."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from bot.cards import ApprovalCard, Card
from bot.stores.threads import ThreadInfo
from graphs.interrupts import TRADERS, approval_refusal
from tools.i18n import N_, _

ALREADY_HANDLED = N_("Already handled.")  # a message id: shown as _(ALREADY_HANDLED)


@dataclass(frozen=True)
class Policy:
    """Approvers answer any thread; an account's traders decide its orders. `traders` is asked each time, with
    the card's account (roles are per account; the console's operator may trade on a desk with none configured)."""

    approvers: frozenset[str]
    traders: Callable[[str], frozenset[str]]  # account -> who may approve or edit its orders
    all_traders: Callable[[], frozenset[str]]  # every trader of some account (whose App Home a card concerns)

    def authorised(self, thread: ThreadInfo, user: str) -> bool:
        """Whether `user` may answer or stop the thread: its requester or a configured approver."""
        return user == thread.user_id or user in self.approvers

    def refusal(self, thread: ThreadInfo, card: Card, user: str, decision_type: str) -> str | None:
        """Why `user` may not take `decision_type` on this pause, or None. Approvals for traders (orders) are
        approved or edited by traders only, and not after expiry; anyone who may answer the thread, or a trader,
        may reject them."""
        if isinstance(card, ApprovalCard) and card.deciders == TRADERS:
            traders = self.traders(card.account)
            refused = approval_refusal(card.payload(), user, decision_type, traders, datetime.now(UTC))
            if refused:
                return refused
            if not (self.authorised(thread, user) or user in traders):
                return _("Only the requester, a configured approver or a trader can reject this order.")
            return None
        if not self.authorised(thread, user):
            return _("Only the person who started this request or a configured approver can answer it.")
        return None
