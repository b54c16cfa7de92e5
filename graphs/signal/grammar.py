"""The structured request grammar, parsed without an LLM:

    [signal] STRATEGY CODES START END [name=value ...]

e.g. `signal ma_cross 000001.SZ,600000.SH 20230101 20231231 fast=5 slow=20`. Codes may be separated
by commas or spaces; dates are YYYYMMDD or YYYY-MM-DD. Pieces may also come one at a time (answers to
clarify questions) and are merged into what is already known.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from graphs.grammar import Words, split, tokenize
from graphs.grammar import starts_request as new_request
from graphs.signal.library import STRATEGIES, find_strategy

# Chinese names of the strategies and their parameters, as Chinese quants call them
WORDS = Words(
    commands={"信号": "signal"},
    params={"快线": "fast", "短均线": "fast", "慢线": "slow", "长均线": "slow", "窗口": "window", "周期": "window",
            "前": "top", "后": "bottom", "入场": "entry", "下限": "lower", "上限": "upper", "倍数": "k",
            "标准差倍数": "k", "便宜": "cheap", "昂贵": "dear"},
    names={"均线交叉": "ma_cross", "均线金叉": "ma_cross", "金叉": "ma_cross", "双均线": "ma_cross",
           "均线": "ma_cross", "动量": "momentum", "均值回归": "mean_reversion", "均值回复": "mean_reversion",
           "布林带": "bollinger", "布林线": "bollinger", "布林通道": "bollinger", "相对强弱": "rsi",
           "相对强弱指标": "rsi", "唐奇安通道": "channel", "唐奇安": "channel", "通道突破": "channel",
           "海龟": "channel", "估值": "valuation", "市盈率市净率": "valuation"},
)
VERBS = ("backtest",)  # words a signal request may say that change nothing: every signal is backtested


@dataclass(frozen=True)
class SignalRequest:
    """What is known of a structured request so far."""

    strategy: str | None = None
    codes: tuple[str, ...] = ()
    start: str | None = None
    end: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    unknown_words: tuple[str, ...] = ()
    bad_codes: tuple[str, ...] = ()

    def missing(self) -> list[str]:
        """Missing essentials, most important first (codes > dates > strategy, as the seed orders them)."""
        out = []
        if not self.codes:
            out.append("codes")
        if not self.start or not self.end:
            out.append("dates")
        if not self.strategy:
            out.append("strategy")
        return out

    def merge(self, other: SignalRequest) -> SignalRequest:
        """`other`'s pieces override; parameters are merged."""
        return replace(
            self,
            strategy=other.strategy or self.strategy,
            codes=other.codes or self.codes,
            start=other.start or self.start,
            end=other.end or self.end,
            params={**self.params, **other.params},
            unknown_words=other.unknown_words,
            bad_codes=other.bad_codes,
        )

    def as_dict(self) -> dict:
        return {"strategy": self.strategy, "codes": list(self.codes), "start": self.start, "end": self.end,
                "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict) -> SignalRequest:
        return cls(data.get("strategy"), tuple(data.get("codes") or ()), data.get("start"), data.get("end"),
                   dict(data.get("params") or {}))


def parse(text: str) -> SignalRequest:
    """Parse whatever pieces of the grammar `text` contains."""
    tokens = tokenize(text, "signal")
    strategy: str | None = None
    unknown: list[str] = []
    for word in tokens.words:
        if word.lower() in VERBS:
            continue
        found = find_strategy(word) if strategy is None else None
        if found is not None:
            strategy = found.name
        else:
            unknown.append(word)
    dates = tokens.dates
    return SignalRequest(strategy, tokens.codes, dates[0] if dates else None, dates[1] if len(dates) > 1 else None,
                         tokens.params, tuple(unknown), tokens.bad_codes)


def looks_structured(text: str) -> bool:
    """True when the text is the grammar rather than free prose: it starts with a strategy name, or it is
    made of codes, dates and parameters with at most one other word."""
    words = split(text, "signal")
    if words and find_strategy(words[0]) is not None:
        return True
    tokens = tokenize(text, "signal")
    return tokens.known + len(tokens.bad_codes) >= 1 and len(tokens.words) <= 1


def strategy_names() -> list[str]:
    return list(STRATEGIES)


def vocabulary(strategy: str | None) -> list[str]:
    """The words an unused token may have meant: the strategies and the parameters (the strategy's, or all)."""
    chosen = [STRATEGIES[strategy]] if strategy in STRATEGIES else list(STRATEGIES.values())
    return [*STRATEGIES, *dict.fromkeys(name for s in chosen for name in s.params)]


def starts_request(text: str) -> bool:
    """A new signal request rather than a follow-up or an answer (see graphs.grammar.starts_request)."""
    return new_request(text, "signal", lambda word: find_strategy(word) is not None, VERBS)
