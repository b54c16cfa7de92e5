"""A stop asked of a running job (`cancel`, the Stop button) through the runner the bot uses (issue 12, 14): the
runner honours it where a node of a workflow's graph finishes, not inside a node. The desk's replay decides each
date in a task inside one node and checks for a stop itself, so the user gets the partial replay report (the dates
done, their P&L, where it stopped), not the runner's generic "Stopped"."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from bot.jobs.base import stop_scope
from bot.runner import STOPPED, Runner
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from testkit.desk import ROLES, research_answer, risk_answer
from testkit.fakes.chat import ScriptedModels, answer, tool_call
from tools.settings import Settings

REPLAY = "analyze 600519.SH 20200728..20200730 every=1d analysts=market"


def test_a_stop_during_a_replay_ends_it_after_the_date_in_progress_with_its_partial_report(
        tmp_path: Path, models: ScriptedModels) -> None:
    scripts = {ROLES["market"]: [tool_call("get_indicators"), answer("Trend report.")],
               ROLES["research_judge"]: [research_answer("Buy", 0.2)], ROLES["risk_judge"]: [risk_answer("Buy", 0.2)]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[ROLES[role]] = [answer(f"{role} speaks")]  # one date's answers: a second date would fail the test
    url = f"sqlite:///{tmp_path / 'q.db'}"
    app = build_context(Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data")))
    llm = models(scripts=scripts)
    with open_checkpointer(url) as saver:
        runner = Runner(app, saver)
        runner.context = dataclasses.replace(runner.context, llm=llm, light_llm=models(script=[answer("summary")]))
        # the stop is asked once the first date's risk judge has answered: the replay node is still running, and
        # the date's remaining nodes (trader, record) finish inside its task before the replay checks
        with stop_scope(lambda: "stop asked" if llm.prompts_for(ROLES["risk_judge"]) else None):
            outcome = runner.start("replay-stop", REPLAY)
    assert outcome.status == "done" and outcome.text != STOPPED
    result = outcome.result
    assert result is not None and result["kind"] == "replay"
    assert [s["date"] for s in result["steps"]] == ["20200728"] and result["fills"] == 1
    assert result["stopped"] == ("stopped at your request after date 1 of 3 (20200728); 20200729 and the dates "
                                 "after it were not decided")


def test_a_stop_between_nodes_ends_a_run_there(tmp_path: Path) -> None:
    """Any other workflow: the first node boundary after the stop ends the run with the runner's reply."""
    url = f"sqlite:///{tmp_path / 'q.db'}"
    app = build_context(Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data")))
    with open_checkpointer(url) as saver, stop_scope(lambda: "stop asked"):
        outcome = Runner(app, saver).start("signal-stop", "signal ma_cross 600519.SH 20190101 20200601")
    assert outcome.status == "done" and outcome.text == STOPPED and outcome.result is None
