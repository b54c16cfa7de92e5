"""Logging for every entry point: one format, and alembic's per-migration lines only at DEBUG."""

from __future__ import annotations

import logging


def configure_logging(level: str) -> None:
    """Log at `level`; alembic's per-migration lines only at DEBUG (else its warnings and errors)."""
    level = level.upper()
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("alembic").setLevel(logging.DEBUG if level == "DEBUG" else logging.WARNING)
