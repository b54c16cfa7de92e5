"""The access tables: role grants and console logins (migration 0021)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from tools.storage.models import Base, utcnow


class RoleGrant(Base):
    """One identity's role: `trader` or `admin`, of one account, or global (account "")."""

    __tablename__ = "role_grants"

    role: Mapped[str] = mapped_column(String(16), primary_key=True)
    account: Mapped[str] = mapped_column(String(64), primary_key=True)  # "": every account without its own
    identity: Mapped[str] = mapped_column(String(64), primary_key=True)
    granted_by: Mapped[str] = mapped_column(String(64))
    granted_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)


class ConsoleLogin(Base):
    """The identity an operating-system login acts as in the console: one identity per login, one login per
    identity (nobody holds two identities at one keyboard)."""

    __tablename__ = "console_logins"
    __table_args__ = (UniqueConstraint("identity", name="uq_console_logins_identity"),)

    login: Mapped[str] = mapped_column(String(64), primary_key=True)
    identity: Mapped[str] = mapped_column(String(64))
    mapped_by: Mapped[str] = mapped_column(String(64))
    mapped_at: Mapped[datetime] = mapped_column(DateTime(timezone=True), default=utcnow)
