"""A signal backtest's holdout: the period's last whole sessions backtested apart from the in-sample part, each
beside its buy-and-hold on the card; a period too short for one says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from graphs.context import WorkflowContext
from graphs.signal.graph import build_signal_graph
from graphs.signal.present import present_signal
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.research.backtest import run_backtest
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore
from tools.storage.db import make_engine
from tools.storage.migrate import upgrade


@pytest.fixture
def thread(tmp_path: Path, sandbox: Sandbox) -> GraphThread:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    engine = make_engine(url)
    upgrade(engine)
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine))
    return GraphThread(url, ctx, build=build_signal_graph, requester=None)


def test_the_card_shows_in_sample_and_holdout_each_beside_its_benchmark(thread: GraphThread) -> None:
    result = thread.say("signal ma_cross 600519.SH,000001.SZ 20190102 20200601 fast=5 slow=20")["result"]
    sessions = SampleProvider().calendar("20190102", "20200601")
    held = -(-len(sessions) // 5)  # ceil(0.2 × n)
    split = result["split"]
    assert split["split"]["holdout_start"] == sessions[-held] and split["split"]["in_sample_end"] == sessions[-held - 1]
    signal = thread.workspace.get(next(n for n in thread.workspace.names() if n.startswith("signal/")))
    price = thread.workspace.get("ohlcv/open")
    alone = run_backtest(signal.loc[sessions[-held]:], price.loc[sessions[-held]:]).metrics.as_dict()
    assert split["holdout"]["total_return"] == pytest.approx(alone["total_return"])  # from flat, on its own
    facts = dict(present_signal(result).facts)
    assert f"{split['holdout']['total_return']:.2%} (buy-and-hold " \
           f"{split['holdout']['benchmark_total_return']:.2%})" in facts[f"Holdout {sessions[-held]}–{sessions[-1]}"]
    assert f"In-sample {sessions[0]}–{sessions[-held - 1]}" in facts
    assert result["honesty"]["trials"] == 1 and facts["Trials"].startswith("1 backtest(s) in this thread")
    assert facts["Deflated Sharpe ratio"].startswith(f"{result['honesty']['dsr']:.3f}: the probability")
    assert facts["Probability of backtest overfitting"] == "not computed: it needs 8 backtests in this thread"
    variant = thread.say("signal ma_cross 600519.SH,000001.SZ 20190102 20200601 fast=3 slow=20")["result"]
    again = thread.say("signal ma_cross 600519.SH,000001.SZ 20190102 20200601 fast=3 slow=20")["result"]
    assert variant["honesty"]["trials"] == 2 and again["honesty"]["trials"] == 2  # the same variant is one trial


def test_a_short_period_has_no_holdout_and_says_so(thread: GraphThread) -> None:
    result = thread.say("signal ma_cross 600519.SH 20190102 20190830 fast=5 slow=20")["result"]
    assert result["split"]["holdout"] is None
    assert dict(present_signal(result).facts)["Holdout"].startswith("none: 33 sessions would be held out, fewer "
                                                                    "than 60")
