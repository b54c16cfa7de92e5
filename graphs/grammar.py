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

from graphs import names
from tools.i18n import _

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
# Dates as Chinese users write them: 2020年6月1日 (or 号), 2020-6-1, 2020/6/1, 2020.6.1 read as 20200601; a range's
# 至, 到 or ~ between two dates is a space.
_CHINESE_DATE = re.compile(r"(?<!\d)(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*[日号]?")
_SEPARATED_DATE = re.compile(r"(?<![\d.])(\d{4})([-/.])(\d{1,2})\2(\d{1,2})(?![\d.])")
_DATE_RANGE = re.compile(r"(?<=\d)\s*(?:至|到|~)\s*(?=\d)")

# Chinese command, side and strategy words, read as the English keyword they stand for (issue 25), so a Chinese
# request needs no LLM. A word is translated only as a whole token.
CHINESE_WORDS: dict[str, str] = {
    "信号": "signal", "因子": "factor", "分析": "analyze", "规则": "rule", "下单": "order",
    "买": "buy", "买入": "buy", "卖": "sell", "卖出": "sell",
    "账户": "account", "持仓": "account", "委托": "orders", "帮助": "help",
    "取消": "cancel", "语言": "lang", "批准": "approve", "同意": "approve", "拒绝": "reject", "编辑": "edit",
    "列表": "list", "查看": "show", "显示": "show", "运行": "run", "添加": "add", "新增": "add", "日志": "log",
    "定时": "schedule", "暂停": "pause", "恢复": "resume", "删除": "delete", "回测": "backtest", "时钟": "clock",
    "下一日": "next", "下个交易日": "next", "设置": "set", "交易开关": "trading", "开": "on", "关": "off",
    "决策": "decisions", "重置": "reset", "全部": "all", "今日": "today", "未成交": "open",
    "均线交叉": "ma_cross", "动量": "momentum", "均值回归": "mean_reversion", "布林带": "bollinger",
    "相对强弱": "rsi", "反转": "reversal", "波动率": "volatility",
}
# Words a Chinese request wraps its keywords in ("帮我生成一个均线交叉信号" is `signal ma_cross`): read past only
# inside a run of Chinese characters that otherwise splits into known words entirely; anything else there is named.
FILLER_WORDS = frozenset({"帮我", "给我", "请", "生成", "做", "做个", "一个", "个", "的", "一下", "用", "跑",
                          "跑个", "看看", "看下", "算", "计算", "回测", "我要", "我想", "想", "要", "对", "把", "和",
                          "策略", "交易"})
WORKFLOW_WORDS = ("signal", "factor", "analyze", "rule", "order")  # moved first when a sentence names one
_CJK = re.compile(r"^[\u4e00-\u9fff]+$")
IGNORE_WORDS = frozenset({"ignore", "忽略"})  # the answer that runs a request without the words it did not use


def unquote_marks(text: str) -> str:
    """`text` with Chinese quotes as ASCII quotes and ideographic spaces as spaces: what shlex can split."""
    return text.translate(MARKS)


def normalize(text: str) -> str:
    """The copy of a line a grammar parses: NFKC (full-width `＝，：（）`, digits and letters as ASCII) plus the
    quotes and punctuation NFKC leaves alone, and Chinese dates as YYYYMMDD. The original stays what is stored and
    shown."""
    text = unicodedata.normalize("NFKC", unquote_marks(text)).translate(_PUNCTUATION)
    text = _CHINESE_DATE.sub(_date_of, text)
    return _DATE_RANGE.sub(" ", _SEPARATED_DATE.sub(lambda m: f"{m[1]}{int(m[3]):02d}{int(m[4]):02d}", text))


def _date_of(match: re.Match[str]) -> str:
    return f"{match[1]}{int(match[2]):02d}{int(match[3]):02d}"


def english(word: str) -> str:
    """The English keyword a Chinese command or strategy word stands for; any other word unchanged."""
    return CHINESE_WORDS.get(word, word)


def argument(word: str) -> str:
    """A command's argument as the command reads it: a Chinese keyword in English (`全部` is `all`), a date as
    YYYYMMDD; anything else as typed (a rule's words are stored as written)."""
    plain = normalize(word).strip()
    if plain in CHINESE_WORDS:
        return CHINESE_WORDS[plain]
    return plain if DATE.match(plain) else word


def segment(word: str) -> list[str] | None:
    """A run of Chinese characters as the known words it is made of, filler left out (longest words first), or None
    when some part of it is not a known word (then the whole run is named back, never dropped)."""
    if not _CJK.match(word) or word in CHINESE_WORDS:
        return None
    vocabulary = set(CHINESE_WORDS) | FILLER_WORDS | names.table().full_names()
    longest = max(map(len, vocabulary))
    found: list[str] = []
    at = 0
    while at < len(word):
        piece = next((word[at:at + n] for n in range(min(longest, len(word) - at), 0, -1)
                      if word[at:at + n] in vocabulary), None)
        if piece is None:
            return None
        if piece not in FILLER_WORDS:
            found.append(piece)
        at += len(piece)
    return found or None


def first_word(text: str) -> str:
    """The line's first word as a keyword: normalised, in English, lower-case, without a leading `/`."""
    words = split(text)
    return words[0].lower().lstrip("/") if words else ""


def is_ignore(text: str) -> bool:
    return normalize(text).strip().lower() in IGNORE_WORDS


def did_you_mean(token: str, vocabulary: Iterable[str]) -> str:
    """` (did you mean `slow=30`?)` for `slwo=30` when a word of `vocabulary` is close; for a name several stocks
    share (`平安`), which of them; else ""."""
    table = names.table()
    if len(codes := table.codes_for(token)) > 1:
        return _(" (which one: {codes}?)").format(codes=_(", ").join(f"{c} {table.names[c]}" for c in codes))
    name, sep, value = token.partition("=")
    close = difflib.get_close_matches(name.lower(), list(vocabulary), n=1, cutoff=0.7)
    return _(" (did you mean `{suggestion}`?)").format(suggestion=f"{close[0]}{sep}{value}") if close else ""


def unused_question(tokens: Iterable[str], words: Iterable[str]) -> str:
    """The question a request asks instead of running without words it did not use (`words`: what they may have
    meant)."""
    vocabulary = list(words)
    listed = _(", ").join(f"`{token}`{did_you_mean(token, vocabulary)}" for token in tokens)
    return _("I did not understand {words}, so nothing was run. Reply with what you meant, `ignore` to run without "
             "it, or `cancel`.").format(words=listed)


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
    tokens: list[str] = []
    for token in filter(None, _SPLIT.split(normalize(text).strip())):
        words = [english(w) for w in segment(token) or [token]]
        named = [w for w in words if w in WORKFLOW_WORDS]
        if named and len(words) > 1:  # a sentence: its workflow word leads the request, as typed on its own
            tokens[:0] = named
            words = [w for w in words if w not in WORKFLOW_WORDS]
        tokens += words
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
        elif len(named := names.table().codes_for(token)) == 1:  # 贵州茅台 (a shared name stays a word: asked)
            if named[0] not in codes:
                codes.append(named[0])
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
        parts.append(_("{token} is not a ts_code; did you mean {code}?").format(token=token, code=f"{digits}.{suffix}")
                     if suffix else
                     _("{token} is not a ts_code (ts_codes look like 600519.SH or 000001.SZ).").format(token=token))
    return _("; ").join(parts)
