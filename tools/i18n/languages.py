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

# What a person may type after `lang` (case-insensitive) -> the language.
CHOICES: dict[str, Language] = {"zh": "zh-CN", "zh-cn": "zh-CN", "zh_cn": "zh-CN", "cn": "zh-CN", "中文": "zh-CN",
                                "en": "en", "english": "en", "英文": "en", "英语": "en"}


def language_for_locale(locale: str | None, default: Language) -> Language:
    """The language of a locale in the table, else `default`."""
    return LOCALES.get(locale or "", default)


def choice_of(word: str) -> Language | None:
    """The language a typed choice names (`zh`, `en`, `中文` …), or None."""
    return CHOICES.get(word.strip().lower())
