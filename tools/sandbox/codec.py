"""Data-only transfer between host and sandbox: JSON headers plus Arrow IPC blobs, length-prefixed.

Imported by the host as `tools.sandbox.codec` and by the worker as a plain module inside the sandbox,
so it depends on nothing but the standard library, numpy, pandas and pyarrow. Nothing is ever pickled.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import struct
from typing import Any, BinaryIO

import numpy as np
import pandas as pd
import pyarrow as pa

_LENGTH = struct.Struct(">Q")
SCALAR_TYPES = (bool, int, float, str, type(None))


class CodecError(ValueError):
    """A value that cannot cross the sandbox boundary."""


def write_message(stream: BinaryIO, header: dict[str, Any], blobs: list[bytes]) -> None:
    """One message: a JSON header (with the blob count) followed by its blobs."""
    head = json.dumps({**header, "blobs": len(blobs)}, allow_nan=True).encode()
    stream.write(_LENGTH.pack(len(head)))
    stream.write(head)
    for blob in blobs:
        stream.write(_LENGTH.pack(len(blob)))
        stream.write(blob)
    stream.flush()


def _read_exact(stream: BinaryIO, size: int) -> bytes:
    chunks = []
    while size:
        chunk = stream.read(size)
        if not chunk:
            raise EOFError("stream closed mid-message")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def read_message(stream: BinaryIO, max_bytes: int | None = None) -> tuple[dict[str, Any], list[bytes]]:
    """Read one message; `max_bytes` bounds the total size accepted."""
    budget = max_bytes
    blobs: list[bytes] = []

    def take() -> bytes:
        nonlocal budget
        (size,) = _LENGTH.unpack(_read_exact(stream, _LENGTH.size))
        if budget is not None:
            if size > budget:
                raise CodecError(f"message larger than the {max_bytes}-byte limit")
            budget -= size
        return _read_exact(stream, size)

    header = json.loads(take())
    for _ in range(int(header.get("blobs", 0))):
        blobs.append(take())
    return header, blobs


def _refuse_mixed_objects(frame: pd.DataFrame) -> None:
    """Arrow would silently coerce an object index, column or column labels that mix value types (dates and
    floats become dates, bytes and text become bytes, labels become text), so such frames are refused."""
    parts = [(f"index level {name!r}", frame.index.get_level_values(i)) for i, name in enumerate(frame.index.names)]
    parts += [(f"column labels level {i}", frame.columns.get_level_values(i)) for i in range(frame.columns.nlevels)]
    parts += [(f"column {label!r}", frame.iloc[:, i]) for i, label in enumerate(frame.columns)]
    for where, values in parts:
        if values.dtype == object and pd.api.types.infer_dtype(values, skipna=True) == "mixed":
            raise CodecError(f"{where} mixes value types; give it one type")


def _frame_to_ipc(frame: pd.DataFrame) -> bytes:
    _refuse_mixed_objects(frame)
    table = pa.Table.from_pandas(frame, preserve_index=True)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _ipc_to_frame(blob: bytes) -> pd.DataFrame:
    with pa.ipc.open_stream(pa.py_buffer(blob)) as reader:
        return reader.read_all().to_pandas()


_MATRIX_DTYPES = ("float64", "float32", "int64", "int32", "bool")


def _labels_ok(index: pd.Index) -> bool:
    return not isinstance(index, pd.MultiIndex) and all(
        isinstance(v, str) or (isinstance(v, (int, np.integer)) and not isinstance(v, bool)) for v in index
    )


def _matrix_index(index: pd.Index) -> dict[str, Any] | None:
    """A JSON description of a row index the matrix path can carry, or None."""
    if isinstance(index, pd.DatetimeIndex) and index.tz is None:
        return {"type": "datetime", "unit": np.datetime_data(index.dtype)[0], "name": index.name}
    if isinstance(index, pd.RangeIndex):
        return {"type": "range", "start": index.start, "stop": index.stop, "step": index.step, "name": index.name}
    if index.dtype == "int64":
        return {"type": "int64", "name": index.name}
    return None


def _as_matrix(frame: pd.DataFrame) -> tuple[dict[str, Any], list[bytes]] | None:
    """Fast path for wide single-dtype frames: raw column-major values, raw index, JSON labels."""
    dtypes = set(map(str, frame.dtypes))
    index_info = _matrix_index(frame.index)
    if (len(dtypes) != 1 or next(iter(dtypes)) not in _MATRIX_DTYPES or index_info is None
            or str(frame.columns.dtype) not in ("str", "object", "int64")
            or not _labels_ok(frame.columns) or not isinstance(frame.columns.name, SCALAR_TYPES)
            or not isinstance(frame.index.name, SCALAR_TYPES)):
        return None
    values = frame.to_numpy()
    blobs = [np.asfortranarray(values).T.tobytes()]
    if index_info["type"] in ("datetime", "int64"):
        raw = frame.index.asi8 if index_info["type"] == "datetime" else frame.index.to_numpy()
        blobs.append(raw.tobytes())
    meta = {"dtype": str(values.dtype), "shape": list(frame.shape), "index": index_info,
            "columns": [c.item() if isinstance(c, np.integer) else c for c in frame.columns],
            "columns_name": frame.columns.name, "columns_dtype": str(frame.columns.dtype)}
    return meta, blobs


def _from_matrix(meta: dict[str, Any], blobs: list[bytes]) -> pd.DataFrame:
    if meta["dtype"] not in _MATRIX_DTYPES or meta["columns_dtype"] not in ("str", "object", "int64"):
        raise CodecError(f"refusing matrix of dtype {meta['dtype']!r} / columns {meta['columns_dtype']!r}")
    rows, cols = meta["shape"]
    values = np.frombuffer(blobs[0], dtype=meta["dtype"]).reshape(cols, rows).T.copy(order="F")
    info = meta["index"]
    if info["type"] == "datetime":
        index: pd.Index = pd.DatetimeIndex(np.frombuffer(blobs[1], dtype="int64").view(f"datetime64[{info['unit']}]"),
                                           name=info["name"])
    elif info["type"] == "range":
        index = pd.RangeIndex(info["start"], info["stop"], info["step"], name=info["name"])
    else:
        index = pd.Index(np.frombuffer(blobs[1], dtype="int64").copy(), name=info["name"])
    columns = pd.Index(meta["columns"], name=meta["columns_name"], dtype=meta["columns_dtype"])
    return pd.DataFrame(values, index=index, columns=columns, copy=False)


def _scalar(value: Any) -> Any:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, (pd.Timestamp, _dt.datetime, _dt.date)):
        return {"timestamp": pd.Timestamp(value).isoformat()}
    if isinstance(value, float) and not math.isfinite(value):
        return {"float": repr(value)}
    if isinstance(value, SCALAR_TYPES):
        return value
    raise CodecError(f"type {type(value).__name__} cannot be passed; use a DataFrame, Series or scalar")


def _unscalar(value: Any) -> Any:
    if isinstance(value, dict):
        if "timestamp" in value:
            return pd.Timestamp(value["timestamp"])
        if "float" in value:
            return float(value["float"])
    return value


def encode_values(values: dict[str, Any]) -> tuple[list[dict[str, Any]], list[bytes]]:
    """Describe named DataFrames, Series and scalars as header entries plus Arrow blobs."""
    entries: list[dict[str, Any]] = []
    blobs: list[bytes] = []
    for name, value in values.items():
        if isinstance(value, (pd.DataFrame, pd.Series)):
            is_series = isinstance(value, pd.Series)
            frame = value.to_frame(name="values") if is_series else value
            entry: dict[str, Any] = {"name": name, "kind": "series" if is_series else "frame", "blob": len(blobs)}
            if is_series:
                entry["label"] = value.name if isinstance(value.name, SCALAR_TYPES) else str(value.name)
            matrix = _as_matrix(frame)
            if matrix is None:
                blobs.append(_frame_to_ipc(frame))
            else:
                entry["matrix"], parts = matrix
                entry["blob_count"] = len(parts)
                blobs.extend(parts)
            entries.append(entry)
        else:
            try:
                if isinstance(value, (list, tuple)):
                    entries.append({"name": name, "kind": "list", "value": [_scalar(v) for v in value]})
                else:
                    entries.append({"name": name, "kind": "scalar", "value": _scalar(value)})
            except CodecError as exc:
                raise CodecError(f"{name}: {exc}") from None
    return entries, blobs


def decode_values(entries: list[dict[str, Any]], blobs: list[bytes]) -> dict[str, Any]:
    """Rebuild the values described by `encode_values` (data only; nothing executes)."""
    values: dict[str, Any] = {}
    for entry in entries:
        kind = entry["kind"]
        if kind in ("frame", "series"):
            first = entry["blob"]
            if "matrix" in entry:
                frame = _from_matrix(entry["matrix"], blobs[first : first + entry["blob_count"]])
            else:
                frame = _ipc_to_frame(blobs[first])
            if kind == "series":
                frame.columns = pd.Index(["values"])
                values[entry["name"]] = frame["values"].rename(entry.get("label"))
            else:
                values[entry["name"]] = frame
        elif kind == "list":
            values[entry["name"]] = [_unscalar(v) for v in entry["value"]]
        elif kind == "scalar":
            values[entry["name"]] = _unscalar(entry["value"])
        else:
            raise CodecError(f"unknown value kind {kind!r}")
    return values
