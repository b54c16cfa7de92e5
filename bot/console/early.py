"""What the console answers before its session is ready: a `help` typed at the first prompt, read and answered by
the core's light front (bot/first_answers.py) in the operator's language, the text the session itself gives. Every
other line waits for the session. Nothing here imports a graph or the built core, so it is ready well before the
session (bench/console_start.py measures both)."""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

from bot.console.help import DATA_HELP, help_text
from bot.first_answers import help_before_start
from tools.access.login import os_login
from tools.data.factory import provider_from_settings
from tools.i18n import using
from tools.i18n.languages import LANGUAGES, Language
from tools.settings import Settings

log = logging.getLogger(__name__)

# the session's core reads the same through tools/access/store.py `identity_of` and bot/stores/languages.py
IDENTITY = "SELECT identity FROM console_logins WHERE login = ?"
CHOSEN = "SELECT language FROM person_languages WHERE user_id = ?"


def operator_language(settings: Settings) -> Language:
    """The language the console's operator chose (`lang`), else the workspace's, as the session's core reads it."""
    embedded = settings.embedded_database
    chosen = _embedded_choice(embedded, os_login()) if embedded is not None else _stored_choice(settings, os_login())
    return chosen if chosen in LANGUAGES else settings.language


def _embedded_choice(path: Path, login: str) -> str | None:
    """The choice in the embedded SQLite file, read with the standard library (SQLAlchemy's import alone would take
    a fifth of the second help has); none on a first start (no file: nobody chose) or before its tables exist."""
    if not path.exists():
        return None
    try:
        with closing(sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5)) as db:
            mapped = db.execute(IDENTITY, (login,)).fetchone()
            row = db.execute(CHOSEN, (mapped[0] if mapped else login,)).fetchone()
    except sqlite3.Error:
        log.debug("the console operator's language could not be read before the start", exc_info=True)
        return None
    return str(row[0]) if row else None


def _stored_choice(settings: Settings, login: str) -> str | None:
    """The choice in the configured database (DATABASE_URL), through the stores the session uses."""
    from sqlalchemy.exc import SQLAlchemyError

    from bot.stores.languages import LanguageStore
    from tools.access.store import identity_of
    from tools.storage.db import make_engine

    engine = make_engine(settings.database_url_value)
    try:
        return LanguageStore(engine).chosen(identity_of(engine, login))
    except SQLAlchemyError:  # its tables are not there yet (the session's start migrates them) or it is down
        log.debug("the console operator's language could not be read before the start", exc_info=True)
        return None
    finally:
        engine.dispose()


class EarlyAnswers:
    """The answers the light layer can give, built while the session warms up."""

    def __init__(self, settings: Settings) -> None:
        self.provider = provider_from_settings(settings)
        self.language = operator_language(settings)

    def answer(self, line: str) -> str | None:
        """`line`'s answer when it is `help` (帮助 …), else None: it waits for the session."""
        with using(self.language):
            sections = help_before_start(line, self.provider, DATA_HELP)
            return help_text(sections) if sections is not None else None
