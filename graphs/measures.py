"""What `quantdesk eval` measures of one finished run: each workflow's registry entry names a function from a
`RunRecord` to `Measures`. Numbers are averaged over a dataset (0/1 values become rates); text values (a rating)
are counted into a distribution; None means "does not apply to this run" and is left out of both."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel

Measures = dict[str, float | str | None]


@dataclass(frozen=True)
class RunRecord:
    """One evaluated request: what was asked, the run's final state, every interrupt it raised (their values, in
    order), how many model calls it made, and the judge model for measures that need one (None: no judge)."""

    request: str
    state: dict[str, Any]
    interrupts: list[dict[str, Any]] = field(default_factory=list)
    model_calls: int = 0
    judge: BaseChatModel | None = None


def rate(flag: bool | None) -> float | None:
    """A yes/no measure as 1.0/0.0, None when it does not apply."""
    return None if flag is None else float(flag)
