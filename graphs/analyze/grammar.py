"""The decision desk's request: `analyze CODE [DATE] [depth=1..5] [analysts=market,news,...] [account=NAME]
[session=pre_open|post_close]`."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graphs.grammar import Words, did_you_mean, first_word, normalize, tokenize
from graphs.order.grammar import OrderGrammarError, account_name
from tools.data.codes import bad_code_message
from tools.i18n import _

KEYWORD = "analyze"
USAGE = ("analyze CODE [DATE] [depth=1..5] [analysts=market,news,sentiment,fundamentals] [account=NAME] "
         "[session=pre_open|post_close] | analyze CODE START..END [every=5d] [depth=1..5] [analysts=...] "
         "[session=...]")  # the second form: a replay
MAX_REPLAY_DATES = 60
ANALYSTS = ("market", "news", "sentiment", "fundamentals")
DEFAULT_DEPTH = 1
PARAMS = ("depth", "account", "every", "session")
WORDS = Words(
    commands={"分析": "analyze", "决策": "decisions", "盘前": "pre_open", "盘后": "post_close"},
    params={"深度": "depth", "辩论轮数": "depth", "分析师": "analysts", "时段": "session", "间隔": "every"},
)
SESSIONS = ("pre_open", "post_close")  # before the day's open (data to the previous close), or after its close
_RANGE = re.compile(r"\b(\d{8}|\d{4}-\d{2}-\d{2})\.\.(\d{8}|\d{4}-\d{2}-\d{2})\b")
_ANALYSTS_PARAM = re.compile(r"\banalysts\s*=\s*(\w+(?:\s*[,，;]\s*\w+)*)", re.IGNORECASE)


class DecisionGrammarError(ValueError):
    """A request the desk cannot read; the message says what to write."""


@dataclass(frozen=True)
class DecisionRequest:
    ts_code: str
    trade_date: str | None  # YYYYMMDD; None: the latest trading day in the data
    depth: int
    analysts: tuple[str, ...]
    account: str | None  # None: the thread's default paper account
    end_date: str | None = None  # a replay: decide on trade_date, then every `every` trading days up to end_date
    every: int = 5
    session: str | None = None  # pre_open or post_close; None: pre_open before 09:30 on a live trading day, else
    # post_close

    def as_dict(self) -> dict[str, object]:
        return {**self.__dict__, "analysts": list(self.analysts)}


def starts_request(text: str) -> bool:
    return first_word(text) == KEYWORD


def parse_request(text: str) -> DecisionRequest:
    text = normalize(text)
    listed = _ANALYSTS_PARAM.search(text)  # the tokeniser splits on commas, so the list is read first
    if listed:
        text = text[:listed.start()] + " " + text[listed.end():]
    span = _RANGE.search(text)
    if span:
        text = text[:span.start()] + " " + text[span.end():]
    tokens = tokenize(text, KEYWORD)
    if tokens.bad_codes:
        raise DecisionGrammarError(bad_code_message(tokens.bad_codes))
    if len(tokens.codes) != 1:
        if tokens.codes:
            raise DecisionGrammarError(_("name exactly one stock code (found {codes}), e.g. `analyze 600519.SH`"
                                         ).format(codes=", ".join(tokens.codes)))
        raise DecisionGrammarError(_("name a stock code, e.g. `analyze 600519.SH`"))
    if len(tokens.dates) > 1 or (span and tokens.dates):
        raise DecisionGrammarError(_("give one date, or one START..END range for a replay"))
    if "every" in tokens.params and not span:
        raise DecisionGrammarError(_("every= goes with a replay range, e.g. `analyze 600519.SH 20200101..20200630 "
                                     "every=5d`"))
    unknown = [name for name in tokens.params if name not in PARAMS]
    if unknown:
        named = ", ".join(name + did_you_mean(f"{name}={tokens.params[name]}", (*PARAMS, "analysts"))
                          for name in unknown)
        raise DecisionGrammarError(_("unknown parameter {named}; use depth=, analysts=, account= or session="
                                     ).format(named=named))
    if tokens.words:
        named = ", ".join(f"`{word}`{did_you_mean(word, (*ANALYSTS, *SESSIONS))}" for word in tokens.words)
        raise DecisionGrammarError(_("cannot read {named}; nothing was run").format(named=named))
    start, end = (span.group(1).replace("-", ""), span.group(2).replace("-", "")) if span else (None, None)
    if start and end and start > end:
        raise DecisionGrammarError(_("the replay starts after it ends ({start}..{end})").format(start=start, end=end))
    if span and "account" in tokens.params:
        raise DecisionGrammarError(_("a replay trades only in its own replay account; leave out account="))
    return DecisionRequest(tokens.codes[0], start or (tokens.dates[0] if tokens.dates else None),
                           _depth(tokens.params.get("depth")), _analysts(listed.group(1) if listed else None),
                           _account(tokens.params.get("account")), end, _every(tokens.params.get("every")),
                           _session(tokens.params.get("session")))


def _session(text: str | None) -> str | None:
    if text is None:
        return None
    name = text.lower().replace("-", "_")
    if name not in SESSIONS:
        raise DecisionGrammarError(_("session= is pre_open (before the day's open, on data up to the previous close) "
                                     "or post_close (after the day's close), not {value}").format(value=repr(text)))
    return name


def _every(text: str | None) -> int:
    if text is None:
        return 5
    digits = text.lower().removesuffix("d")
    if not digits.isdigit() or not 1 <= int(digits) <= 250:
        raise DecisionGrammarError(_("every= is a number of trading days from 1 to 250, like every=5d, not {value}"
                                     ).format(value=repr(text)))
    return int(digits)


def _depth(text: str | None) -> int:
    if text is None:
        return DEFAULT_DEPTH
    if not text.isdigit() or not 1 <= int(text) <= 5:
        raise DecisionGrammarError(_("depth must be a whole number from 1 to 5, not {value}").format(value=repr(text)))
    return int(text)


def _analysts(text: str | None) -> tuple[str, ...]:
    if text is None:
        return ANALYSTS
    names = [n.strip().lower() for n in text.replace(";", ",").split(",") if n.strip()]
    bad = [n for n in names if n not in ANALYSTS]
    if bad or not names:
        raise DecisionGrammarError(_("unknown analyst {names}; choose from {analysts}").format(
            names=", ".join(bad) or _("(none)"), analysts=", ".join(ANALYSTS)))
    return tuple(a for a in ANALYSTS if a in names)


def _account(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return account_name(text)
    except OrderGrammarError as exc:
        raise DecisionGrammarError(str(exc)) from None
