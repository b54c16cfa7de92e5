"""Data loading into wide frames, and workspace save+load of a 300 x 1,250 frame set (SQLite, Postgres).

`python -m bench data_workspace`; `main(quick=True)`: the bundled sample, 30 x 100 frames, one round (tests call it)."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from bench.pg import PostgresUnavailable, scratch_database
from bench.timing import best_of
from tools.data.local import LocalProvider, SampleProvider
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade
from tools.storage.workspace import Workspace

SHARED = Path(__file__).resolve().parents[1].parent / "shared" / "data"
FIELDS = ("open", "high", "low", "close", "vol", "amount")
FULL, QUICK = (300, 1250), (30, 100)  # codes x dates of the workspace's frames


def _load(make: Callable[[], LocalProvider], fields: list[str], repeat: int) -> tuple[float, float, tuple[int, int]]:
    """Cold: a new provider (files read); warm: the same provider again (best of `repeat`)."""
    provider = make()
    codes = sorted(provider.known_codes())
    first, last = provider.date_range()
    cold = best_of(lambda: make().panel(fields, codes, first, last), 1)
    frames: dict[str, pd.DataFrame] = {}
    warm = best_of(lambda: frames.update(provider.panel(fields, codes, first, last)), repeat)
    return cold, warm, frames[fields[0]].shape


def bench_loading(quick: bool) -> None:
    cases: list[tuple[str, Callable[[], LocalProvider], list[str]]] = [
        ("bundled sample", SampleProvider, ["close", "vol"])
    ]
    if SHARED.is_dir() and not quick:
        cases += [
            ("cn_csi300_tushare", lambda: LocalProvider(SHARED / "cn_csi300_tushare"), ["close"]),
            ("cn_csi300_baostock_qfq", lambda: LocalProvider(SHARED / "cn_csi300_baostock_qfq"), ["close", "vol"]),
        ]
    print("load all codes x whole data set into wide frames (cold = file read included)")
    for label, make, fields in cases:
        cold, warm, shape = _load(make, fields, 1 if quick else 3)
        print(f"  {label:24s} {'+'.join(fields):10s} {shape[1]:4d} codes x {shape[0]:5d} dates"
              f"  cold {cold * 1000:7.1f} ms  warm {warm * 1000:7.1f} ms")


def _frame_set(codes: int, dates: int) -> dict[str, pd.DataFrame]:
    rng = np.random.default_rng(0)
    index = pd.DatetimeIndex(pd.bdate_range("2018-01-01", periods=dates), name="trade_date")
    columns = pd.Index([f"{600000 + i:06d}.SH" for i in range(codes)], name="ts_code")
    return {f"ohlcv/{f}": pd.DataFrame(rng.lognormal(size=(dates, codes)), index=index, columns=columns)
            for f in FIELDS}


def _roundtrip(url: str, frames: dict[str, pd.DataFrame], repeat: int) -> tuple[float, float]:
    engine = make_engine(url)
    upgrade(engine)
    ws = Workspace(engine, f"bench-{uuid.uuid4().hex[:8]}")
    save = best_of(lambda: [ws.put(name, frame) for name, frame in frames.items()], repeat)
    load = best_of(lambda: [ws.get(name) for name in frames], repeat)
    ws.clear()
    engine.dispose()
    return save, load


def bench_workspace(quick: bool) -> None:
    codes, dates = QUICK if quick else FULL
    frames = _frame_set(codes, dates)
    repeat = 1 if quick else 3
    print(f"workspace save+load of {len(frames)} frames of {dates:,} dates x {codes} codes")
    with tempfile.TemporaryDirectory() as tmp:
        save, load = _roundtrip(f"sqlite:///{tmp}/bench.db", frames, repeat)
    print(f"  sqlite    save {save * 1000:7.1f} ms  load {load * 1000:7.1f} ms")
    try:
        with scratch_database() as url:
            save, load = _roundtrip(url, frames, repeat)
    except PostgresUnavailable as exc:
        print(f"  postgres  skipped: {exc}")
        return
    print(f"  postgres  save {save * 1000:7.1f} ms  load {load * 1000:7.1f} ms")


def main(quick: bool = False) -> None:
    bench_loading(quick)
    bench_workspace(quick)
