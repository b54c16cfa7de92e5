"""Translations: the gettext catalogs (`catalog`) and the languages a person can have (`languages`). Every layer
may import this package: user-facing text is `_("English text")`, read in the language in effect (`using`)."""

from tools.i18n.catalog import N_, _, current, ngettext, pgettext, translate, using
from tools.i18n.languages import DEFAULT_LANGUAGE, LANGUAGES, LOCALES, choice_of, language_for_locale
from tools.i18n.stored import stored_text
from tools.i18n.width import display_width, pad_left, pad_right

__all__ = ["DEFAULT_LANGUAGE", "LANGUAGES", "LOCALES", "N_", "_", "choice_of", "current", "display_width",
           "language_for_locale", "ngettext", "pad_left", "pad_right", "pgettext", "stored_text", "translate", "using"]
