"""The factor's period cut once, when its spec is read: the in-sample part every tuning step sees (the model's
dry runs, retries, checks and prompt), the holdout evaluated once after the code is approved."""

from __future__ import annotations

from typing import Any

from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError
from tools.research.holdout import Split, split_sessions


def with_split(spec: dict[str, Any], provider: MarketDataProvider, fraction: float) -> dict[str, Any]:
    """`spec` with its `split` (None when the provider has no session in the period: the dry run says why)."""
    try:
        sessions = provider.calendar(spec["start"], spec["end"])
    except DataError:
        sessions = []
    return {**spec, "split": split_sessions(sessions, fraction).as_dict() if sessions else None}


def split_of(spec: dict[str, Any]) -> Split | None:
    data = spec.get("split")
    return Split.from_dict(data) if data else None


def tuning_end(spec: dict[str, Any]) -> str:
    """The last date a tuning step may see: the in-sample end, or the period's end without a holdout."""
    split = split_of(spec)
    return split.in_sample_end if split is not None else str(spec["end"])
