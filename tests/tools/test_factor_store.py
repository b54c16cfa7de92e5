"""Factor library storage on SQLite and PostgreSQL: versions, idempotent saves, bulk values, duplicates."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from tools.factors.store import (
    DUPLICATE_SAMPLE_CODES,
    DUPLICATE_SAMPLE_DATES,
    FactorStore,
    duplicate_sample,
    long_values,
)


def panel(seed: int, dates: int = 60, codes: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame(rng.normal(size=(dates, codes)), index=pd.bdate_range("2020-01-02", periods=dates),
                         columns=[f"{600000 + i:06d}.SH" for i in range(codes)])
    frame.iloc[0, :5] = np.nan  # missing cells are not stored
    return frame


def save(store: FactorStore, name: str, values: pd.DataFrame, decision: str = "approve", key: str | None = None):
    metrics = pd.DataFrame({"ic_mean": [0.01, 0.02], "dates": [50.0, 40.0]}, index=pd.Index([1, 5], name="period"))
    return store.save(name=name, description="d", code="return close", spec={"windows": [5]}, author="U1",
                      reviewer="U2", decision=decision, run_key=key or uuid.uuid4().hex, values=values,
                      metrics=metrics)


def test_versions_values_metrics_round_trip(engine: Engine) -> None:
    store = FactorStore(engine)
    name = f"mom_{uuid.uuid4().hex[:6]}"
    values = panel(1)
    first, created = save(store, name, values)
    assert created and first.version == 1 and first.status == "active"
    second, _ = save(store, name, values * 2)
    assert second.version == 2  # re-running a name adds a version, never overwrites
    assert [v.version for v in store.versions(name)] == [1, 2]
    assert store.latest(name).id == second.id
    back = store.values(first.id)
    assert store.count_values(first.id) == int(np.isfinite(values.to_numpy()).sum())
    pd.testing.assert_frame_equal(back, values.reindex(index=back.index, columns=back.columns), check_names=False,
                                  check_freq=False)
    metrics = store.metrics(first.id)
    assert metrics.loc[5, "ic_mean"] == 0.02 and metrics.loc[1, "dates"] == 50
    assert name in {f.name for f in store.list()}


def test_same_run_key_is_saved_once(engine: Engine) -> None:
    store = FactorStore(engine)
    name, key = f"rev_{uuid.uuid4().hex[:6]}", uuid.uuid4().hex
    first, created = save(store, name, panel(2), key=key)
    again, created_again = save(store, name, panel(2), key=key)
    assert created and not created_again and again.id == first.id
    assert len(store.versions(name)) == 1


def test_rejected_versions_are_recorded_but_not_active(engine: Engine) -> None:
    store = FactorStore(engine)
    name = f"rej_{uuid.uuid4().hex[:6]}"
    info, _ = store.save(name=name, description="d", code="x", spec={}, author="U1", reviewer="U2",
                         decision="reject", run_key=uuid.uuid4().hex)
    assert info.status == "rejected" and store.latest(name) is None
    assert store.latest(name, status=None).id == info.id


def test_near_duplicates_found_above_threshold_only(engine: Engine) -> None:
    store = FactorStore(engine)
    base = panel(3)
    name = f"base_{uuid.uuid4().hex[:6]}"
    save(store, name, base)
    noise = np.random.default_rng(4).normal(scale=0.01, size=base.shape)
    duplicates = store.near_duplicates(base * 3 + 1 + noise)
    assert any(d.name == name and d.correlation > 0.99 for d in duplicates)
    assert all(d.name != name for d in store.near_duplicates(panel(5)))


def test_near_duplicates_compare_a_bounded_sample(engine: Engine) -> None:
    store = FactorStore(engine)
    history = panel(8, dates=300, codes=260)
    name = f"long_{uuid.uuid4().hex[:6]}"
    save(store, name, history)
    rng = np.random.default_rng(9)
    copy = history * 2 + 1 + rng.normal(scale=0.01, size=history.shape)
    found = [d for d in store.near_duplicates(copy) if d.name == name]
    assert len(found) == 1 and found[0].correlation > 0.99
    assert found[0].overlap == DUPLICATE_SAMPLE_DATES * DUPLICATE_SAMPLE_CODES < history.size
    related = history + rng.normal(scale=0.3, size=history.shape)  # correlation about 0.96
    assert all(d.name != name for d in store.near_duplicates(related))
    assert any(d.name == name and 0.9 < d.correlation < 0.99 for d in store.near_duplicates(related, threshold=0.9))
    assert all(d.name != name for d in store.near_duplicates(panel(10, dates=300, codes=260)))


def test_the_duplicate_sample_is_the_last_dates_with_values_and_spread_codes() -> None:
    frame = panel(11, dates=100, codes=450)
    frame.iloc[-5:] = np.nan  # trailing dates without values are skipped
    dates, codes = duplicate_sample(frame)
    assert dates == [d.strftime("%Y%m%d") for d in frame.index[-5 - DUPLICATE_SAMPLE_DATES:-5]]
    assert len(codes) == DUPLICATE_SAMPLE_CODES and codes == sorted(codes)
    assert codes[0] == frame.columns[0] and codes[-1] == frame.columns[-1]
    assert duplicate_sample(frame.iloc[:, ::-1]) == (dates, codes)


def test_codes_of_different_lengths_round_trip(engine: Engine) -> None:
    store = FactorStore(engine)
    values = panel(7, dates=40, codes=6)
    values.columns = ["600519.SH", "AAPL", "00700.HK", "000001.SZ", "T", "BRK.B"]
    values.iloc[3, 1] = np.inf  # not finite: not stored
    info, _ = save(store, f"mixed_{uuid.uuid4().hex[:6]}", values)
    back = store.values(info.id)
    assert store.count_values(info.id) == int(np.isfinite(values.to_numpy()).sum())
    expected = values.where(np.isfinite(values))
    pd.testing.assert_frame_equal(back, expected.reindex(index=back.index, columns=back.columns),
                                  check_names=False, check_freq=False)


def test_long_values_drops_missing_cells() -> None:
    frame = panel(6, dates=3, codes=4)
    rows = long_values(frame)
    assert len(rows) == 12 - 4 and rows["trade_date"].iloc[-1] == frame.index[-1].strftime("%Y%m%d")
