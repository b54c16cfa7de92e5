"""The library gate in the factor workflow: each evaluation is a trial of its thread (the assistant's other code
attempts too), the card shows the DSR and the PBO with one line each and which gate test failed; `factor save NAME
REASON` puts a refused factor in the team library anyway, audited, the reason shown on the factor and its Home row."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import pytest
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.factor.present import factor_show, present_factor
from graphs.home_panels import factor_panels
from graphs.registry import command_for
from graphs.workflow import CommandCall, CommandError
from testkit.fakes.chat import ScriptedChatModel, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.audit.export import export_csv
from tools.audit.verify import Keys, verify
from tools.data.local import SampleProvider
from tools.research.library import TeamLibrary
from tools.research.trials import TrialStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

REASON = "a known anomaly in the literature; kept to watch its decay"


@pytest.fixture
def ctx(engine: Engine, sandbox: Sandbox) -> WorkflowContext:
    return WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           dsr_threshold=0.999999)  # a bar nothing on the sample reaches: the gate refuses


def test_a_refused_factor_is_saved_anyway_with_a_reason_shown_and_audited(db_url: str, ctx: WorkflowContext,
                                                                          engine: Engine, tmp_path: Path) -> None:
    name = f"rev4_{uuid.uuid4().hex[:6]}"  # a window no other test saves: PostgreSQL's library is shared
    thread = GraphThread(db_url, ctx)
    out = thread.say(f"factor reversal 20190301 20200601 window=4 name={name}")
    result = thread.decide(out, {"type": "approve"})["result"]
    honesty = result["honesty"]
    assert honesty["trials"] == 1 and honesty["pbo"] is None and not result["in_library"]
    assert not honesty["gate"]["passed"] and not honesty["gate"]["dsr"]["ok"]
    lines = present_factor(result).lines
    assert any(line.startswith("Trials behind this result: 1 in this research thread") for line in lines)
    assert any(line.startswith(f"Deflated Sharpe ratio {honesty['dsr']:.3f}: the probability") for line in lines)
    assert "Probability of backtest overfitting: not computed, it needs 8 trials with returns in this thread." in lines
    refusal = next(line for line in lines if line.startswith("Not in the team library: "))
    assert "below the threshold 1.00" in refusal and f"`factor save {name} REASON`" in refusal
    found = command_for(f"factor save {name} {REASON}")
    assert found is not None
    command, args = found
    with pytest.raises(CommandError, match=f"Only UALICE, who saved {name}, or an admin may put it in the team"):
        command.run(CommandCall(ctx, args, "UMALLORY", "console"))  # not its author, not an admin
    view = command.run(CommandCall(ctx, args, "UALICE", "console"))
    assert view.summary.endswith(f"saved to the team library anyway by UALICE: {REASON}")
    again = command.run(CommandCall(ctx, args, "UALICE", "console"))
    assert again.summary.endswith("is in the team library already.")
    shown = factor_show(engine, [name]).lines
    assert f"in the team library, saved anyway by UALICE: {REASON}" in shown
    (panel,) = factor_panels(ctx, "UALICE")
    row = next(r.text for r in panel.rows if r.text.startswith(f"{name} v1"))
    assert row.endswith(f"in the team library, saved anyway by UALICE: {REASON}")
    exported = io.StringIO()
    export_csv(engine, "global", None, exported)
    (audited,) = [line for line in exported.getvalue().splitlines() if "saved anyway" in line]
    assert REASON in audited and name in audited and "UALICE" in audited
    reports, strays = verify(engine, Keys({}))
    assert not strays and all(report.problem is None for report in reports)  # the chain holds with it


def test_a_factor_that_passes_the_gate_enters_the_library(db_url: str, engine: Engine, sandbox: Sandbox) -> None:
    ctx = WorkflowContext(provider=SampleProvider(), engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                          dsr_threshold=1e-9)  # any DSR passes: only the holdout's sign decides
    name = f"rev6_{uuid.uuid4().hex[:6]}"
    thread = GraphThread(db_url, ctx)
    result = thread.decide(thread.say(f"factor reversal 20190301 20200601 window=6 name={name}"),
                           {"type": "approve"})["result"]
    gate = result["honesty"]["gate"]
    assert gate["holdout"]["ok"] == result["in_library"]
    entry = TeamLibrary(engine).entry(result["factor_id"])
    assert (entry is not None and entry.how == "gate") == gate["passed"]


def test_the_assistants_other_code_attempts_count_as_trials(db_url: str, ctx: WorkflowContext,
                                                            engine: Engine) -> None:
    name = f"gap8_{uuid.uuid4().hex[:6]}"
    ctx.llm = ScriptedChatModel(script=[
        tool_call("FactorSpecAnswer", name=name, description="distance below the 8-day mean", fields=["close"],
                  lookback=8, frequency="daily", codes=[], start="20190301", end="20200601", question=None),
        tool_call("try_factor_body", body="return -(close / close.rolling(9).mean() - 1)"),
        tool_call("try_factor_body", body="return -(close / close.rolling(8).mean() - 1)"), answer("the distance"),
        tool_call("CodeVerdict", ok=True, diffs=[], reason="computes the distance below the 8-day mean"),
    ])
    ctx.light_llm = ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="factor")])
    thread = GraphThread(db_url, ctx)
    out = thread.say("How far below its 8-day mean a stock closes, from 20190301 to 20200601")
    result = thread.decide(out, {"type": "approve"})["result"]
    records = TrialStore(engine).of_thread(thread.thread)
    assert sorted(r.kind for r in records) == ["attempt", "factor"]  # the 9-day try counts, without a series
    assert result["honesty"]["trials"] == 2
    assert [r.observations for r in records if r.kind == "factor"][0] > 150
