"""The structured request grammar, parsed without an LLM:

    [signal] STRATEGY CODES START END [name=value ...]

e.g. `signal ma_cross 000001.SZ,600000.SH 20230101 20231231 fast=5 slow=20`. Codes may be separated
by commas or spaces; dates are YYYYMMDD or YYYY-MM-DD. Pieces may also come one at a time (answers to
clarify questions) and are merged into what is already known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from graphs.signal.library import STRATEGIES, find_strategy

_CODE = re.compile(r"^\d{6}\.(SZ|SH|BJ)$", re.IGNORECASE)
_DATE = re.compile(r"^(\d{8}|\d{4}-\d{2}-\d{2})$")
_PARAM = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(\S+)$")


@dataclass(frozen=True)
class SignalRequest:
    """What is known of a structured request so far."""

    strategy: str | None = None
    codes: tuple[str, ...] = ()
    start: str | None = None
    end: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    unknown_words: tuple[str, ...] = ()

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
        )

    def as_dict(self) -> dict:
        return {"strategy": self.strategy, "codes": list(self.codes), "start": self.start, "end": self.end,
                "params": dict(self.params)}

    @classmethod
    def from_dict(cls, data: dict) -> SignalRequest:
        return cls(data.get("strategy"), tuple(data.get("codes") or ()), data.get("start"), data.get("end"),
                   dict(data.get("params") or {}))


def _date(token: str) -> str:
    return token.replace("-", "")


def parse(text: str) -> SignalRequest:
    """Parse whatever pieces of the grammar `text` contains."""
    tokens = [t for t in re.split(r"[\s,，]+", text.strip()) if t]
    if tokens and tokens[0].lower() in ("signal", "/signal"):
        tokens = tokens[1:]
    strategy: str | None = None
    codes: list[str] = []
    dates: list[str] = []
    params: dict[str, str] = {}
    unknown: list[str] = []
    for token in tokens:
        if _CODE.match(token):
            code = token.upper()
            if code not in codes:
                codes.append(code)
        elif _DATE.match(token):
            dates.append(_date(token))
        elif match := _PARAM.match(token):
            params[match.group(1).lower()] = match.group(2)
        elif strategy is None and find_strategy(token) is not None:
            strategy = find_strategy(token).name  # type: ignore[union-attr]
        else:
            unknown.append(token)
    start = dates[0] if dates else None
    end = dates[1] if len(dates) > 1 else None
    return SignalRequest(strategy, tuple(codes), start, end, params, tuple(unknown))


def looks_structured(text: str) -> bool:
    """True when the text is the grammar rather than free prose: it starts with a strategy name, or it is
    made of codes, dates and parameters with at most one other word."""
    tokens = [t for t in re.split(r"[\s,，]+", text.strip()) if t]
    if tokens and tokens[0].lower() in ("signal", "/signal"):
        tokens = tokens[1:]
    if tokens and find_strategy(tokens[0]) is not None:
        return True
    request = parse(text)
    known = len(request.codes) + (request.start is not None) + (request.end is not None) + len(request.params)
    return known >= 1 and len(request.unknown_words) <= 1


def strategy_names() -> list[str]:
    return list(STRATEGIES)
