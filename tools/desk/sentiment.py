"""A deterministic lexicon sentiment score of news and posts (Chinese and English terms, negations), no model."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from tools.data.news import NewsItem

POSITIVE_TERMS = (
    "利好", "增长", "上调", "中标", "回购", "增持", "预增", "扭亏", "超预期", "高于预期", "创新高", "涨停", "大涨",
    "获批", "签约", "分红", "提价",
    "beat", "beats", "upgrade", "upgrades", "upgraded", "outperform", "buyback", "surge", "surges",
    "record high", "raises guidance", "raised guidance",
)
NEGATIVE_TERMS = (
    "利空", "下滑", "减持", "处罚", "违规", "亏损", "预亏", "预减", "下调", "低于预期", "不及预期", "跌停",
    "大跌", "暴跌", "立案", "诉讼", "问询函", "警示函", "退市", "违约", "冻结", "停产", "召回", "负增长", "减值",
    "miss", "misses", "missed", "downgrade", "downgrades", "downgraded", "lawsuit", "probe", "fraud", "loss",
    "losses", "plunge", "plunges", "underperform", "recall", "cuts guidance", "cut guidance",
)
NEGATIONS_ZH = ("未", "无", "不会", "不再", "没有", "并未", "尚未", "暂无", "否认", "不存在", "否认存在")
NEGATIONS_EN = ("not", "no", "never", "without")
SENTIMENT_METHOD = ("lexicon: an item is positive (negative) when it has more positive (negative) terms than "
                    "negative (positive) ones; score = (positive items - negative items) / all items")

_POLARITY = {**{t: 1 for t in POSITIVE_TERMS}, **{t: -1 for t in NEGATIVE_TERMS}}
# Longest terms first, so 负增长 wins over 增长 and 不及预期 is one term; English terms only as whole words.
_TERMS = re.compile("|".join(
    rf"(?<![a-z]){re.escape(t)}(?![a-z])" if t.isascii() else re.escape(t)
    for t in sorted(_POLARITY, key=len, reverse=True)
))


@dataclass(frozen=True)
class ScoredItem:
    """An item with its lexicon hits: net = positive hits - negative hits."""

    item: NewsItem
    net: int
    positive_terms: tuple[str, ...]
    negative_terms: tuple[str, ...]


@dataclass(frozen=True)
class SentimentSummary:
    """Counts of positive / negative / neutral items, the net score in [-1, 1] (0 without items) and the
    items that drove it: the non-neutral ones, strongest first, then newest."""

    positive: int
    negative: int
    neutral: int
    score: float
    drivers: tuple[ScoredItem, ...]
    method: str = SENTIMENT_METHOD


def score_item(item: NewsItem) -> ScoredItem:
    """Lexicon hits in the title and content (case-insensitive); a term right after a negation (未减持,
    否认存在违规, not a loss) is ignored."""
    text = unicodedata.normalize("NFKC", f"{item.title}\n{item.content}").lower()
    positive: list[str] = []
    negative: list[str] = []
    for match in _TERMS.finditer(text):
        term = match.group(0)
        if _negated(text[: match.start()], term):
            continue
        (positive if _POLARITY[term] > 0 else negative).append(term)
    return ScoredItem(item, len(positive) - len(negative), tuple(positive), tuple(negative))


def score_sentiment(items: Iterable[NewsItem], max_drivers: int = 5) -> SentimentSummary:
    """Deterministic lexicon sentiment of `items` (see `SENTIMENT_METHOD`); no model involved."""
    scored = [score_item(i) for i in items]
    positive = sum(s.net > 0 for s in scored)
    negative = sum(s.net < 0 for s in scored)
    score = (positive - negative) / len(scored) if scored else 0.0
    drivers = sorted((s for s in scored if s.net), key=lambda s: s.item.datetime, reverse=True)
    drivers.sort(key=lambda s: -abs(s.net))  # stable: strongest first, newest first among equals
    return SentimentSummary(positive, negative, len(scored) - positive - negative, score,
                            tuple(drivers[:max_drivers]))


def _negated(before: str, term: str) -> bool:
    if term.isascii():
        words = [w for w in re.findall(r"[a-z']+", before[-24:]) if w not in ("a", "an", "the")]
        return bool(words) and words[-1] in NEGATIONS_EN
    return before.rstrip().endswith(NEGATIONS_ZH)
