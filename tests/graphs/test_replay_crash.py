"""A SIGKILL in the middle of a replay's second date, then a restart: the first date is not decided again (issue 14).

A child process (testkit/children/replay_crash.py) replays the desk (market analyst only) over 20200803, 20200810 and
20200817 of the sample data: the first date is a Buy that fills in the replay account; on the second the bear's
model call never returns. Once the bear is asked, and the first date's answer is in the checkpoint, the child is
SIGKILLed. This process then resumes the thread from the same database with a strict scripted model that has answers
for the second and third dates only (a Sell, then a Hold), so asking any agent about the first date again fails the
test. The Sell fills only if the 100 shares the first date bought are in the ledger the resumed replay goes on from,
and the equity curve is the one worked out by hand below: the first date's trade is neither lost nor doubled."""

from __future__ import annotations

import uuid
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.analyze.graph import build_analyze_graph
from graphs.checkpointer import open_checkpointer
from testkit.child_process import kill_child_when
from testkit.children.replay_crash import first_date
from testkit.desk import ROLES, desk_context
from testkit.fakes.chat import ScriptedModels, answer
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.desk.records import AnalystSummary
from tools.sandbox import Sandbox

CHILD = "testkit.children.replay_crash"
CODE = "600519.SH"
DATES = ["20200803", "20200810", "20200817"]
RETURN = "__return__"  # the channel of a task's answer among a checkpoint's pending writes
DEADLINE = 120.0  # seconds for the child to reach the bear's second turn (imports and a whole date included)
# buy 100 at 1,668.00: value 166,800.00, commission 0.025% = 41.70, transfer fee 0.002% = 3.34
# → cash 1,000,000 − 166,845.04 = 833,154.96; equity at the close 833,154.96 + 166,800.00 = 999,954.96
# sell 100 at 1,633.99: value 163,399.00, commission 40.85, stamp duty 0.1% 163.40, transfer fee 3.27
# → cash 833,154.96 + 163,399.00 − 207.52 = 996,346.44, all cash from then on
EQUITY = [("20200803", "999954.96"), ("20200810", "996346.44"), ("20200817", "996346.44")]


def _saved_dates(url: str, config: dict[str, Any]) -> list[dict[str, Any]]:
    """The answers of the replay's dates saved with the thread's latest checkpoint, in date order."""
    with open_checkpointer(url) as saver:
        saved = saver.get_tuple(config)
    answers = [value for _, channel, value in (saved.pending_writes or []) if channel == RETURN] if saved else []
    return sorted(answers, key=lambda a: a["step"]["date"])


def _summarized(engine: Engine, day: str) -> bool:
    """Whether the market analyst's post-close memory summary as of `day` is stored."""
    with Session(engine) as db:
        return db.scalar(select(AnalystSummary.as_of_date).where(
            AnalystSummary.analyst == "market", AnalystSummary.kind == "post_close",
            AnalystSummary.as_of_date == day)) is not None


def test_a_sigkill_mid_replay_then_a_restart_decides_only_the_dates_left(
        db_url: str, engine: Engine, sandbox: Sandbox, models: ScriptedModels, tmp_path: Path) -> None:
    thread = f"slack-{uuid.uuid4().hex[:24]}"  # as long as the bot's thread ids (bot.stores.threads.thread_id_for)
    config: dict[str, Any] = {"configurable": {"thread_id": thread}}
    marker = tmp_path / "bear-asked-again"
    # the first date's answer is written in the background as it comes back: kill once it is saved
    # and once the second date's memory summary, written beside the debate and off its critical path, is stored:
    # the restart's light model answers only for the third date
    kill_child_when(CHILD, [db_url, thread, str(marker)], tmp_path,
                    [(marker.exists, "the bear's turn on the second date"),
                     (lambda: len(_saved_dates(db_url, config)) == 1, "a saved first date"),
                     (lambda: _summarized(engine, DATES[1]), "the second date's memory summary")], DEADLINE)

    with open_checkpointer(db_url) as saver:
        before = build_analyze_graph(saver).get_state(config)
    assert before.next == ("replay",), before.next  # the run stopped inside the replay
    (first,) = _saved_dates(db_url, config)
    assert first["step"]["date"] == DATES[0] and first["step"]["rating"] == "Buy"
    assert first["step"]["equity"] == EQUITY[0][1] and first["stopped"] is None

    # the restart: answers for the second date (a Sell) and the third (a Hold) only
    second, third = first_date("Sell", 0.0), first_date("Hold", 0.0)
    llm = models(scripts={role: second[role] + third[role] for role in second})
    # the market analyst's post-close summary of the third date: the child saved the second date's before the kill
    light = models(script=[answer("summary")])
    ctx = desk_context(engine, sandbox, SampleProvider(), llm, light)
    with open_checkpointer(db_url) as saver:
        graph = build_analyze_graph(saver)
        out = graph.invoke(None, config, context=ctx, durability="async")
        after = graph.get_state(config)

    assert "__interrupt__" not in out and after.next == ()
    result = out["result"]
    assert result["kind"] == "replay" and result["stopped"] is None
    assert [s["date"] for s in result["steps"]] == DATES
    assert result["steps"][0] == first["step"]  # what the child decided, taken back, not decided again
    assert [s["rating"] for s in result["steps"]] == ["Buy", "Sell", "Hold"]
    assert "SELL 100 at 1633.99" in result["steps"][1]["order"], result["steps"][1]["order"]
    assert [(d, str(Decimal(e))) for d, e in result["equity"]] == EQUITY
    assert result["fills"] == 2
    assert result["tokens"] == sum(s["tokens"] for s in result["steps"])
    # one decision per date in the replay's log: the second date was not recorded before the kill
    assert sorted(d.trade_date for d in list_decisions(engine, result["namespace"], CODE, limit=10)) == DATES
    assert len(llm.prompts_for(ROLES["bear"])) == 2
