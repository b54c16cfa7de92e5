"""Each bench's quick mode (a small panel, one round) runs end to end, so a bench cannot silently break.

Nothing here asserts a time: the benches print their figures beside their references; these tests hold what a run
must produce (every row, figures that are numbers, the project's values equal to the reference's)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest


def test_factor_eval_quick(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import factor_eval

    rows = factor_eval.run(quick=True)
    assert [row.label.split(" ")[0] for row in rows] == ["CSI", "synthetic"]
    for row in rows:
        assert row.ours_s > 0 and row.alphalens_s > 0 and math.isfinite(row.ratio)
        assert row.rank_ic_diff <= 1e-9 and row.quantile_mean_diff <= 1e-9
    out = capsys.readouterr().out
    assert f"goal {factor_eval.GOAL:.0f}x" in out and "x faster" in out


def test_indicators_quick(shared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import indicators

    rows = indicators.run(quick=True)
    assert [row.name for row in rows] == ["SMA(5)", "SMA(20)", "EMA(20)", "RSI(14)", "MACD(12,26,9)", "BBANDS(20,2)",
                                          "ATR(14)"]
    for row in rows:
        assert row.ours_ms > 0 and row.talib_ms > 0 and math.isfinite(row.ratio)
        assert row.max_diff == 0.0, f"{row.name}: not TA-Lib's numbers"
    out = capsys.readouterr().out
    assert "all together" in out and f"{indicators.GOAL:6.1f}" in out


def test_decision_bench_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import decision

    stage, paths = decision.run(quick=True)  # raises when the desk's token count is not the two models' together
    assert stage.latency == decision.QUICK_LATENCY and stage.parallel_s > 0 and stage.sequential_s > 0
    (path,) = paths
    # depth 1: four analysts' two calls and memory summary, bull and bear, three risk voices and both judges
    assert (path.depth, path.calls) == (1, 4 * 3 + 2 + 3 + 2)
    assert path.critical_s == 9 * decision.QUICK_LATENCY  # two analyst calls, then 7 debate calls one by one
    assert path.tokens == 4 * (2 * 1_800 + 950) + 5 * 2_750 + 2 * 3_400  # the usage the scripted models report
    out = capsys.readouterr().out
    assert "analyst stage, fresh day" in out and "critical path s" in out and "goals " in out
