"""The languages QuantDesk speaks, and how a person's locale or typed choice maps to one of them."""

from __future__ import annotations

from typing import Literal

Language = Literal["zh-CN", "en"]
LANGUAGES: tuple[Language, ...] = ("zh-CN", "en")
DEFAULT_LANGUAGE: Language = "en"

# A Slack locale (users.info include_locale) -> the language QuantDesk answers in. A locale not listed here gets
# the workspace default (QUANTDESK_LANGUAGE): zh-TW, zh-HK and ja-JP are deliberately absent (traditional script
# or another language; a person there chooses with `/quant lang zh|en`).
LOCALES: dict[str, Language] = {
    "zh-CN": "zh-CN", "zh-SG": "zh-CN",
    "en-US": "en", "en-GB": "en", "en-AU": "en", "en-CA": "en", "en-IN": "en",
}

# What a person may type for a language, after `lang` and as QUANTDESK_LANGUAGE: the locales above and these words,
# in any case, `_` or `-` alike (zh_CN is zh-CN). An explicit list, not a locale parser: Babel parses any valid
# locale (fr, zh_TW) and knows no `cn`; traditional Chinese (zh-TW, zh-Hant) is not the simplified catalog's.
CHOICES: dict[str, Language] = {
    **LOCALES,
    "zh": "zh-CN", "zh-Hans": "zh-CN", "zh-Hans-CN": "zh-CN", "cn": "zh-CN", "chinese": "zh-CN", "中文": "zh-CN",
    "简体中文": "zh-CN",
    "en": "en", "english": "en", "英文": "en", "英语": "en",
}


def _folded(word: str) -> str:
    return word.strip().lower().replace("_", "-")


_BY_FOLDED = {_folded(word): language for word, language in CHOICES.items()}


def language_for_locale(locale: str | None, default: Language) -> Language:
    """The language of a locale in the table, else `default`."""
    return LOCALES.get(locale or "", default)


def choice_of(word: str) -> Language | None:
    """The language a typed choice names (`zh`, `zh_CN`, `en-GB`, `中文`, `english` …), or None."""
    return _BY_FOLDED.get(_folded(word))


def choices_text() -> str:
    """Every accepted choice on one line, each language with its other names: what a refusal names."""
    return " or ".join(
        f"{language} ({', '.join(word for word, named in CHOICES.items() if named == language and word != language)})"
        for language in LANGUAGES) + ", in any case, with _ or -"
