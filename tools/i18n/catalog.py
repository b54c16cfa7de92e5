"""The gettext catalogs (domain `quantdesk`, under `locale/`, shipped as package data) and the language in effect.

Message ids are the English texts. A job, a run or a listener sets its language with `using(...)`; `_` reads it
(a context variable, so LangGraph's node threads see the run's language). Without one, the workspace default
(QUANTDESK_LANGUAGE) applies."""

from __future__ import annotations

import gettext
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from pathlib import Path

from tools.i18n.languages import LANGUAGES, Language

DOMAIN = "quantdesk"
LOCALE_DIR = Path(__file__).parent / "locale"

_LANGUAGE: ContextVar[Language | None] = ContextVar("quantdesk_language", default=None)


def gettext_locale(language: Language) -> str:
    """The catalog folder of a language: `zh-CN` -> `zh_CN`."""
    return language.replace("-", "_")


@cache
def translation(language: Language) -> gettext.NullTranslations:
    """The compiled catalog of `language` (a missing one is an error: the catalogs ship with the package)."""
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[gettext_locale(language)])


def current() -> Language:
    """The language in effect: the one set by `using`, else the workspace default."""
    chosen = _LANGUAGE.get()
    if chosen is not None:
        return chosen
    from tools.settings import get_settings
    return get_settings().language


@contextmanager
def using(language: str | None) -> Iterator[None]:
    """Speak `language` inside the block (None or an unknown code: the workspace default)."""
    token = _LANGUAGE.set(language if language in LANGUAGES else None)  # type: ignore[arg-type]
    try:
        yield
    finally:
        _LANGUAGE.reset(token)


def _(message: str) -> str:
    """`message` (an English message id) in the language in effect."""
    return translation(current()).gettext(message)


def ngettext(singular: str, plural: str, count: int) -> str:
    return translation(current()).ngettext(singular, plural, count)


def pgettext(context: str, message: str) -> str:
    """`message` in the language in effect, where the same English word needs another translation in `context`."""
    return translation(current()).pgettext(context, message)


def translate(language: str | None, message: str) -> str:
    """`message` in `language`, whatever is in effect."""
    with using(language):
        return _(message)


def N_(message: str) -> str:  # noqa: N802 (the name extraction looks for)
    """Marks a message id for extraction where it is defined; it is translated where it is shown, with `_`."""
    return message
