"""Secrets kept out of what is shown, logged or stored: the configured ones (every `SecretStr` of the settings, which
a process remembers as it reads them), anything after `Bearer `, and whatever a caller names."""

from __future__ import annotations

import contextlib
import logging
import re
from typing import Any
from urllib.parse import urlsplit

from pydantic import SecretStr

MASK = "[redacted]"
MIN_SECRET = 6  # a shorter value would blank ordinary words wherever it occurs
_BEARER = re.compile(r"(?i)\b(bearer)(\s+|%20)(?!" + re.escape(MASK) + r")[^\s'\",;)}\]]+")
_known: set[str] = set()


def _parts(value: str) -> set[str]:
    """The secrets in a secret value: a URL's password (the rest of a database URL is no secret), else the value
    and its comma-separated tokens."""
    parts = {value, *(piece.strip() for piece in value.split(","))}
    if "://" in value:
        parts = set()
        with contextlib.suppress(ValueError):
            parts.add(urlsplit(value).password or "")
    return {part for part in parts if len(part) >= MIN_SECRET}


def remember(*values: str | None) -> None:
    """Redact these values from now on, in this process."""
    for value in values:
        if value:
            _known.update(_parts(value))


def remember_settings(settings: Any) -> None:
    """Redact every secret the settings hold (their `SecretStr` fields) from now on."""
    for name in type(settings).model_fields:
        value = getattr(settings, name, None)
        if isinstance(value, SecretStr):
            remember(value.get_secret_value())


def redact(text: str, *extra: str | None) -> str:
    """`text` with every known secret, each of `extra` and any bearer credential masked."""
    secrets = set(_known)
    for value in extra:
        if value:
            secrets |= _parts(value)
    for secret in sorted(secrets, key=len, reverse=True):  # a longer secret first: it may hold a shorter one
        text = text.replace(secret, MASK)
    return _BEARER.sub(lambda m: f"{m.group(1)}{m.group(2)}{MASK}", text)


class RedactingFilter(logging.Filter):
    """A handler filter that masks secrets in a record's message and traceback before any handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        clean = redact(message)
        if clean != message:
            record.msg, record.args = clean, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True
