"""Each person's chosen language (`lang zh|en`), in the bot's own table: it survives restarts."""

from __future__ import annotations

from sqlalchemy import Engine
from sqlalchemy.orm import Session

from bot.stores.records import PersonLanguage
from tools.i18n.languages import LANGUAGES, Language


class LanguageStore:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def chosen(self, user_id: str) -> Language | None:
        """The language `user_id` chose, or None when they never chose."""
        with Session(self.engine) as session:
            row = session.get(PersonLanguage, user_id)
            return row.language if row is not None and row.language in LANGUAGES else None

    def choose(self, user_id: str, language: Language) -> None:
        with Session(self.engine) as session, session.begin():
            row = session.get(PersonLanguage, user_id)
            if row is None:
                session.add(PersonLanguage(user_id=user_id, language=language))
            else:
                row.language = language
