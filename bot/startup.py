"""Start-up wiring shared by every entry point: settings, logging, database, provider."""

from __future__ import annotations

import logging
import sys
from dataclasses import dataclass

from sqlalchemy import Engine

from tools.data.factory import provider_from_settings
from tools.data.provider import MarketDataProvider
from tools.i18n import _
from tools.settings import Settings
from tools.storage.db import is_sqlite, make_engine, redacted
from tools.storage.migrate import current_revision, head_revision, upgrade

log = logging.getLogger(__name__)


class StartupError(RuntimeError):
    """The bot cannot start as configured; the message says what to fix."""


@dataclass
class AppServices:
    settings: Settings
    engine: Engine
    provider: MarketDataProvider


def build_context(settings: Settings) -> AppServices:
    """Open the database (migrating the embedded SQLite default automatically) and the data provider."""
    url = settings.database_url_value
    engine = make_engine(url, settings.sqlite_busy_seconds)
    if is_sqlite(url):
        before = current_revision(engine)
        now = upgrade(engine)
        if before != now:  # one line on stderr; the migrations themselves are in the debug log
            done = (_("database created at {url}, revision {now}") if before is None else
                    _("database upgraded from revision {before} at {url}, revision {now}"))
            print(done.format(before=before, url=redacted(url), now=now), file=sys.stderr, flush=True)
    else:
        current, head = current_revision(engine), head_revision()
        if current != head:
            raise StartupError(_("database {url} is at revision {current}, code needs {head}; run `quantdesk db "
                                 "upgrade`").format(url=redacted(url), current=current or _("none"), head=head))
    log.info("database: %s", redacted(url))
    provider = provider_from_settings(settings)
    log.info("market data provider: %s", provider.name)
    _check_signing_key(settings)
    return AppServices(settings=settings, engine=engine, provider=provider)


def _check_signing_key(settings: Settings) -> None:
    """Refuse to start with a signing key file that cannot be read (else the first audited write would fail)."""
    path = settings.audit_signing_key
    if path is None:
        log.info("QUANTDESK_AUDIT_SIGNING_KEY is not set: audit heads are written unsigned")
        return
    from tools.audit.signing import key_id, load_private  # cryptography: only where a key is configured

    try:
        key = load_private(path)
    except (OSError, ValueError) as exc:
        raise StartupError(_("QUANTDESK_AUDIT_SIGNING_KEY: cannot read an Ed25519 private key from {path} ({error})")
                           .format(path=path, error=type(exc).__name__)) from None
    log.info("audit heads signed with key %s", key_id(key.public_key()))
