"""The one tokeniser, below the command grammar (graphs/syntax.py, lark) and every workflow's request reader: words,
ts_codes, dates and name=value parameters, plus the code-like words that are not ts_codes (so a parser can name them
instead of dropping them). Every reader reads a normalised copy of the line (`normalize`: full-width forms as ASCII,
Chinese quotes and punctuation mapped) with its Chinese words read as the English ones (`vocabulary`: the
conversation's words here, each workflow's from its package through the registry). What is done here is done on
characters before there are words (dates, units, parameter names, cutting unspaced Chinese), which a grammar over
words cannot do; ARCHITECTURE.md ("One conversation layer") says why it is not in lark."""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from graphs import names
from tools.data.codes import CODE, CODE_LIKE, exchange_of
from tools.i18n import _

DATE = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2})$")
PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")
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
_DASH_RANGE = re.compile(r"(?<!\d)(\d{8})\s*[-~]\s*(\d{8})(?!\d)")  # 20180102-20181228
_FROM = re.compile(r"(?:从|自)\s*(?=\d)")  # 从2018年3月1日到…: the range's start
_SHARES = re.compile(r"(?<![\d.])(\d[\d,]*)\s*股(?!票)")  # 200股 is 200 (shares)
_LOTS = re.compile(r"(?<![\d.])(\d[\d,]*)\s*手")  # 2手 is 200 shares: one lot is 100
_LIMIT = re.compile(r"(?:限价|价格)\s*[:=]?\s*(\d+(?:\.\d+)?)(?![0-9A-Za-z_.])\s*元?")  # 限价 12.5 (元) is limit=12.5
_PARAM_NAME = re.compile(r"([\u4e00-\u9fff]+)\s*[=:]\s*(?=\S)")  # a Chinese parameter name before its value

# What a person types in Chinese, by role: each word has one role only (tests/graphs/test_conversation.py holds it). The
# conversation's own words are here; each workflow's (its commands, parameters, strategies or kinds) are in its own
# package, collected by the registry (`graphs.registry.WORDS`). A word is translated only as a whole token or as a
# piece of an unspaced run of Chinese (`segment`).
CORE_WORDS: dict[str, str] = {
    "帮助": "help", "怎么用": "help", "状态": "status", "语言": "lang", "待办": "pending", "待处理": "pending",
    "取消": "cancel", "退出": "quit", "列表": "list", "清单": "list", "列出": "list", "查看": "show", "显示": "show",
    "全部": "all", "所有": "all", "批准": "approve", "同意": "approve", "拒绝": "reject", "编辑": "edit",
    "修改": "edit", "忽略": "ignore",
}
# Answers to a yes/no question or to a single suggestion (`did you mean 600519.SH?`).
YES_WORDS = frozenset({"yes", "y", "ok", "是", "是的", "对", "对的", "好", "好的", "确认", "确定", "行", "可以"})
NO_WORDS = frozenset({"no", "n", "否", "不", "不是", "不对", "不要", "算了"})
# Words a Chinese request wraps its keywords in ("帮我生成一个均线交叉信号" is `signal ma_cross`): left out of an
# unspaced run; any other unknown piece of it is named back.
FILLER_WORDS = frozenset({"帮我", "给我", "请", "生成", "做", "做个", "一个", "个", "的", "一下", "用", "跑",
                          "跑个", "看看", "看下", "算", "计算", "我要", "我想", "想", "要", "把", "和", "策略", "交易",
                          "一只", "只", "股票"})
_CJK = re.compile(r"[\u4e00-\u9fff]+")
IGNORE_WORDS = frozenset({"ignore"})  # the answer that runs a request without the words it did not use


@dataclass(frozen=True)
class Words:
    """One workflow's (or the conversation's) Chinese words by role, each read as its English keyword."""

    commands: Mapping[str, str] = field(default_factory=dict)  # commands, subcommands, verbs, sides, values
    params: Mapping[str, str] = field(default_factory=dict)  # parameter names, as in `窗口=10`
    names: Mapping[str, str] = field(default_factory=dict)  # strategy and factor names


@dataclass(frozen=True, eq=False)  # compared and hashed as itself: a cache key (`_split`)
class Vocabulary:
    """Every word the grammar reads, gathered from the conversation and the registry's workflows."""

    words: Mapping[str, str]  # a Chinese keyword (command or name) -> its English keyword
    params: Mapping[str, str]  # a Chinese parameter name -> its English name
    segments: frozenset[str]  # what an unspaced run is cut into: keywords, fillers, confirmations, stock names
    longest: int
    leaders: frozenset[str]  # the words a request's reading moves first (`split`): workflows and commands
    keywords: frozenset[str]  # the English keywords that may come before a leader (`回测一下均线交叉…`)


_vocabulary: tuple[object, Vocabulary] | None = None


def vocabulary() -> Vocabulary:
    """The vocabulary for the process's stock names (built again when the name table changes)."""
    global _vocabulary
    table = names.table()
    if _vocabulary is not None and _vocabulary[0] is table:
        return _vocabulary[1]
    from graphs.registry import COMMANDS, WORDS, WORKFLOWS  # the registry imports this module

    words: dict[str, str] = dict(CORE_WORDS)
    params: dict[str, str] = {}
    for group in WORDS:
        words.update(group.commands)
        words.update(group.names)
        params.update(group.params)
    segments = frozenset(words) | FILLER_WORDS | YES_WORDS | NO_WORDS | table.full_names() | frozenset(params)
    subcommands = {name for workflow in WORKFLOWS.values() for name in workflow.subcommands}
    built = Vocabulary(words, params, segments, max(map(len, segments)),
                       frozenset(WORKFLOWS) | (frozenset(COMMANDS) - {"cancel"}),
                       frozenset(words.values()) | frozenset(subcommands))
    _vocabulary = (table, built)
    return built


def unquote_marks(text: str) -> str:
    """`text` with Chinese quotes as ASCII quotes and ideographic spaces as spaces: what shlex can split."""
    return text.translate(MARKS)


def normalize(text: str) -> str:
    """The copy of a line a grammar parses: NFKC (full-width `＝，：（）`, digits and letters as ASCII) plus the
    quotes and punctuation NFKC leaves alone; Chinese dates as YYYYMMDD and a range's two dates apart; Chinese
    parameter names as English (`窗口=10`, `限价 12.5`); quantities in 股 as shares and in 手 as lots of 100. The
    original stays what is stored and shown."""
    text = unicodedata.normalize("NFKC", unquote_marks(text)).translate(_PUNCTUATION)
    text = _CHINESE_DATE.sub(_date_of, text)
    text = _SEPARATED_DATE.sub(lambda m: f"{m[1]}{int(m[3]):02d}{int(m[4]):02d}", text)
    text = _FROM.sub(" ", _DATE_RANGE.sub(" ", _DASH_RANGE.sub(r"\1 \2", text)))
    text = _LOTS.sub(lambda m: f"{int(m[1].replace(',', '')) * 100}", _SHARES.sub(r"\1", text))
    text = _LIMIT.sub(r" limit=\1 ", text)
    return _PARAM_NAME.sub(_parameter_name, text) if "=" in text or ":" in text else text


def _parameter_name(match: re.Match[str]) -> str:
    """`窗口=` as `window=`, also at the end of an unspaced run (`均线交叉快线=10`); an unknown name as it was."""
    run, params = match[1], vocabulary().params
    name = next((run[at:] for at in range(len(run)) if run[at:] in params), None)
    if name is None:
        return match[0]
    return f"{run[:-len(name)]} {params[name]}=" if len(name) < len(run) else f"{params[name]}="


def _date_of(match: re.Match[str]) -> str:
    return f"{match[1]}{int(match[2]):02d}{int(match[3]):02d}"


def english(word: str) -> str:
    """The English keyword a Chinese command, strategy or factor word stands for; any other word unchanged."""
    return vocabulary().words.get(word, word)


def argument(word: str) -> str:
    """A command's argument as the command reads it: a Chinese keyword in English (`全部` is `all`), a date as
    YYYYMMDD; anything else as typed (a rule's words are stored as written)."""
    plain = normalize(word).strip()
    words = vocabulary().words
    if plain in words:
        return words[plain]
    return plain if DATE.match(plain) else word


def segment(word: str) -> list[str]:
    """A token as the words it is made of: each run of Chinese cut into the longest known words (fillers left
    out; an unknown piece kept whole, so it is named back), the rest (codes, numbers, `name=value`) as it is."""
    if not _CJK.search(word):
        return [word]
    known = vocabulary()
    pieces: list[str] = []
    at = 0
    for run in _CJK.finditer(word):
        pieces += [word[at:run.start()]] if run.start() > at else []
        pieces += _cut(run.group(), known)
        at = run.end()
    pieces += [word[at:]] if at < len(word) else []
    return [piece for piece in pieces if piece] or [word]


def _cut(run: str, known: Vocabulary) -> list[str]:
    """A run of Chinese characters as known words, longest first, and the unknown pieces between them."""
    if run in known.segments:  # a keyword, a filler or a stock's full name as a whole
        return [] if run in FILLER_WORDS else [run]
    found: list[str] = []
    unknown = ""
    at = 0
    while at < len(run):
        piece = next((run[at:at + n] for n in range(min(known.longest, len(run) - at), 0, -1)
                      if run[at:at + n] in known.segments), None)
        if piece is None:
            unknown += run[at]
            at += 1
            continue
        if unknown:
            found.append(unknown)
            unknown = ""
        if piece not in FILLER_WORDS:
            found.append(piece)
        at += len(piece)
    return [*found, unknown] if unknown else found


def first_word(text: str) -> str:
    """The line's first word as a keyword: normalised, in English, lower-case, without a leading `/`."""
    words = split(text)
    return words[0].lower().lstrip("/") if words else ""


def is_ignore(text: str) -> bool:
    return english(normalize(text).strip()).lower() in IGNORE_WORDS


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


@dataclass(frozen=True)
class Word:
    """One word of a line: as the person typed it, as the grammar reads it, and which of the line's space-separated
    parts it is in (a command's free text is those parts as typed)."""

    typed: str
    read: str
    at: int = 0  # the part's place in the line
    part: str = ""  # the whole part as typed


def split(text: str, keyword: str | None = None) -> list[str]:
    """The tokens of the normalised line as a request's reader takes them (a bag of pieces: a command's order is
    the command grammar's, graphs/syntax.py), Chinese keywords in English; the workflow a sentence names leads
    (`帮我生成一个均线交叉信号` is `signal ma_cross`); a leading `keyword` (or `/keyword`) is dropped."""
    tokens = list(_split(text, vocabulary()))
    if keyword and tokens and tokens[0].lower() in (keyword, f"/{keyword}"):
        tokens = tokens[1:]
    return tokens


@functools.lru_cache(maxsize=4096)
def _split(text: str, known: Vocabulary) -> tuple[str, ...]:
    """`split` for one vocabulary (a line is read by several grammars in turn: it is cut once)."""
    return tuple(word.read for word in _lead(_words(filter(None, _SPLIT.split(normalize(text).strip())))))


def forget() -> None:
    """Empty the cache of lines read (`_split`): a benchmark's next round reads them as new."""
    _split.cache_clear()


_PART = re.compile(r"""(?:[^\s"']|"[^"]*"|'[^']*')+""")  # a space-separated part, quoted spans whole
_QUOTES = re.compile(r"""["']""")


def _parts(text: str) -> list[tuple[str, bool]]:
    """The line's space-separated parts as typed, each with whether it holds quoted text (`"buy when …"`, “…”,
    「…」: one part, without its quotes); a line whose quotes do not close is cut at its spaces alone."""
    text = unquote_marks(text).strip()
    if text.count('"') % 2 or text.count("'") % 2:
        return [(part, False) for part in text.split()]
    return [(_QUOTES.sub("", part), True) if '"' in part or "'" in part else (part, False)
            for part in _PART.findall(text)]


def read_words(text: str) -> list[Word]:
    """A command line's words in the order typed (the command grammar, graphs/syntax.py, reads them): a quoted part
    is one word kept as typed, the rest read as `split` reads it."""
    words: list[Word] = []
    for at, (part, quoted) in enumerate(_parts(text)):
        if quoted:
            words.append(Word(part, part, at, part))
        else:
            words += _words(filter(None, _SPLIT.split(normalize(part).strip())), part, at)
    return words


def _words(tokens: Iterable[str], typed: str | None = None, at: int = 0) -> list[Word]:
    """Each token cut into its words and read. `typed`: the part the tokens came from, as typed; a part that is one
    token and one word keeps it as that word's spelling."""
    tokens = list(tokens)
    words: list[Word] = []
    for token in tokens:
        pieces = segment(token)
        whole = typed if typed is not None else token
        if len(pieces) == 1:
            words.append(Word(whole if len(tokens) == 1 else token, english(token), at, whole))
        else:
            words += [Word(piece, english(piece), at, whole) for piece in pieces]
    return words


def _lead(words: list[Word]) -> list[Word]:
    """For a request's reader (`split`): the workflow or command a line names moved first when only keywords come
    before it (`帮我生成一个均线交叉信号`, `回测 信号 …`)."""
    known = vocabulary()
    leaders, keywords = known.leaders, known.keywords
    for at, word in enumerate(words[:4]):
        read = word.read.lower()
        if read in leaders:
            return [word, *words[:at], *words[at + 1:]] if at else words
        if read not in keywords:
            return words
    return words


def starts_request(text: str, keyword: str, names_kind: Callable[[str], bool], verbs: tuple[str, ...] = ()) -> bool:
    """A new request rather than a follow-up or an answer: it starts with `keyword`, or it names its kind first
    (after any of the workflow's `verbs`: `回测 均线交叉 …`) and gives a full date range (`momentum` alone answers a
    question; `momentum … 20200101 20200601` is new)."""
    words = split(text)
    while words and words[0].lower() in verbs:
        words = words[1:]
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
        elif CODE_LIKE.match(token):
            bad.append(token)
        elif len(named := names.table().codes_for(token)) == 1:  # 贵州茅台 (a shared name stays a word: asked)
            if named[0] not in codes:
                codes.append(named[0])
        else:
            words.append(token)
    return Tokens(tuple(words), tuple(codes), tuple(dates), params, tuple(bad))


def suggestions(bad_codes: tuple[str, ...], unknown: Iterable[str] = ()) -> list[str]:
    """What a question about one doubtful word offers to pick (by its number, or yes when it is one): the ts_code a
    bare code stands for (`600519` → 600519.SH), or the stocks a shared name may mean (`平安`)."""
    doubtful = [*bad_codes, *unknown]
    if len(doubtful) != 1:
        return []
    if bad_codes:
        suffix = exchange_of(bad_codes[0][:6])
        return [f"{bad_codes[0][:6]}.{suffix}"] if suffix else []
    return list(names.table().codes_for(doubtful[0]))
