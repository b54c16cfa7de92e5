from __future__ import annotations

import subprocess
import sys
import uuid

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine

from tools.storage.workspace import Workspace, WorkspaceError


def _frame(rows: int = 30, cols: int = 4, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    index = pd.DatetimeIndex(pd.bdate_range("2020-01-01", periods=rows), name="trade_date")
    columns = pd.Index([f"{600000 + i:06d}.SH" for i in range(cols)], name="ts_code")
    frame = pd.DataFrame(rng.normal(size=(rows, cols)), index=index, columns=columns)
    frame.iloc[3, 1] = np.nan
    return frame


def _thread() -> str:
    return f"t-{uuid.uuid4().hex[:12]}"


def test_put_get_list_roundtrip(engine: Engine) -> None:
    ws = Workspace(engine, _thread())
    close = _frame()
    info = ws.put("ohlcv/close", close)
    assert (info.rows, info.cols, info.first_date, info.last_date) == (30, 4, "20200101", "20200211")
    ws.put("signal/ma_cross", _frame(seed=1).clip(-1, 1).round())
    pd.testing.assert_frame_equal(ws.get("ohlcv/close"), close, check_freq=False)
    assert ws.names() == ["ohlcv/close", "signal/ma_cross"]
    assert [i.name for i in ws.list("signal")] == ["signal/ma_cross"]
    assert "ohlcv/close" in ws and "factor/x" not in ws


def test_replacing_bumps_the_version(engine: Engine) -> None:
    ws = Workspace(engine, _thread())
    ws.put("factor/mom", _frame(seed=1))
    info = ws.put("factor/mom", _frame(rows=10, seed=2))
    assert info.version == 2 and info.rows == 10
    assert ws.info("factor/mom") == info


def test_reads_are_copies(engine: Engine) -> None:
    ws = Workspace(engine, _thread())
    original = _frame()
    ws.put("ohlcv/close", original)
    original.iloc[0, 0] = 999.0
    first = ws.get("ohlcv/close")
    assert first.iloc[0, 0] != 999.0
    first.iloc[0, 0] = -1.0
    assert ws.get("ohlcv/close").iloc[0, 0] != -1.0


def test_threads_are_isolated(engine: Engine) -> None:
    a, b = Workspace(engine, _thread()), Workspace(engine, _thread())
    a.put("ohlcv/close", _frame(seed=1))
    b.put("ohlcv/close", _frame(seed=2))
    assert not a.get("ohlcv/close").equals(b.get("ohlcv/close"))
    b.clear()
    assert b.names() == [] and a.names() == ["ohlcv/close"]


def test_missing_and_bad_names(engine: Engine) -> None:
    ws = Workspace(engine, _thread())
    with pytest.raises(WorkspaceError, match="no frame 'ohlcv/close'"):
        ws.get("ohlcv/close")
    for bad in ("close", "prices/close", "ohlcv/../x", "ohlcv/a b"):
        with pytest.raises(WorkspaceError, match="bad workspace name"):
            ws.put(bad, _frame())
    with pytest.raises(WorkspaceError, match="only DataFrames"):
        ws.put("ohlcv/close", _frame()["600000.SH"])  # type: ignore[arg-type]


def test_another_process_sees_the_same_frames(engine: Engine, db_url: str) -> None:
    thread = _thread()
    Workspace(engine, thread).put("indicators/pe", _frame(seed=3))
    script = (
        "import sys\n"
        "from tools.storage.db import make_engine\n"
        "from tools.storage.workspace import Workspace\n"
        "ws = Workspace(make_engine(sys.argv[1]), sys.argv[2])\n"
        "frame = ws.get('indicators/pe')\n"
        "ws.put('signal/from_child', frame * 2)\n"
        "print(round(float(frame.sum().sum()), 9))\n"
    )
    out = subprocess.run([sys.executable, "-c", script, db_url, thread], capture_output=True, text=True,
                         check=True)
    expected = _frame(seed=3)
    assert float(out.stdout.strip()) == round(float(expected.sum().sum()), 9)
    pd.testing.assert_frame_equal(Workspace(engine, thread).get("signal/from_child"), expected * 2,
                                  check_freq=False)
