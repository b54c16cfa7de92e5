"""The holdout of a research period: its last whole sessions, kept from everything that tunes (a model's retries,
its checks, its context) and evaluated once, after the code is approved.

A period whose holdout would be shorter than `MIN_HOLDOUT_SESSIONS` runs without one, and says so."""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

MIN_HOLDOUT_SESSIONS = 60


@dataclass(frozen=True)
class Split:
    """Where a period [start, end] is cut: in-sample [start, in_sample_end], holdout [holdout_start, end]; without a
    holdout `holdout_start` is None and `in_sample_end` is `end`."""

    fraction: float
    start: str
    end: str
    in_sample_end: str
    holdout_start: str | None
    in_sample_sessions: int
    holdout_sessions: int  # the sessions a holdout would have had (below the minimum: not used)

    @property
    def held_out(self) -> bool:
        return self.holdout_start is not None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Split:
        return cls(**data)


def split_sessions(sessions: list[str], fraction: float, minimum: int = MIN_HOLDOUT_SESSIONS) -> Split:
    """Cut the trading sessions (YYYYMMDD, ascending) of a period: the last ceil(fraction × n) sessions are held out,
    unless that is fewer than `minimum` (or the fraction is 0), then none is."""
    if not sessions:
        raise ValueError("a period without sessions cannot be split")
    held = math.ceil(round(fraction * len(sessions), 9)) if fraction > 0 else 0
    if held < minimum or held >= len(sessions):
        return Split(fraction, sessions[0], sessions[-1], sessions[-1], None, len(sessions), held)
    cut = len(sessions) - held
    return Split(fraction, sessions[0], sessions[-1], sessions[cut - 1], sessions[cut], cut, held)


_DATE = re.compile(r"(?<!\d)(\d{4})(?:[-./年]\s*(\d{1,2})\s*[-./月]\s*(\d{1,2})日?|(\d{2})(\d{2}))(?!\d)")


def hide_held_out_dates(text: str, split: Split) -> str:
    """`text` with every date after the in-sample end written as the in-sample end (what a model that tunes is
    shown of a request that names the whole period)."""
    if not split.held_out:
        return text

    def replace(match: re.Match[str]) -> str:
        year, month, day = match.group(1), match.group(2) or match.group(4), match.group(3) or match.group(5)
        date = f"{year}{int(month):02d}{int(day):02d}"
        return split.in_sample_end if date > split.in_sample_end else match.group(0)

    return _DATE.sub(replace, text)
