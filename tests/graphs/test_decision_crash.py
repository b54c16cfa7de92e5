"""A SIGKILL mid-debate, then a restart: the run finishes and completed analysts are not re-run (issue 14).

A child process (testkit/children/decision_crash.py) runs the decision desk on the sample data: the four analysts answer
from their scripts, the bull speaks, and the bear's model call never returns. Once the bear is asked, the child is
SIGKILLed. This process then resumes the thread from the checkpoint with a strict scripted model that has no answer
for any analyst nor for the bull: only the bear, the research manager, the three risk voices and the risk manager
(a Hold, so no order and no approval) may be asked, each exactly once. The same database (SQLite, PostgreSQL),
desk namespace and paper account serve both processes."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.analyze.graph import build_analyze_graph
from graphs.checkpointer import open_checkpointer
from testkit.child_process import kill_child_when
from testkit.desk import MARKET_REPORT, ROLES, account, desk_context, research_answer, risk_answer
from testkit.fakes.chat import ScriptedModels, answer
from tools.data.local import SampleProvider
from tools.desk.records import AnalystReport, AnalystSummary
from tools.sandbox import Sandbox

CHILD = "testkit.children.decision_crash"
ANALYSTS = ("market", "news", "sentiment", "fundamentals")
# what the child's analysts write (testkit.desk.desk_scripts)
REPORTS = {"market": MARKET_REPORT, "news": "No news could be read.", "sentiment": "No sentiment data.",
           "fundamentals": "Only turnover is available."}
DEADLINE = 120.0  # seconds for the child to reach the bear's turn (imports and four analysts included)


@pytest.fixture(scope="module")
def provider() -> SampleProvider:
    return SampleProvider()


def _research_count(url: str, config: dict[str, Any]) -> int | None:
    """The turns of the research debate saved in the subgraph's checkpoint (None: no research task yet)."""
    with open_checkpointer(url) as saver:
        state = build_analyze_graph(saver).get_state(config, subgraphs=True)
    for task in state.tasks:
        if task.name == "research" and task.state is not None and hasattr(task.state, "values"):
            return int(task.state.values.get("count", 0))
    return None


def test_a_sigkill_mid_debate_then_a_restart_finishes_without_rerunning_analysts(
        db_url: str, engine: Engine, sandbox: Sandbox, provider: SampleProvider, models: ScriptedModels,
        tmp_path: Path) -> None:
    namespace, name = f"crash-{uuid.uuid4().hex[:8]}", account()
    thread = f"t-crash-{uuid.uuid4().hex[:10]}"
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    marker = tmp_path / "bear-asked"
    # the bull's turn is in the debate's checkpoint before the kill (durability "async" may lag a moment)
    kill_child_when(CHILD, [db_url, namespace, thread, name, str(marker)], tmp_path,
                    [(marker.exists, "the bear's turn"),
                     (lambda: _research_count(db_url, config) == 1, "a saved bull turn")], DEADLINE)

    with open_checkpointer(db_url) as saver:
        before = build_analyze_graph(saver).get_state(config)
    assert before.next == ("research",), before.next  # the run stopped inside the research debate
    assert before.values["analyst_runs"].keys() == set(ANALYSTS)  # every analyst finished in the child
    with Session(engine) as session:
        reports = session.scalars(select(AnalystReport).where(AnalystReport.namespace == namespace)).all()
        summaries = session.scalars(select(AnalystSummary).where(AnalystSummary.namespace == namespace)).all()
    assert sorted(r.analyst for r in reports) == sorted(ANALYSTS)
    assert sorted(s.analyst for s in summaries) == sorted(ANALYSTS)  # the day's summaries: no more are due

    # the restart: no analyst, no bull and no light model may be asked; everyone else exactly once
    llm = models(scripts={ROLES["bear"]: [answer("bear turn after the restart")],
                          ROLES["research_judge"]: [research_answer()],
                          ROLES["risky"]: [answer("risky turn 1")], ROLES["safe"]: [answer("safe turn 1")],
                          ROLES["neutral"]: [answer("neutral turn 1")],
                          ROLES["risk_judge"]: [risk_answer("Hold", 0.0)]})
    light = models()
    ctx = desk_context(engine, sandbox, provider, llm, light, desk_namespace=namespace)
    with open_checkpointer(db_url) as saver:
        graph = build_analyze_graph(saver)
        out = graph.invoke(None, config, context=ctx)
        after = graph.get_state(config)

    assert "__interrupt__" not in out and after.next == ()
    result = out["result"]
    assert result["kind"] == "decision" and result["stopped"] is None
    assert result["risk_summary"]["rating"] == "Hold"
    assert result["execution_record"]["status"] == "no order"
    assert result["request"]["namespace"] == namespace and result["request"]["account"] == name
    analysts = result["analysts"]
    assert analysts.keys() == set(ANALYSTS)
    for analyst, text in REPORTS.items():
        assert analysts[analyst]["report"].startswith(text), (analyst, analysts[analyst]["report"])
        assert analysts[analyst]["tool_calls"] == 1
    assert {r.analyst: r.id for r in reports} == {a: run["report_id"] for a, run in analysts.items()}
    assert result["stages"]["research"]["turns"] == 2 and result["stages"]["risk"]["turns"] == 3
    assert not any(ROLES[a] in str(p[0].content) for p in llm.prompts for a in ANALYSTS)
    assert llm.prompts_for(ROLES["bull"]) == [] and light.prompts == []
    # the bear answered the bull's turn saved by the child: the debate resumed, it did not start over
    (bear,) = llm.prompts_for(ROLES["bear"])
    assert "bull turn 1" in str(bear[-1].content)
