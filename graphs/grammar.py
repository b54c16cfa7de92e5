"""The one tokeniser behind every workflow's request grammar: words, ts_codes, dates and name=value
parameters, plus the code-like words that are not ts_codes (so a parser can name them instead of dropping
them). Every grammar reads a normalised copy of the line (`normalize`: full-width forms as ASCII, Chinese quotes
and punctuation mapped) with its Chinese command words read as the English ones (`CHINESE_WORDS`)."""

from __future__ import annotations

import difflib
import re
import unicodedata
from collections.abc import Callable, Iterable
from dataclasses import dataclass

CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$", re.IGNORECASE)
DATE = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2})$")
PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
_CODE_LIKE = re.compile(r"^\d{6}(\.[A-Za-z]*)?$")
_SPLIT = re.compile(r"[\s,，]+")

# What NFKC leaves alone: curly and corner quotes (read as the ASCII quotes before the quoting rules run) and the
# ideographic full stop and enumeration comma (a separator and a list comma).
MARKS = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "「": '"', "」": '"', "『": '"',
                       "』": '"', "\u3000": " "})
_PUNCTUATION = str.maketrans({"。": " ", "、": ","})

# Chinese command, side and strategy words, read as the English keyword they stand for (issue 25), so a Chinese
# request needs no LLM. A word is translated only as a whole token.
CHINESE_WORDS: dict[str, str] = {
    "信号": "signal", "因子": "factor", "分析": "analyze", "规则": "rule", "下单": "order",
    "买": "buy", "买入": "buy", "卖": "sell", "卖出": "sell",
    "账户": "account", "持仓": "account", "委托": "orders", "帮助": "help",
    "取消": "cancel", "批准": "approve", "同意": "approve", "拒绝": "reject", "编辑": "edit",
    "均线交叉": "ma_cross", "动量": "momentum", "均值回归": "mean_reversion", "布林带": "bollinger",
    "相对强弱": "rsi", "反转": "reversal", "波动率": "volatility",
}
IGNORE_WORDS = frozenset({"ignore", "忽略"})  # the answer that runs a request without the words it did not use


def unquote_marks(text: str) -> str:
    """`text` with Chinese quotes as ASCII quotes and ideographic spaces as spaces: what shlex can split."""
    return text.translate(MARKS)


def normalize(text: str) -> str:
    """The copy of a line a grammar parses: NFKC (full-width `＝，：（）`, digits and letters as ASCII) plus the
    quotes and punctuation NFKC leaves alone. The original stays what is stored and shown."""
    return unicodedata.normalize("NFKC", unquote_marks(text)).translate(_PUNCTUATION)


def english(word: str) -> str:
    """The English keyword a Chinese command or strategy word stands for; any other word unchanged."""
    return CHINESE_WORDS.get(word, word)


def first_word(text: str) -> str:
    """The line's first word as a keyword: normalised, in English, lower-case, without a leading `/`."""
    words = split(text)
    return words[0].lower().lstrip("/") if words else ""


def is_ignore(text: str) -> bool:
    return normalize(text).strip().lower() in IGNORE_WORDS


def did_you_mean(token: str, names: Iterable[str]) -> str:
    """` (did you mean `slow=30`?)` for `slwo=30` when one of `names` is close, else ""."""
    name, sep, value = token.partition("=")
    close = difflib.get_close_matches(name.lower(), list(names), n=1, cutoff=0.7)
    return f" (did you mean `{close[0]}{sep}{value}`?)" if close else ""


def unused_question(tokens: Iterable[str], names: Iterable[str]) -> str:
    """The question a request asks instead of running without words it did not use."""
    vocabulary = list(names)
    listed = ", ".join(f"`{token}`{did_you_mean(token, vocabulary)}" for token in tokens)
    return (f"I did not understand {listed}, so nothing was run. Reply with what you meant, `ignore` to run "
            "without it, or `cancel`.")


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
    """The tokens of the normalised line, Chinese command words in English; a leading `keyword` (or `/keyword`) is
    dropped."""
    tokens = [english(t) for t in _SPLIT.split(normalize(text).strip()) if t]
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
