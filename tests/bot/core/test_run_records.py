"""Run records (issue 41) through the runner the bot uses: each run's manifest, `rerun ID` reproducing a signal, a
factor (model-written, reviewed, saved) and a depth-2 desk decision exactly from the record; a restated close that
a re-run from the record does not see and a live one reports; daily budgets that stop a run at its next model
call; `usage` equal to the recorded calls."""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pandas as pd
import pytest
from langchain_core.messages import AIMessage
from sqlalchemy import select
from sqlalchemy.orm import Session

from bot.runner import Runner
from bot.startup import build_context
from graphs.checkpointer import open_checkpointer
from graphs.llm import get_light_llm, get_llm
from graphs.registry import HOME
from graphs.runs.commands import budget_command, present_rerun, rerun_command, runs_command, usage_command
from graphs.runs.panels import runs_panels
from graphs.runs.rerun import rerun
from graphs.workflow import CommandCall, CommandError
from testkit.desk import ROLES, clock_at_data_end, desk_scripts, research_answer, risk_answer
from testkit.fakes.chat import ScriptedChatModel, ScriptedModels, answer, tool_call
from testkit.fakes.openai_server import API_KEY, OpenAIServer
from tools.audit.records import ChainEntry
from tools.broker.clock_moves import ClockError
from tools.broker.records import OrderEvent
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.desk.memory import DueSummary, MemoryController
from tools.factors.store import FactorStore
from tools.runs.store import RunStore
from tools.settings import Settings

USER, CHANNEL = "UALICE", "console"
SIGNAL = "signal ma_cross 600519.SH 20190101 20200601 fast=5 slow=20"
GOOD_BODY = "return -(close / close.shift(10) - 1)"


@pytest.fixture
def runner(tmp_path: Path) -> Iterator[Runner]:
    url = f"sqlite:///{tmp_path / 'q.db'}"
    app = build_context(Settings(_env_file=None, DATABASE_URL=url, QUANTDESK_DATA_DIR=str(tmp_path / "data"),
                                 QUANTDESK_ADMINS=USER, QUANTDESK_TRADERS=USER))
    with open_checkpointer(url) as saver:
        yield Runner(app, saver)


def _only_run(runner: Runner) -> str:
    (row,) = RunStore(runner.context.engine).recent(user=USER)
    return row.id


def _used(message: AIMessage, tokens: int = 1000) -> AIMessage:
    """`message` with the token counts an endpoint reports."""
    return message.model_copy(update={"usage_metadata": {"input_tokens": tokens - 100, "output_tokens": 100,
                                                         "total_tokens": tokens}})


def test_a_signal_run_is_recorded_and_rerun_from_its_record_exactly(runner: Runner) -> None:
    outcome = runner.start("console-sig", SIGNAL, user=USER, account=CHANNEL)
    assert outcome.status == "done" and outcome.result is not None
    row = RunStore(runner.context.engine).get(_only_run(runner))
    assert row is not None and row.status == "done" and row.workflow == "signal"
    manifest = row.manifest
    assert manifest["user"] == USER and manifest["surface"] == "console" and manifest["thread"] == "console-sig"
    assert manifest["parameters"]["strategy"] == "ma_cross" and manifest["parameters"]["codes"] == ["600519.SH"]
    (read,) = manifest["data"]["reads"]
    assert read["codes"] == ["600519.SH"] and (read["start"], read["end"]) == ("20190101", "20200601")
    assert len(read["rows_hash"]) == 64 and read["rows"] > 300
    assert {"langgraph", "langchain-openai", "pandas", "numpy", "TA-Lib"} <= set(manifest["code"]["libraries"])
    assert manifest["code"]["sandbox_python"] and manifest["code"]["package"]
    assert "graphs.signal.nodes.signal_generate.SIGNAL_PROMPT" in manifest["prompts"]
    assert manifest["segments"][-1]["checkpoint"] == outcome.checkpoint
    report = rerun(runner.context, row.id)
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    assert report.result == manifest["result"]


def test_a_factor_the_model_wrote_and_a_reviewer_approved_reruns_exactly(runner: Runner,
                                                                        models: ScriptedModels) -> None:
    spec = tool_call("FactorSpecAnswer", name="rev10", description="minus the 10-day return (reversal)",
                     fields=["close"], lookback=10, frequency="daily", codes=[], start="20190301", end="20200601",
                     question=None)
    llm = models(script=[spec, tool_call("try_factor_body", body=GOOD_BODY), answer("minus the 10-day return"),
                         tool_call("CodeVerdict", ok=True, diffs=[], reason="minus the 10-day return")])
    runner.context = dataclasses.replace(runner.context, llm=llm,
                                         light_llm=models(script=[tool_call("RouteAnswer", workflow="factor")]))
    waiting = runner.start("console-fac", "Build me a short-term reversal factor on the last 10 days, 20190301 to "
                           "20200601", user=USER, account=CHANNEL)
    assert waiting.status == "waiting"
    run_id = _only_run(runner)
    assert RunStore(runner.context.engine).get(run_id).status == "waiting"  # type: ignore[union-attr]
    done = runner.resume("console-fac", waiting.interrupts[0].id, {"type": "approve"}, user=USER)
    assert done.status == "done" and done.result is not None and done.result["decision"] == "approve"
    row = RunStore(runner.context.engine).get(run_id)
    assert row is not None and row.status == "done" and [s["kind"] for s in row.manifest["segments"]] == [
        "start", "resume"]
    assert len(RunStore(runner.context.engine).calls(run_id)) == 5
    report = rerun(runner.context, run_id)
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    assert FactorStore(runner.context.engine).latest("rev10") is not None  # the run's save, once: the re-run's
    assert FactorStore(runner.context.engine).latest("rev10").version == 1  # type: ignore[union-attr]


def _desk(runner: Runner, models: ScriptedModels, scripts: dict[str, list[AIMessage]], summaries: int = 4) -> None:
    """The desk's agents scripted; the clock at the data's end, the day a request without DATE decides on."""
    with contextlib.suppress(ClockError):  # moved there already
        clock_at_data_end(runner.context.engine, runner.context.provider)
    runner.context = dataclasses.replace(runner.context, llm=models(scripts=scripts), light_llm=models(
        script=[answer("summary of the day") for _ in range(summaries)]))


def test_a_depth_2_decision_reruns_exactly_from_its_record(runner: Runner, models: ScriptedModels) -> None:
    _desk(runner, models, desk_scripts((1, 1)))
    outcome = runner.start("console-desk", "analyze 600519.SH depth=2", user=USER, account=CHANNEL)
    assert outcome.status == "waiting", outcome.text  # the order card
    run_id = _only_run(runner)
    report = rerun(runner.context, run_id)
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    assert report.result == RunStore(runner.context.engine).get(run_id).manifest["interrupts"]  # type: ignore


def test_a_rerun_names_the_first_node_whose_output_differs(runner: Runner, models: ScriptedModels) -> None:
    _desk(runner, models, desk_scripts((1, 1)))
    runner.start("console-desk", "analyze 600519.SH depth=2", user=USER, account=CHANNEL)
    run_id = _only_run(runner)
    store = RunStore(runner.context.engine)
    manifest = store.get(run_id).manifest  # type: ignore[union-attr]
    node = next(i for i, (name, _d) in enumerate(manifest["outputs"]) if name.endswith("research_judge"))
    manifest["outputs"][node][1] = "0" * 64  # the record says the research manager concluded otherwise
    store.save(run_id, thread_id=manifest["thread"], user=USER, account=CHANNEL, text=manifest["text"], day="x",
               status="waiting", manifest=manifest, workflow="analyze")
    report = rerun(runner.context, run_id)
    assert report is not None and report.first_difference == manifest["outputs"][node][0]


MARKET = ROLES["market"]


def _market_only(reports: list[str]) -> dict[str, list[AIMessage]]:
    """The desk of `analysts=market` scripted for one decision per report, the market analyst writing each."""
    single = {key: queue for key, queue in desk_scripts((1, 1)).items()
              if not any(ROLES[other] == key for other in ("news", "sentiment", "fundamentals"))}
    scripts = {key: queue * len(reports) for key, queue in single.items() if key != MARKET}
    scripts[MARKET] = [m for report in reports for m in (tool_call("get_indicators"), answer(report))]
    return scripts


def _decide(runner: Runner, thread: str) -> str:
    """A market-only decision on 600519.SH in a thread of its own, its order card rejected (no order waits when
    the next decision comes); its run's id."""
    before = {r.id for r in RunStore(runner.context.engine).recent(user=USER)}
    card = runner.start(thread, "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert card.status == "waiting", card.text
    done = runner.resume(thread, card.interrupts[0].id, {"type": "reject", "message": "not now"}, user=USER)
    assert done.status == "done", done.text
    (run_id,) = {r.id for r in RunStore(runner.context.engine).recent(user=USER)} - before
    return run_id


def _market_systems(model: ScriptedChatModel) -> list[str]:
    """The market analyst's system prompt of each call, in order."""
    return [str(prompt[0].content) for prompt in model.prompts_for(MARKET)]


def test_a_decision_reruns_from_the_desk_memory_it_started_with_and_not_from_later_memory(
        runner: Runner, models: ScriptedModels) -> None:
    """Decisions on 600519.SH on one day: the first writes a report and the day's post-close summary; the second
    reads both (as `earlier today`, `post-close summary`) and asks for no summary; its re-run from the record starts
    from exactly that memory, before and after a third decision's newer report."""
    _desk(runner, models, {}, summaries=1)  # one post-close summary of the day: the first decision's
    llm = models(scripts=_market_only(["report one", "report two", "report three"]))
    runner.context = dataclasses.replace(runner.context, llm=llm)
    first = _decide(runner, "console-desk-1")
    second = _decide(runner, "console-desk-2")
    manifest = RunStore(runner.context.engine).get(second).manifest  # type: ignore[union-attr]
    memory = manifest["memory"]
    assert memory["namespace"] == runner.context.desk_namespace and memory["codes"] == ["600519.SH"]
    assert [r["report"] for r in memory["rows"]["analyst_reports"]] == ["report one"]
    assert [s["text"] for s in memory["rows"]["analyst_summaries"]] == ["summary of the day"]
    recorded = _market_systems(llm)[2:]  # the second decision's two market calls
    assert "earlier today: report one" in recorded[0] and "post-close summary: summary of the day" in recorded[0]
    assert RunStore(runner.context.engine).get(first).manifest["memory"] == {  # type: ignore[union-attr]
        "namespace": runner.context.desk_namespace, "codes": ["600519.SH"], "rows": {}}  # nothing before it
    exported = runs_command(_call(runner, "export", second)).artifacts[0]
    document = json.loads(runner.context.artifacts.get(exported["id"]).data)  # type: ignore[union-attr]
    assert document["manifest"]["memory"] == memory  # and under the manifest's hash
    shown = dict(runs_command(_call(runner, "show", second)).facts)
    assert shown["desk memory"] == f"{memory['namespace']} · 600519.SH: reports 1, summaries 1, decisions 1"

    report = rerun(runner.context, second)
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    again = models(scripts=_market_only(["report two"]))  # a live re-run: the scripted model sees its prompts
    runner.context = dataclasses.replace(runner.context, llm=again)
    live = rerun(runner.context, second, live=True)  # no summary asked: the day's summary is in its memory
    assert live is not None and live.failure is None, live.failure
    assert _market_systems(again) == recorded

    runner.context = dataclasses.replace(runner.context, llm=llm)
    third = _decide(runner, "console-desk-3")  # a newer report of the day, after the second decision
    assert "earlier today: report two" in _market_systems(llm)[4]
    rows = RunStore(runner.context.engine).get(third).manifest["memory"]["rows"]  # type: ignore[union-attr]
    assert sorted(r["report"] for r in rows["analyst_reports"]) == ["report one", "report two"]
    assert sorted(d["thread_id"] for d in rows["desk_decisions"]) == ["console-desk-1", "console-desk-2"]
    report = rerun(runner.context, second)  # the third decision's memory is not the second's
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    earlier = rerun(runner.context, first)  # nor the later decisions' the first's
    assert earlier is not None and earlier.same, (earlier.first_difference, earlier.failure, earlier.changes[:3])


def test_a_decision_made_while_an_earlier_card_waits_reruns_without_a_card_of_its_own(
        runner: Runner, models: ScriptedModels) -> None:
    """The desk proposes one card per account and stock: a second decision while the first's card waits proposes
    none, and so does its re-run from the record (the card's claim is part of the state the run started from)."""
    _desk(runner, models, {}, summaries=1)
    runner.context = dataclasses.replace(runner.context, llm=models(scripts=_market_only(["one", "two"])))
    waiting = runner.start("console-card-1", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert waiting.status == "waiting", waiting.text
    second = runner.start("console-card-2", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert second.status == "done" and not second.interrupts, second.text  # no second card
    run_id = next(r.id for r in RunStore(runner.context.engine).recent(user=USER) if r.thread_id == "console-card-2")
    report = rerun(runner.context, run_id)
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])


def test_a_run_that_reads_no_desk_memory_keeps_none(runner: Runner) -> None:
    _summary_of_the_day_written(runner)  # memory of 600519.SH exists; a signal on it does not read it
    runner.start("console-sig", SIGNAL, user=USER, account=CHANNEL)
    manifest = RunStore(runner.context.engine).get(_only_run(runner)).manifest  # type: ignore[union-attr]
    assert manifest["memory"] is None


class Restatable(SampleProvider):
    """The sample, with one close restated after the run (a provider correcting history)."""

    restated: str | None = None

    def _fetch(self, dataset: str, codes: list[str], start: str, end: str, fields: list[str]) -> pd.DataFrame:
        frame = super()._fetch(dataset, codes, start, end, fields)
        if self.restated and "close" in frame:
            frame.loc[frame["trade_date"] == self.restated, "close"] *= 1.05
        return frame


def test_a_restated_close_is_not_seen_by_a_rerun_from_the_record_and_is_reported_by_a_live_one(
        runner: Runner) -> None:
    provider = Restatable()
    runner.context = dataclasses.replace(runner.context, provider=provider)
    runner.start("console-sig", SIGNAL, user=USER, account=CHANNEL)
    run_id = _only_run(runner)
    provider.restated = "20200102"
    again = rerun(runner.context, run_id)
    assert again is not None and again.same, (again.first_difference, again.failure, again.changes[:3])
    live = rerun(runner.context, run_id, live=True)
    assert live is not None and not live.same
    (changed,) = live.changed_inputs
    assert changed.startswith("daily 600519.SH 20190101-20200601: 1 rows changed, first on 20200102")
    assert live.first_difference is not None
    shown = present_rerun(live)
    assert "Changed input since the run:" in shown.lines and any("→" in line for line in shown.lines)


def _call(runner: Runner, *args: str, user: str = USER) -> CommandCall:
    return CommandCall(runner.context, list(args), user, CHANNEL)


def test_runs_lists_shows_and_exports_with_hashes(runner: Runner) -> None:
    runner.start("console-sig", SIGNAL, user=USER, account=CHANNEL)
    run_id = _only_run(runner)
    listed = runs_command(_call(runner))
    assert listed.table is not None and listed.table.rows[0][0] == run_id
    shown = runs_command(_call(runner, "show", run_id))
    facts = dict(shown.facts)
    assert facts["manifest hash"] == RunStore(runner.context.engine).get(run_id).manifest_hash  # type: ignore
    exported = runs_command(_call(runner, "export", run_id))
    manifest_ref, rows_ref = exported.artifacts
    document = json.loads(runner.context.artifacts.get(manifest_ref["id"]).data)  # type: ignore[union-attr]
    assert document["manifest_hash"] == facts["manifest hash"] and len(document["calls_hash"]) == 64
    rows = runner.context.artifacts.get(rows_ref["id"])
    assert rows is not None and rows.data[:4] == b"PAR1"


def test_the_home_shows_a_persons_latest_runs_with_their_records_and_the_days_budget(runner: Runner) -> None:
    runner.context = dataclasses.replace(runner.context, token_budget_person_day=200_000)
    assert runs_panels(runner.context, USER) == []  # nothing run yet: no panel
    runner.start("console-home", SIGNAL, user=USER, account=CHANNEL)
    run_id = _only_run(runner)
    (panel,) = runs_panels(runner.context, USER)
    assert (panel.name, panel.title) == ("runs", "Runs")
    assert panel.summary == "Your latest 1 run(s), newest first; today 0 of 200.0k."  # a signal run calls no model
    (row,) = panel.rows
    started = RunStore(runner.context.engine).get(run_id).started_at  # type: ignore[union-attr]
    shanghai = started.astimezone(ZoneInfo("Asia/Shanghai")).strftime("%m-%d %H:%M")  # the day budgets are read in
    assert row.text.startswith(f"{run_id} · {shanghai} · signal · done · 0 tokens · ")
    assert row.thread_id == "console-home"
    assert [action.words for action in panel.actions()] == [("runs", "show", run_id)]
    assert runs_panels(runner.context, "UBOB") == []  # another person's home does not show it
    assert "runs" in HOME


def test_a_runs_record_is_read_only_by_its_starter_its_channel_and_its_admins(runner: Runner) -> None:
    """The record holds the data a run read and the model's answers: someone in another channel cannot show, export
    or re-run it; someone in the run's channel can, and so can an admin (USER) anywhere."""
    runner.start("console-sig", SIGNAL, user="UCAROL", account=CHANNEL)
    (run,) = RunStore(runner.context.engine).recent(user="UCAROL")
    run_id = run.id
    outsider = CommandCall(runner.context, ["show", run_id], "UBOB", "desk9")
    for words, command in ((["show", run_id], runs_command), (["export", run_id], runs_command),
                           ([run_id], rerun_command)):
        with pytest.raises(CommandError, match=f"Run {run_id} is another person's, in another channel"):
            command(CommandCall(runner.context, words, outsider.user, outsider.account))
    assert dict(runs_command(CommandCall(runner.context, ["show", run_id], "UDAN", CHANNEL)).facts)["request"]
    assert dict(runs_command(CommandCall(runner.context, ["show", run_id], USER, "desk9")).facts)["request"]


def test_a_person_budget_reached_mid_decision_stops_at_the_next_call_and_the_next_day_it_runs(
        tmp_path: Path, runner: Runner, models: ScriptedModels) -> None:
    day = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai
    made = ("market", "bull", "bear", "research manager")  # five calls of 1,000 tokens: the sixth is not made
    scripts = {key: [_used(m) for m in queue] for key, queue in desk_scripts((1, 2)).items()
               if any(role in key for role in made)}
    runner.context = dataclasses.replace(runner.context, now=lambda: day, token_budget_person_day=4500)
    _desk(runner, models, scripts, summaries=0)
    _summary_of_the_day_written(runner)
    stopped = runner.start("console-b1", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert stopped.status == "done" and stopped.result is None
    assert stopped.text.startswith("Stopped before the next model call: your daily token budget is spent (5,000 "
                                   "of 4,500 tokens today)")
    assert "2026-12-08 00:00 CST" in stopped.text
    assert list_decisions(runner.context.engine, runner.context.desk_namespace, "600519.SH") == []
    (row,) = RunStore(runner.context.engine).recent(user=USER)
    assert row.status == "stopped" and row.input_tokens + row.output_tokens == 5000
    tomorrow = day + timedelta(days=1)
    runner.context = dataclasses.replace(runner.context, now=lambda: tomorrow)
    market_only = {key: queue for key, queue in desk_scripts((1, 2)).items()
                   if not any(other in key for other in ("news", "sentiment", "fundamentals"))}
    _desk(runner, models, market_only, summaries=0)  # the market analyst's summary of 20200824 was written before
    done = runner.start("console-b2", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert done.status == "waiting", done.text  # the order card: the decision ran


def _five_calls(runner: Runner, models: ScriptedModels) -> None:
    """A depth-3 decision scripted for its first five calls of 1,000 tokens (market, bull, bear, bull, research
    manager): a run stopped before the sixth uses exactly these."""
    made = ("market", "bull", "bear", "research manager")
    _desk(runner, models, {key: [_used(m) for m in queue] for key, queue in desk_scripts((1, 2)).items()
                           if any(role in key for role in made)}, summaries=0)
    _summary_of_the_day_written(runner)


def _summary_of_the_day_written(runner: Runner) -> None:
    """The market analyst's post-close memory of the data's last day, written before the run: the run's own would be
    written beside its research debate, and a budget stop in the debate may come before or after it."""
    memory = MemoryController(runner.context.engine, "market", runner.context.desk_namespace)
    memory.write_summary(DueSummary("post_close", "600519.SH", "20200824", "20200824", "", [],
                                    ("20200824", "post_close", "an earlier memory")))


def test_a_runs_own_token_budget_stops_the_run_at_its_limit(runner: Runner, models: ScriptedModels) -> None:
    runner.context = dataclasses.replace(runner.context, token_budget_run=4500)
    _five_calls(runner, models)
    stopped = runner.start("console-run1", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert stopped.status == "done" and stopped.result is None
    assert stopped.text == ("Stopped before the next model call: this run's token budget is spent (5,000 of "
                            "4,500 tokens). Nothing of this run was kept as a result. Ask for less (a lower "
                            "depth, fewer codes or analysts), or ask an admin to raise QUANTDESK_TOKEN_BUDGET_RUN.")
    assert list_decisions(runner.context.engine, runner.context.desk_namespace, "600519.SH") == []
    assert [r.status for r in RunStore(runner.context.engine).recent(user=USER)] == ["stopped"]
    # the budget is each run's own: the same person's next run, of calls of 100 tokens, runs to its order card
    # although the first run's 5,000 tokens are over the 4,500 (a budget per person would stop it at once)
    small = {key: [_used(m, 100) for m in queue] for key, queue in desk_scripts((1, 2)).items()
             if not any(other in key for other in ("news", "sentiment", "fundamentals"))}
    _desk(runner, models, small, summaries=0)  # the market analyst's summary was written before the first run
    done = runner.start("console-run2", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert done.status == "waiting", done.text


def test_a_daily_money_budget_stops_the_run_at_the_next_call_priced_by_the_table(
        runner: Runner, models: ScriptedModels) -> None:
    day = datetime(2026, 12, 7, 2, 0, tzinfo=UTC)
    per_million = (Decimal("1000"), Decimal("1000"))  # a call of 1,000 tokens costs exactly 1.00
    runner.context = dataclasses.replace(runner.context, now=lambda: day, model_prices={"unknown": per_million},
                                         money_budget_person_day=Decimal("4.50"))
    _five_calls(runner, models)
    stopped = runner.start("console-m1", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert stopped.text == ("Stopped before the next model call: your daily money budget is spent (¥5.00 of ¥4.50 "
                            "today). Nothing of this run was kept as a result. The budget resets at 2026-12-08 00:00 "
                            "CST.")
    assert list_decisions(runner.context.engine, runner.context.desk_namespace, "600519.SH") == []
    runner.context = dataclasses.replace(runner.context, money_budget_person_day=None,
                                         money_budget_channel_day=Decimal("5.00"))
    blocked = runner.start("console-m2", "analyze 600519.SH depth=3 analysts=market", user=USER, account=CHANNEL)
    assert blocked.text.startswith("Stopped before the next model call: this channel's daily money budget is spent "
                                   "(¥5.00 of ¥5.00 today)")  # the day's calls in this channel count: none is made


def test_a_money_budget_stops_a_run_whose_model_has_no_price(runner: Runner, models: ScriptedModels) -> None:
    """The check fails closed: a call it cannot price is the last one made."""
    runner.context = dataclasses.replace(runner.context, model_prices={"gpt-4o": (Decimal("2.5"), Decimal("10"))},
                                         money_budget_person_day=Decimal("100"))
    _desk(runner, models, {key: [_used(queue[0])] for key, queue in desk_scripts().items() if "market" in key},
          summaries=0)
    stopped = runner.start("console-p1", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert stopped.text == ("Stopped before the next model call: the money budget cannot be checked, because model "
                            "unknown has no price in QUANTDESK_MODEL_PRICES. Nothing of this run was kept as a "
                            "result.")


def test_usage_totals_equal_the_recorded_calls(runner: Runner, models: ScriptedModels) -> None:
    scripts = {key: [_used(m, 700) for m in queue] for key, queue in desk_scripts((1, 1)).items()}
    _desk(runner, models, scripts)
    runner.context = dataclasses.replace(runner.context, token_budget_person_day=200_000,
                                         model_prices={"unknown": (Decimal("2"), Decimal("8"))})
    card = runner.start("console-u", "analyze 600519.SH", user=USER, account=CHANNEL)
    assert card.usage == "10.5k tokens · ¥0.03 · today 10.5k of 200.0k"  # 15 calls of 600 in and 100 out
    calls = RunStore(runner.context.engine).calls(_only_run(runner))
    day = calls[0].day
    view = usage_command(_call(runner, "day", day))
    total = dict(view.facts)["total"]
    recorded = sum(c.input_tokens + c.output_tokens for c in calls)
    assert recorded == 700 * 15 and f"{len(calls)} calls" in total and f"{recorded / 1000:.1f}k tokens" in total
    assert f"({sum(c.input_tokens for c in calls)} in, {sum(c.output_tokens for c in calls)} out)" in total




def test_a_live_rerun_against_the_model_server_shows_the_changed_rating_and_numbers(
        runner: Runner, openai_server: OpenAIServer) -> None:
    settings = Settings(_env_file=None, OPENAI_BASE_URL=openai_server.url, OPENAI_API_KEY=API_KEY,
                        QUANTDESK_MODEL="main-model", QUANTDESK_LIGHT_MODEL="light-model")
    fake = openai_server.fake

    def script(rating: str, target: float, confidence: float) -> None:
        for key, queue in desk_scripts(research_judge=[research_answer(rating, target)],
                                       risk_judge=[risk_answer(rating, target, confidence)]).items():
            if not any(other in key for other in ("news", "sentiment", "fundamentals")):
                fake.script(key, *queue)
        fake.script("light-model", answer("summary of the day"))

    clock_at_data_end(runner.context.engine, runner.context.provider)
    runner.context = dataclasses.replace(runner.context, llm=get_llm(settings), light_llm=get_light_llm(settings))
    script("Buy", 0.2, 0.6)
    first = runner.start("console-live", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert first.status == "waiting", first.text
    run_id = _only_run(runner)
    script("Overweight", 0.25, 0.8)
    live = rerun(runner.context, run_id, live=True)
    assert live is not None and not live.same and live.changed_inputs == []
    moved = {path: (before, after) for path, before, after in live.changes}
    assert moved["[0].args.why"] == ("decision desk: Buy 600519.SH as of 20200824, target 20% (confidence 0.60)",
                                     "decision desk: Overweight 600519.SH as of 20200824, target 25% (confidence "
                                     "0.80)")
    assert live.first_difference == "analyze/research/research_judge"  # the first agent that concluded otherwise
    assert live.tokens == sum(e.answer["usage"]["total_tokens"] for e in fake.exchanges[-len(  # type: ignore[index]
        RunStore(runner.context.engine).calls(run_id)):])
    shown = present_rerun(live)
    assert shown.summary.endswith("values changed.") and any("→" in line for line in shown.lines)


def test_live_reruns_of_a_decision_give_its_stability(runner: Runner, openai_server: OpenAIServer) -> None:
    """Each live re-run's rating is kept; the report says how many of them gave the run's rating."""
    settings = Settings(_env_file=None, OPENAI_BASE_URL=openai_server.url, OPENAI_API_KEY=API_KEY,
                        QUANTDESK_MODEL="main-model", QUANTDESK_LIGHT_MODEL="light-model")
    fake = openai_server.fake

    def script(rating: str) -> None:  # a live re-run writes on a scratch database: the summary is asked again
        for key, queue in desk_scripts(research_judge=[research_answer(rating, 0.2)],
                                       risk_judge=[risk_answer(rating, 0.2, 0.6)]).items():
            if not any(other in key for other in ("news", "sentiment", "fundamentals")):
                fake.script(key, *queue)
        fake.script("light-model", answer("summary of the day"))

    clock_at_data_end(runner.context.engine, runner.context.provider)
    runner.context = dataclasses.replace(runner.context, llm=get_llm(settings), light_llm=get_light_llm(settings))
    script("Buy")
    assert runner.start("console-stab", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL).interrupts
    run_id = _only_run(runner)
    views = []
    for rating in ("Overweight", "Buy", "Buy"):
        script(rating)
        views.append(rerun_command(_call(runner, run_id, "live")))
    first, _second, third = views
    assert first.lines[0] == "Rating: Buy → Overweight"
    assert dict(first.facts)["stability"] == "0 of 1 live re-runs gave the run's rating Buy (Overweight 1)"
    assert third.lines[0] == "Rating: Buy → Buy"
    assert dict(third.facts)["stability"] == "2 of 3 live re-runs gave the run's rating Buy (Buy 2, Overweight 1)"
    shown = runs_command(_call(runner, "show", run_id))
    assert dict(shown.facts)["stability"] == dict(third.facts)["stability"]
    again = rerun_command(_call(runner, run_id))  # from the record: the same rating, not a live re-run
    assert again.lines[:1] == ["Rating: Buy → Buy"] and "stability" not in dict(again.facts)


def test_the_retention_purge_keeps_the_record_of_a_run_an_order_refers_to(runner: Runner,
                                                                          models: ScriptedModels) -> None:
    runner.start("console-sig", SIGNAL, user=USER, account=CHANNEL)
    _desk(runner, models, desk_scripts())
    card = runner.start("console-desk", "analyze 600519.SH", user=USER, account=CHANNEL)
    store = RunStore(runner.context.engine)
    signal_run, desk_run = (r.id for r in sorted(store.recent(user=USER), key=lambda r: r.thread_id, reverse=True))
    done = runner.resume("console-desk", card.interrupts[0].id, {"type": "approve"}, user=USER)
    assert done.status == "done" and done.result is not None
    with Session(runner.context.engine) as session:
        proposed = session.scalars(select(OrderEvent.detail).where(OrderEvent.event == "proposed")).one()
    assert proposed["run"] == desk_run  # the order's audit entry names the run that led to it
    assert store.purge(timedelta(0)) == 1  # the signal run; the desk run is kept for its order
    assert store.calls(desk_run) and store.reads(desk_run) and not store.reads(signal_run)
    with pytest.raises(CommandError, match=f"The record of run {signal_run} was purged"):
        rerun_command(_call(runner, signal_run))
    again = rerun_command(_call(runner, desk_run))
    assert again.summary.startswith("Reproduced exactly"), again.lines


def _step(kind: str, step: int, action: dict[str, Any]) -> AIMessage:
    return answer(json.dumps({"type": kind, "step": step, "reasoning": "scripted", "action": action,
                              "next_step": "continue"}))


def test_a_rule_in_words_reruns_exactly_through_its_order(runner: Runner) -> None:
    rules = runner.context.rules
    assert rules is not None
    rule = rules.add(USER, CHANNEL, "600519.SH", "buy when the price is above its 30-day average and RSI14 < 70",
                     size=100, threshold=0.7)
    runner.context = dataclasses.replace(runner.context, llm=ScriptedChatModel(script=[
        _step("tool_call", 1, {"tool_name": "get_kline_data", "params": {"symbol": "600519.SH", "timeframe": "1d",
                                                                          "limit": 100}}),
        _step("calculation", 2, {"calculation_type": "MA", "params": {"period": 30}}),
        _step("calculation", 3, {"calculation_type": "RSI", "params": {"period": 14}}),
        _step("decision", 4, {"action": "buy", "reason": "close above MA30, RSI not overbought", "confidence": 0.75}),
    ]))
    card = runner.start("console-rule", f"rule run {rule.id}", user=USER, account=CHANNEL)
    assert card.status == "waiting", card.text
    done = runner.resume("console-rule", card.interrupts[0].id, {"type": "approve"}, user=USER)
    assert done.status == "done" and done.result is not None and done.result["order"]["status"] == "filled"
    report = rerun(runner.context, _only_run(runner))
    assert report is not None and report.same, (report.first_difference, report.failure, report.changes[:3])
    assert rules.get(rule.id).runtime_status["position"] == 100  # type: ignore[union-attr]  # the run's fill only


def test_an_admins_raise_of_a_persons_budget_lets_them_run_today_and_is_audited(runner: Runner,
                                                                                 models: ScriptedModels) -> None:
    runner.context = dataclasses.replace(runner.context, token_budget_person_day=1000)
    _desk(runner, models, {key: [_used(queue[0])] for key, queue in desk_scripts().items() if "market" in key},
          summaries=0)  # the analyst's first call is made; its second would pass the budget
    stopped = runner.start("console-r1", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert "your daily token budget is spent (1,000 of 1,000 tokens today)" in stopped.text
    with pytest.raises(CommandError, match="Only an admin raises a budget"):
        budget_command(_call(runner, "raise", USER, "50000", user="UBOB"))
    raised = budget_command(_call(runner, "raise", USER, "50000"))
    assert raised.title == "Budget raised"
    with Session(runner.context.engine) as session:
        event = session.scalars(select(OrderEvent).where(OrderEvent.event == "budget raised")).one()
        chained = session.scalars(select(ChainEntry).where(ChainEntry.source == "order_events",
                                                           ChainEntry.source_id == event.id)).one()
    assert event.actor == USER and event.detail["tokens"] == 50000 and chained.chain == "global"
    market_only = {key: queue for key, queue in desk_scripts().items()
                   if not any(other in key for other in ("news", "sentiment", "fundamentals"))}
    _desk(runner, models, market_only, summaries=1)
    done = runner.start("console-r2", "analyze 600519.SH analysts=market", user=USER, account=CHANNEL)
    assert done.status == "waiting", done.text
