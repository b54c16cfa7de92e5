"""Order proposal claims: which holder (a rule's execution, the decision desk's thread) has the one order card of
an automated proposer on a code in an account waiting for a trader, and until when. Migration 0012 creates the
table; keep the two in step."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base


class ProposalClaimRecord(Base):
    """One (account, code, proposer) card slot: free when no row is there or its claim lapsed."""

    __tablename__ = "proposal_claims"

    account: Mapped[str] = mapped_column(String(64), primary_key=True)
    ts_code: Mapped[str] = mapped_column(String(32), primary_key=True)
    proposer: Mapped[str] = mapped_column(String(64), primary_key=True)  # the orders' tag: rule:<id>, desk
    holder: Mapped[str] = mapped_column(String(255), index=True)  # a rule execution id, a desk thread id
    claimed_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))
    expires_at: Mapped[datetime] = mapped_column(DateTime(timezone=True))  # lapses by itself then
