"""Content hashes and the compressed form of the rows a run read."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

import pandas as pd


def digest(value: Any) -> str:
    """The sha256 of `value` as canonical JSON (sorted keys, no spaces); what is not JSON is its str."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def bytes_digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def frame_digest(frame: pd.DataFrame) -> str:
    """The sha256 of a frame's rows (columns, index and values, in order): equal rows, equal hash."""
    hashed = pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes()
    return hashlib.sha256("|".join(map(str, frame.columns)).encode() + hashed).hexdigest()


def to_parquet(frame: pd.DataFrame) -> bytes:
    """`frame` as zstd-compressed Parquet."""
    buffer = io.BytesIO()
    frame.to_parquet(buffer, compression="zstd", index=True)
    return buffer.getvalue()


def from_parquet(data: bytes) -> pd.DataFrame:
    return pd.read_parquet(io.BytesIO(data))
