"""The data-only codec: every value the sandbox passes comes back equal, and nothing else passes."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from tools.sandbox import codec

WIDE = pd.DataFrame(
    np.random.default_rng(1).normal(size=(50, 4)),
    index=pd.DatetimeIndex(pd.bdate_range("2020-01-01", periods=50), name="trade_date"),
    columns=pd.Index(["000001.SZ", "600000.SH", "600519.SH", "430047.BJ"], name="ts_code"),
)

VALUES = {
    "wide float (matrix path)": WIDE,
    "wide with NaN": WIDE.where(WIDE > 0),
    "signal of int": (WIDE > 0).astype("int64"),
    "bool frame": WIDE > 0,
    "object columns": pd.DataFrame(np.eye(2), columns=pd.Index(["a", "b"], dtype=object)),
    "int columns, range index": pd.DataFrame(np.eye(3), columns=[3, 4, 5]),
    "mixed dtypes (arrow path)": pd.DataFrame({"code": ["a", "b"], "x": [1.5, None], "n": [1, 2]}),
    "multiindex columns (arrow path)": pd.DataFrame(
        np.ones((2, 2)), columns=pd.MultiIndex.from_tuples([("close", "a"), ("close", "b")])),
    "tz-aware index (arrow path)": WIDE.tz_localize("Asia/Shanghai"),
}


@pytest.mark.parametrize("name", list(VALUES))
def test_frames_round_trip(name: str) -> None:
    entries, blobs = codec.encode_values({"x": VALUES[name]})
    pd.testing.assert_frame_equal(codec.decode_values(entries, blobs)["x"], VALUES[name], check_freq=False)


def test_series_and_scalars_round_trip() -> None:
    values = {"s": WIDE.iloc[:, 1], "unnamed": pd.Series([1.0, 2.0]), "i": 3, "f": 2.5, "nan": float("nan"),
              "inf": float("-inf"), "b": True, "none": None, "t": "text", "np": np.float64(1.25),
              "when": pd.Timestamp("2020-01-02"), "codes": ["000001.SZ", "600000.SH"]}
    entries, blobs = codec.encode_values(values)
    out = codec.decode_values(entries, blobs)
    pd.testing.assert_series_equal(out["s"], values["s"], check_freq=False)
    pd.testing.assert_series_equal(out["unnamed"], values["unnamed"])
    assert np.isnan(out["nan"]) and out["inf"] == float("-inf")
    assert {k: out[k] for k in ("i", "f", "b", "none", "t", "np", "when", "codes")} == {
        "i": 3, "f": 2.5, "b": True, "none": None, "t": "text", "np": 1.25, "when": pd.Timestamp("2020-01-02"),
        "codes": ["000001.SZ", "600000.SH"]}


@pytest.mark.parametrize("value", [object(), {"a": 1}, lambda: 1, np.array([1, 2])])
def test_other_types_are_refused(value: object) -> None:
    with pytest.raises(codec.CodecError, match="cannot be passed"):
        codec.encode_values({"x": value})


def test_messages_are_length_prefixed_and_bounded() -> None:
    stream = io.BytesIO()
    entries, blobs = codec.encode_values({"w": WIDE})
    codec.write_message(stream, {"inputs": entries}, blobs)
    stream.seek(0)
    header, read_blobs = codec.read_message(stream)
    assert read_blobs == blobs and header["inputs"] == entries
    stream.seek(0)
    with pytest.raises(codec.CodecError, match="limit"):
        codec.read_message(stream, max_bytes=100)
    with pytest.raises(EOFError):
        codec.read_message(io.BytesIO(stream.getvalue()[:20]))


def test_a_forged_object_dtype_is_refused() -> None:
    entries, blobs = codec.encode_values({"w": WIDE})
    entries[0]["matrix"]["dtype"] = "O"
    with pytest.raises(codec.CodecError, match="refusing matrix"):
        codec.decode_values(entries, blobs)


def test_lists_of_numpy_scalars_and_dates_round_trip() -> None:
    values = {"xs": [np.float64(1.5), np.int64(2), np.bool_(True), pd.Timestamp("2021-01-04"), float("nan"), None]}
    out = codec.decode_values(*codec.encode_values(values))["xs"]
    assert out[:4] == [1.5, 2, True, pd.Timestamp("2021-01-04")] and np.isnan(out[4]) and out[5] is None
    assert [type(v) for v in out[:3]] == [float, int, bool]
    with pytest.raises(codec.CodecError, match="xs: type list cannot be passed"):
        codec.encode_values({"xs": [1, [2]]})


@pytest.mark.parametrize("frame", [
    pd.DataFrame({"v": [1.0, 2.0]}, index=pd.Index([pd.Timestamp("2021-01-04"), 0.25], dtype=object)),
    pd.DataFrame({"v": [b"x", "y"]}),
    pd.DataFrame([[1.0, 2.0]], columns=pd.Index([0.9, "q"], dtype=object)),
])
def test_mixed_object_values_are_refused_not_garbled(frame: pd.DataFrame) -> None:
    with pytest.raises(codec.CodecError, match="mixes value types"):
        codec.encode_values({"x": frame})
