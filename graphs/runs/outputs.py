"""What a node's output is when two runs are compared: its values as JSON, with what differs between any two runs
of the same thing left out (message and artifact ids, memory addresses), frames by their content hash."""

from __future__ import annotations

import dataclasses
import re
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import pandas as pd
from langchain_core.messages import BaseMessage
from langgraph.types import Interrupt, Send

from tools.runs.hashing import digest, frame_digest

# ids drawn at random (uuid4, hex of 12 or more with letters and digits, also after a prefix: rule1-m3f…) and
# wall-clock stamps (ISO with microseconds: a card's expiry, an order's creation); texts showing them are compared
_IDS = re.compile(r"(?<![0-9a-f])(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                  r"|(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,})(?![0-9a-f])")
_STAMPS = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}\.\d{6}(?:[+-]\d{2}:\d{2}|Z)?")
_ADDRESS = re.compile(r" at 0x[0-9a-f]+")


def plain(value: Any) -> Any:
    """`value` as comparable JSON."""
    if isinstance(value, BaseMessage):
        calls = [[c["name"], plain(c["args"])] for c in getattr(value, "tool_calls", None) or []]
        return {"type": value.type, "content": plain(value.content), "tool_calls": calls}
    if isinstance(value, Interrupt):
        return {"interrupt": plain(value.value)}
    if isinstance(value, Send):
        return {"send": value.node, "arg": plain(value.arg)}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v) for v in value]
        return sorted(items, key=digest) if isinstance(value, set | frozenset) else items
    if isinstance(value, str):
        return _text(value)
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return None if value != value else value
    if isinstance(value, datetime):
        return _text(value.isoformat())
    if isinstance(value, Decimal | date):
        return str(value)
    if isinstance(value, pd.DataFrame | pd.Series):
        return {"frame": frame_digest(value if isinstance(value, pd.DataFrame) else value.to_frame())}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    if hasattr(value, "model_dump"):
        return plain(value.model_dump())
    return _text(str(value))


def _text(value: str) -> str:
    return _ADDRESS.sub("", _IDS.sub("<id>", _STAMPS.sub("<time>", value)))


def output_digest(update: Any) -> str:
    return digest(plain(update))
