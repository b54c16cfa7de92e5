"""The one declarative base of every table, and what tables share. Each table is defined beside the code that owns
it (ARCHITECTURE.md, "Where things go"); migrations in `migrations/` create them; keep the two in step."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import BigInteger, Integer
from sqlalchemy.orm import DeclarativeBase

ID = BigInteger().with_variant(Integer, "sqlite")  # an autoincrementing id column's type on both databases


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    pass
