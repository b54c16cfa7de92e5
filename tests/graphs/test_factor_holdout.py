"""The holdout of a factor's period: whole sessions, never seen by the model that writes and fixes the code (its
prompts, its dry runs, its judge), evaluated once after the approval, shown beside the in-sample figures and
stored with the factor; a period too short for one runs without, and says so."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import BaseMessage
from sqlalchemy import Engine

from graphs.context import WorkflowContext
from graphs.factor.present import present_factor
from testkit.fakes.chat import ScriptedChatModel, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.factors.store import FactorStore
from tools.research.holdout import hide_held_out_dates, split_sessions
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

# the body under test tells the model, through its error, the last date of the data it was given
PEEK_BODY = "raise ValueError('last date seen ' + close.index[-1].strftime('%Y%m%d'))"
GOOD_BODY = "return -(close / close.shift(7) - 1)"


def test_the_last_whole_sessions_are_held_out() -> None:
    sessions = [f"2020{m:02d}{d:02d}" for m in range(1, 13) for d in range(1, 29)]  # 336 sessions
    split = split_sessions(sessions, 0.2)
    assert split.holdout_sessions == 68 and split.in_sample_sessions == 268  # ceil(0.2 × 336)
    assert split.in_sample_end == sessions[267] and split.holdout_start == sessions[268] and split.held_out
    short = split_sessions(sessions[:200], 0.2)  # 40 sessions would be held out: fewer than 60, none is
    assert not short.held_out and short.in_sample_end == sessions[199] and short.holdout_sessions == 40
    assert not split_sessions(sessions, 0.0).held_out


def test_dates_after_the_in_sample_end_are_hidden_in_any_spelling() -> None:
    split = split_sessions([f"2020{m:02d}{d:02d}" for m in range(1, 13) for d in range(1, 29)], 0.2)
    text = "reversal from 20200105 to 20201215, or 2020-11-02 … 2020年12月3日; keep 2020.02.01"
    hidden = hide_held_out_dates(text, split)
    assert hidden == (f"reversal from 20200105 to {split.in_sample_end}, or {split.in_sample_end} … "
                      f"{split.in_sample_end}; keep 2020.02.01")


@pytest.fixture
def make_thread(own_url: str, own_engine: Engine, sandbox: Sandbox, tmp_path: Path):  # noqa: ANN201
    def make(llm: ScriptedChatModel | None = None, light: ScriptedChatModel | None = None) -> GraphThread:
        ctx = WorkflowContext(provider=SampleProvider(), engine=own_engine, sandbox=sandbox,
                              artifacts=ArtifactStore(own_engine), llm=llm, light_llm=light)
        return GraphThread(own_url, ctx)  # a database of its own: no other test's factor is a near duplicate
    return make


def _text(messages: list[BaseMessage]) -> str:
    return "\n".join(str(m.content) + str(getattr(m, "tool_calls", "")) for m in messages)


def test_the_model_never_sees_a_held_out_date(make_thread, own_engine: Engine) -> None:
    name = f"rev7_{uuid.uuid4().hex[:6]}"
    held_out = SampleProvider().calendar("20190301", "20200601")[-61:]  # ceil(0.2 × 305 sessions)
    llm = ScriptedChatModel(script=[
        tool_call("FactorSpecAnswer", name=name, description="minus the 7-day return", fields=["close"], lookback=7,
                  frequency="daily", codes=[], start="20190301", end="20200601", question=None),
        tool_call("try_factor_body", body=PEEK_BODY), answer("looked at the data"),  # attempt 1 fails
        tool_call("try_factor_body", body=GOOD_BODY), answer("minus the 7-day return"),  # ErrorFix
        tool_call("CodeVerdict", ok=True, diffs=[], reason="computes minus the 7-day return"),
    ])
    thread = make_thread(llm, ScriptedChatModel(script=[tool_call("RouteAnswer", workflow="factor")]))
    out = thread.say("A 7-day reversal factor from 20190301 to 20200601 (that is 2020-06-01)")
    (pending,) = out["__interrupt__"]
    assert pending.value["type"] == "code_review"
    in_sample_end = SampleProvider().calendar("20190301", "20200601")[-62]
    tuning = llm.prompts[1:]  # everything after reading the spec: the coder, its tool results, ErrorFix, the judge
    assert len(tuning) == 5 and not llm.script
    seen = "\n".join(_text(p) for p in tuning)
    assert f"last date seen {in_sample_end}" in seen  # the dry runs stop at the in-sample end
    for day in held_out:
        assert day not in seen and f"{day[:4]}-{day[4:6]}-{day[6:]}" not in seen, day
    done = thread.decide(out, {"type": "approve"})
    result = done["result"]
    holdout = result["holdout"]
    assert holdout["split"]["holdout_start"] == held_out[0] and holdout["split"]["end"] == held_out[-1]
    assert set(holdout["metrics"]) == {"1", "5", "20"} and holdout["metrics"]["1"]["rank_ic_mean"] is not None
    assert 0 < holdout["dates_evaluated"]["1"] <= 61 and result["dates_evaluated"]["1"] <= 305 - 61
    stored = FactorStore(own_engine).latest(name)
    assert stored is not None and stored.spec["holdout"] == holdout  # kept with the factor, never recomputed
    view = present_factor(result)
    assert [row[0] for row in view.table.rows] == ["1d", "5d", "20d"]  # the table is in-sample; the holdout beside
    ranked = f"Rank IC {holdout['metrics']['1']['rank_ic_mean']:.4f}"
    assert any(line.startswith(f"1d holdout: {ranked}") for line in view.lines)
    assert any(f"holdout {held_out[0]}–{held_out[-1]} (61 sessions)" in line for line in view.lines)


def test_a_period_too_short_for_a_holdout_runs_without_and_says_so(make_thread, own_engine: Engine) -> None:
    name = f"short_{uuid.uuid4().hex[:6]}"
    thread = make_thread()
    out = thread.say(f"factor reversal 20190301 20190830 window=5 name={name}")  # 126 sessions
    done = thread.decide(out, {"type": "approve"})
    result: dict[str, Any] = done["result"]
    assert result["holdout"]["metrics"] is None and result["holdout"]["split"]["holdout_start"] is None
    lines = present_factor(result).lines
    assert any(line.startswith("No holdout: 26 sessions would be held out, fewer than 60") for line in lines)
