"""The one tokeniser behind every workflow's request grammar: words, ts_codes, dates and name=value
parameters, plus the code-like words that are not ts_codes (so a parser can name them instead of dropping
them)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$", re.IGNORECASE)
DATE = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2})$")
PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
_CODE_LIKE = re.compile(r"^\d{6}(\.[A-Za-z]*)?$")
_SPLIT = re.compile(r"[\s,，]+")


@dataclass(frozen=True)
class Tokens:
    """A request's pieces, in order of appearance within each kind."""

    words: tuple[str, ...]
    codes: tuple[str, ...]
    dates: tuple[str, ...]
    params: dict[str, str]
    bad_codes: tuple[str, ...]

    @property
    def known(self) -> int:
        """How many grammar pieces (codes, dates, parameters) the text holds."""
        return len(self.codes) + len(self.dates) + len(self.params)


def split(text: str, keyword: str | None = None) -> list[str]:
    """The raw tokens; a leading `keyword` (or `/keyword`) is dropped."""
    tokens = [t for t in _SPLIT.split(text.strip()) if t]
    if keyword and tokens and tokens[0].lower() in (keyword, f"/{keyword}"):
        tokens = tokens[1:]
    return tokens


def starts_request(text: str, keyword: str, names_kind: Callable[[str], bool]) -> bool:
    """A new request rather than a follow-up or an answer: it starts with `keyword`, or it names its kind first
    and gives a full date range (`momentum` alone answers a question; `momentum … 20200101 20200601` is new)."""
    words = split(text)
    if not words:
        return False
    if words[0].lower() in (keyword, f"/{keyword}"):
        return True
    return names_kind(words[0]) and len(tokenize(text).dates) >= 2


def tokenize(text: str, keyword: str | None = None) -> Tokens:
    words: list[str] = []
    codes: list[str] = []
    dates: list[str] = []
    params: dict[str, str] = {}
    bad: list[str] = []
    for token in split(text, keyword):
        if CODE.match(token):
            if token.upper() not in codes:
                codes.append(token.upper())
        elif DATE.match(token):
            dates.append(token.replace("-", ""))
        elif match := PARAM.match(token):
            params[match.group(1).lower()] = match.group(2)
        elif _CODE_LIKE.match(token):
            bad.append(token)
        else:
            words.append(token)
    return Tokens(tuple(words), tuple(codes), tuple(dates), params, tuple(bad))


def exchange_of(digits: str) -> str | None:
    """The exchange suffix an A-share code's digits belong to (SSE 6xxxxx, SZSE 0/3xxxxx, BSE 4/8/92xxxx)."""
    if digits.startswith("6") or digits.startswith("9") and not digits.startswith("92"):
        return "SH"
    if digits[0] in "03":
        return "SZ"
    if digits[0] in "48" or digits.startswith("92"):
        return "BJ"
    return None


def bad_code_message(bad_codes: tuple[str, ...]) -> str:
    """'600519 is not a ts_code; did you mean 600519.SH?' for each code-like word."""
    parts = []
    for token in bad_codes:
        digits = token[:6]
        suffix = exchange_of(digits)
        hint = f"; did you mean {digits}.{suffix}?" if suffix else " (ts_codes look like 600519.SH or 000001.SZ)"
        parts.append(f"{token} is not a ts_code{hint}")
    text = "; ".join(parts)
    return text if text.endswith("?") else text + "."
