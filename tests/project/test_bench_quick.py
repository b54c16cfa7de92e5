"""Each bench's quick mode (a small panel, one round) runs end to end, so a bench cannot silently break.

Nothing here asserts a time: the benches print their figures beside their references; these tests hold what a run
must produce (every row, figures that are numbers, the project's values equal to the reference's)."""

from __future__ import annotations

import math
import subprocess
import sys
import types
from pathlib import Path

import pytest

from testkit.paths import REPO


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


def _finite_figures(line: str) -> list[float]:
    """The numbers of one printed row (thousands separators and ratios' trailing x dropped); each must be finite."""
    words = [word.rstrip("x").replace(",", "") for word in line.split()]
    figures = [float(word) for word in words if word.replace(".", "", 1).isdigit()]
    assert figures and all(math.isfinite(f) for f in figures), line
    return figures


def test_slack_ack_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import slack_ack, slack_load

    bare, quant, answered = slack_ack.run(quick=True)
    assert len(bare.latencies) == len(quant.latencies) == slack_load.QUICK_EVENTS
    assert bare.bad == quant.bad == 0 and answered == slack_load.QUICK_EVENTS
    out = capsys.readouterr().out
    assert (f"goal, judged on PostgreSQL (slack_scale): p99 <= {slack_load.GOAL_RATIO:.0f}x the bare app's" in out
            and "p99/bare" in out)
    rows = [line for line in out.splitlines() if line.startswith(("  bare Bolt app", "  QuantDesk"))]
    assert len(rows) == 2 and all(_finite_figures(line) for line in rows)
    assert f"{answered}/{answered}" in rows[1] and "not judged (quick)" in rows[1]


def test_feishu_ack_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import feishu_ack, slack_load

    load, answered = feishu_ack.run(quick=True)
    assert len(load.latencies) == slack_load.QUICK_EVENTS and load.bad == 0 and answered == slack_load.QUICK_EVENTS
    out = capsys.readouterr().out
    (row,) = [line for line in out.splitlines() if line.startswith("  QuantDesk")]
    assert len(_finite_figures(row)) == 5 and row.endswith("not judged (quick)")


def test_slack_scale_quick(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import slack_load, slack_scale

    rows = slack_scale.run(quick=True)  # pg_url: PostgreSQL is up (under CI=true the test fails when it is not)
    assert [row.name for row in rows] == ["bare Bolt app", "serve, SQLite", "serve, PostgreSQL"]
    for row in rows:
        assert len(row.load.latencies) == slack_load.QUICK_EVENTS and row.load.bad == 0
        assert row.answered in (None, slack_load.QUICK_EVENTS), f"{row.name}: a thread got no answer"
    out = capsys.readouterr().out
    assert f"goal on PostgreSQL: p99 <= {slack_load.GOAL_RATIO:.0f}x the bare app's" in out and "p99/bare" in out
    printed = [line for line in out.splitlines() if line.startswith(tuple(f"  {row.name}" for row in rows))]
    assert len(printed) == 3 and all(len(_finite_figures(line)) == 5 for line in printed)
    assert printed[2].endswith("not judged (quick)")


def _rows(out: str, *starts: str) -> list[str]:
    """The printed lines that begin with each of `starts` (after their indent), in that order; one each."""
    lines = [line.strip() for line in out.splitlines()]
    found = [next((line for line in lines if line.startswith(start)), "") for start in starts]
    assert all(found), f"missing rows of {starts} in:\n{out}"
    return found


def test_data_workspace_quick(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import data_workspace

    data_workspace.main(quick=True)  # pg_url: PostgreSQL is up (under CI=true the test fails when it is not)
    rows = _rows(capsys.readouterr().out, "bundled sample", "sqlite", "postgres")
    assert all(len(_finite_figures(row)) >= 2 for row in rows)
    assert "260 codes x   400 dates" in rows[0]


def test_sandbox_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import sandbox

    sandbox.main(quick=True)
    out = capsys.readouterr().out
    rows = _rows(out, *sandbox.CASES)
    assert all(len(_finite_figures(row)) == 5 and "not judged (quick)" in row for row in rows)
    assert f"goal: overhead < {sandbox.GOAL_OVERHEAD_MS:.0f} ms" in out


def test_signal_workflow_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import signal_workflow

    signal_workflow.main(quick=True)
    out = capsys.readouterr().out
    assert _rows(out, "bundled sample: MA cross on 260 codes")
    stages = _rows(out, "data_fetch", "signal_generate", "validate", "report")
    assert all(len(_finite_figures(row)) == 1 for row in stages)


def test_queue_quick(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import burst, queue

    queue.main(quick=True)  # pg_url: PostgreSQL is up (under CI=true the test fails when it is not)
    out = capsys.readouterr().out
    rows = _rows(out, "submit_text: record, then enqueue", "submit to start, idle thread",
                 "start to next start, one busy thread", "trivial job function called directly",
                 "1 worker process(es)", "median", "the busy thread's runs still queued")
    assert all(_finite_figures(row) for row in rows)
    assert f"goal p95 ≤ {burst.GOAL_P95_SECONDS * 1000:.0f} ms: not judged (quick)" in rows[5]
    assert f"of {1 + burst.QUICK_BURST}" in rows[6]


def test_broker_quick(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    from bench import broker

    broker.main(quick=True)  # raises when the ledger does not add up to the cash; pg_url: PostgreSQL is up
    rows = _rows(capsys.readouterr().out, "SQLite ", "PostgreSQL ")
    for row in rows:
        assert f"{broker.QUICK_ORDERS} orders in" in row and row.endswith("ledger adds up to the cash")
        assert len(_finite_figures(row.replace(":", " ").replace("(", " "))) >= 5


def test_vnpy_orders_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import vnpy_orders

    vnpy_orders.main(quick=True)  # raises when the gateway received another number of orders than were sent
    rows = _rows(capsys.readouterr().out, "approve", "gateway fill")
    assert len(rows) == 2 and all(f"over {vnpy_orders.QUICK_ORDERS} orders" in row for row in rows)


def test_console_start_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import console_start

    result = console_start.run(quick=True)  # raises when the prompt or help's answer never shows
    assert len(result.starts) == len(result.import_s) == 1 and not result.warm
    assert 0 < result.prompt_s < result.help_s and result.reference_s > 0 and result.piped_s > 0
    out = capsys.readouterr().out
    rows = _rows(out, "start → prompt", "start → help answered", "start → help, piped (before)")
    assert all(len(_finite_figures(row)) >= 3 for row in rows)
    assert f"goal: prompt and help each <= {console_start.GOAL_S:.1f} s" in out
    assert "not judged (quick)" in rows[0] and f"<= {console_start.GOAL_S:.1f} s: not judged (quick)" in rows[1]


def test_home_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import home

    rounds = home.run(quick=True)  # raises when an approval from the Home never shows there
    assert len(rounds) == home.QUICK_ROUNDS
    assert all(0 < r.fill_to_home < r.click_to_home for r in rounds)
    out = capsys.readouterr().out
    rows = _rows(out, "fill → Home", "click → Home")
    assert all(len(_finite_figures(row)) >= 2 for row in rows)
    assert f"goal: fill → Home <= {home.GOAL_S:.0f} s" in out and "not judged (quick)" in rows[0]


def test_every_bench_has_a_quick_mode() -> None:
    import importlib
    import inspect

    from bench.__main__ import BENCHES

    for name in BENCHES:
        main = importlib.import_module(f"bench.{name}").main
        assert "quick" in inspect.signature(main).parameters, f"bench.{name}.main has no quick mode"


def test_several_benches_run_each_in_a_process_of_its_own(shared_data: Path) -> None:
    """`python -m bench` with several names (make bench: all of them) runs each to the end in its own process."""
    done = subprocess.run([sys.executable, "-m", "bench", "--quick", "--check", "indicators", "console_start"],
                          capture_output=True, text=True, cwd=REPO, timeout=600)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.index("== indicators") < out.index("MACD(12,26,9)") < out.index("== console_start")
    assert "start → help answered" in out.split("== console_start", 1)[1]
    assert all(f"--check: {name}'s goals not judged (quick)" in out for name in ("indicators", "console_start"))
    unknown = subprocess.run([sys.executable, "-m", "bench", "indicators", "nonsense"], capture_output=True,
                             text=True, cwd=REPO, timeout=60)
    assert unknown.returncode == 2 and "unknown benchmark 'nonsense'" in unknown.stderr and not unknown.stdout


def test_conversation_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import conversation

    result = conversation.run(quick=True)
    out = capsys.readouterr().out
    assert result.messages >= 60 and "not judged (quick)" in out
    assert 0 < result.median_ms <= result.p99_ms and result.reference_median_ms > 0


def test_decision_record_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import decision_record

    (sqlite,) = decision_record.run(quick=True)
    out = capsys.readouterr().out
    assert sqlite.database == "SQLite" and "not judged" in out
    assert sqlite.accept_ms > 0 and sqlite.check_ms > 0 and sqlite.reference_ms > 0


def test_audit_verify_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import audit_verify

    (sqlite,) = audit_verify.run(quick=True)
    out = capsys.readouterr().out
    assert sqlite.database == "SQLite" and sqlite.entries == audit_verify.QUICK and "not judged" in out
    assert sqlite.seconds > 0


def _stub_bench(monkeypatch: pytest.MonkeyPatch, name: str, met: bool) -> None:
    """A bench `name` in the registry whose one figure meets its goal or misses it (the gate is what is tested)."""
    from bench import __main__ as runner
    from bench import goals

    def main(quick: bool = False) -> None:
        print(f"  figure 1.0  goal <= 0.5: {goals.judge(f'{name}: figure <= 0.5', met, quick)}")

    module = types.ModuleType(f"bench.{name}")
    module.main = main  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(runner, "BENCHES", (*runner.BENCHES, name))
    monkeypatch.setattr(goals, "missed", [])


def test_check_fails_a_bench_whose_figure_misses_its_goal(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    _stub_bench(monkeypatch, "missing", met=False)
    assert main(["missing"]) == 0  # without --check the figures are only shown
    assert main(["missing", "--check"]) == 1
    captured = capsys.readouterr()
    assert captured.out.count("goal <= 0.5: MISSED") == 2
    assert "--check: missing missed its goal: missing: figure <= 0.5" in captured.err


def test_check_passes_a_bench_that_meets_its_goals_and_judges_nothing_quick(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from bench.__main__ import main

    _stub_bench(monkeypatch, "meeting", met=True)
    assert main(["meeting", "--check"]) == 0
    _stub_bench(monkeypatch, "missing", met=False)
    assert main(["missing", "--check", "--quick"]) == 0
    out = capsys.readouterr().out
    assert "goal <= 0.5: met" in out and "goal <= 0.5: not judged (quick)" in out
    assert "--check: missing's goals not judged (quick)" in out


def test_slack_idle_quick(capsys: pytest.CaptureFixture[str]) -> None:
    """The 87 s stall's regression test: every mention is acked while 1,500 idle connections are held open."""
    from bench import slack_idle, slack_load

    result = slack_idle.run(quick=True)  # the listener raises this process's open-file limit for both ends
    assert result.opened == result.held == slack_idle.QUICK_IDLE
    for load in (result.reference, result.idle):
        assert len(load.latencies) == slack_load.QUICK_EVENTS and load.bad == 0
    rows = _rows(capsys.readouterr().out, "no idle connections", "1,500 idle connections")
    assert all(len(_finite_figures(row)) >= 4 for row in rows)  # p50, p99, non-2xx, ratio
    assert "1500/1500" in rows[1] and rows[1].endswith("not judged (quick)")


def test_run_record_quick(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import run_record

    desk, signal = run_record.run(quick=True)
    for figures in (desk, signal):
        assert figures.reproduced and figures.manifest_kb > 0 and figures.rows_kb > 0
        assert figures.run_s > 0 and figures.rerun_s > 0
    assert desk.calls_kb > 0 and signal.calls_kb == 0  # the signal's structured path asks no model
    assert "re-run from the record" in capsys.readouterr().out
