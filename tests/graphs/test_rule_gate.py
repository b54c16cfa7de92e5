"""The rule gate (issue 42, item 4) on synthetic markets with a known answer: `rule backtest` splits its period into
in-sample and holdout (each beside buy-and-hold), records a trial of the rule and shows the trials, the DSR and
the PBO; its verdict is stored on the rule and shown by `rule show`; `rule schedule` is refused unless it passed,
with the failing test's numbers and the ways forward, or given `anyway REASON` (audited, shown forever after); a
rule in words always needs the reason; `every=` on `rule add` points to backtest then schedule."""

from __future__ import annotations

import io
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from graphs.context import WorkflowContext
from graphs.registry import command_for
from graphs.rule.grammar import SUBCOMMANDS
from graphs.rule.honesty import thread_of
from graphs.views import View
from graphs.workflow import CommandCall, CommandError
from tools.audit.export import export_csv
from tools.audit.verify import Keys, verify
from tools.broker.records import OrderEvent
from tools.data.local import LocalProvider
from tools.i18n import using
from tools.research.trials import TrialStore
from tools.rules.store import RuleStore
from tools.sandbox import Sandbox
from tools.storage.artifacts import ArtifactStore

OWNER, OTHER = "UOWNER", "UOTHER"
CODE = "600000.SH"
RULE = "buy when close > ma(5); sell when close < ma(5)"
CRON = "30 9 * * 1-5"
SESSIONS = 500  # 20180102–20191202: the last 100 are held out
REASON = "paper-trading it for a month to watch its fills"


def _market(root: Path, closes: np.ndarray) -> LocalProvider:
    """One code's daily bars on business days from 20180102: each opens at the previous close."""
    days = pd.bdate_range("2018-01-02", periods=len(closes))
    opens = np.r_[closes[0], closes[:-1]]
    frame = pd.DataFrame({"ts_code": CODE, "trade_date": days.strftime("%Y%m%d"), "open": opens.round(2),
                          "high": (np.maximum(opens, closes) * 1.005).round(2),
                          "low": (np.minimum(opens, closes) * 0.995).round(2), "close": closes.round(2),
                          "vol": 10000.0})
    root.mkdir(parents=True, exist_ok=True)
    frame.to_csv(root / "daily.csv", index=False)
    return LocalProvider(root)


def trending() -> np.ndarray:
    """Trends of 30 sessions up then 30 down (±0.6 % a day) under noise: a moving-average rule has a real edge."""
    rng = np.random.default_rng(7)
    drift = np.where((np.arange(SESSIONS) // 30) % 2 == 0, 0.006, -0.006)
    return 20 * np.exp(np.cumsum(drift + rng.normal(0, 0.008, SESSIONS)))


def random_walk() -> np.ndarray:
    """A random walk: no rule has an edge on it."""
    return 20 * np.exp(np.cumsum(np.random.default_rng(11).normal(0, 0.015, SESSIONS)))


def _ctx(engine: Engine, sandbox: Sandbox, provider: LocalProvider) -> WorkflowContext:
    return WorkflowContext(provider=provider, engine=engine, sandbox=sandbox, artifacts=ArtifactStore(engine),
                           rules=RuleStore(engine, frozenset()))


@pytest.fixture
def edge(engine: Engine, sandbox: Sandbox, tmp_path: Path) -> WorkflowContext:
    return _ctx(engine, sandbox, _market(tmp_path / "trend", trending()))


@pytest.fixture
def no_edge(engine: Engine, sandbox: Sandbox, tmp_path: Path) -> WorkflowContext:
    return _ctx(engine, sandbox, _market(tmp_path / "walk", random_walk()))


def view(ctx: WorkflowContext, user: str, line: list[str], channel: str = "C-gate") -> View:
    return SUBCOMMANDS[line[0]].run(CommandCall(ctx, line[1:], user, channel))


def text(shown: View) -> str:
    return "\n".join([shown.title, shown.summary, *shown.lines, *(f"{k}: {v}" for k, v in shown.facts)])


def _saved(ctx: WorkflowContext, *extra: str) -> int:
    saved = view(ctx, OWNER, ["add", CODE, RULE, *extra], channel=f"C{uuid.uuid4().hex[:10]}")
    return int(saved.title.split()[-1])


def test_a_rule_with_a_real_edge_passes_the_gate_and_is_scheduled(edge: WorkflowContext, engine: Engine) -> None:
    rid = _saved(edge)
    with pytest.raises(CommandError) as refused:
        view(edge, OWNER, ["schedule", str(rid), CRON])
    assert str(refused.value) == (
        f"Rule {rid} has no backtest yet, so the gate has no verdict on it. Backtest it first, `rule backtest {rid} "
        f"START END`, then `rule schedule {rid} \"{CRON}\"`; or give the reason it should run without one, kept with "
        f"the rule and audited: `rule schedule {rid} \"{CRON}\" anyway REASON`")
    card = view(edge, OTHER, ["backtest", str(rid), "20180102", "20191202"])  # anyone may backtest
    facts = dict(card.facts)
    assert facts["In-sample 20180102–20190715"].startswith("return ")  # 400 sessions, each part beside buy-and-hold
    assert "(buy-and-hold " in facts["Holdout 20190716–20191202"]
    assert facts["Trials"] == f"1 backtest(s) of rule {rid} (each period a trial), 1 by UOTHER in all"
    assert facts["Deflated Sharpe ratio"].startswith("1.000: the probability that the in-sample Sharpe ratio")
    assert facts["Probability of backtest overfitting"] == ("not computed: it needs 8 backtests of this rule over "
                                                            "shared dates")
    assert facts["Schedule gate"].startswith("passed: the holdout's Sharpe ratio has the in-sample sign")
    rule = edge.rules.get(rid)  # type: ignore[union-attr]
    assert rule is not None and rule.verdict is not None and rule.gate_passed
    assert rule.verdict["holdout"]["in_sample"] > 0 and rule.verdict["holdout"]["holdout"] > 0
    scheduled = view(edge, OWNER, ["schedule", str(rid), CRON])
    assert scheduled.summary == (f"Rule {rid} runs at `{CRON}` (Asia/Shanghai) on trading days. Its latest backtest "
                                 "passed the gate.")
    shown = text(view(edge, OTHER, ["show", str(rid)]))
    assert "Schedule gate: passed on the backtest 20180102–20191202 by UOTHER (" in shown
    assert "Scheduled over the gate" not in shown
    assert edge.rules.overrides(rid) == []  # type: ignore[union-attr]


def test_a_rule_without_an_edge_is_refused_with_the_numbers_and_each_backtest_is_a_trial(
        no_edge: WorkflowContext, engine: Engine) -> None:
    rid = _saved(no_edge)
    first = dict(view(no_edge, OWNER, ["backtest", str(rid), "20180102", "20191202"]).facts)
    again = dict(view(no_edge, OWNER, ["backtest", str(rid), "20180102", "20191202"]).facts)
    assert first["Trials"].startswith("1 backtest(s)") and again["Trials"].startswith("1 backtest(s)")  # the same
    card = dict(view(no_edge, OWNER, ["backtest", str(rid), "20180301", "20191202"]).facts)
    assert card["Trials"].startswith(f"2 backtest(s) of rule {rid}")  # another period is another trial
    rule = no_edge.rules.get(rid)  # type: ignore[union-attr]
    assert rule is not None and len(TrialStore(engine).of_thread(thread_of(rule))) == 2
    assert rule.verdict is not None and not rule.gate_passed
    dsr = rule.verdict["dsr"]
    assert not dsr["ok"] and dsr["probability"] < 0.95 and rule.verdict["trials"] == 2
    expected = f"deflated Sharpe: probability {dsr['probability']:.3f} is below the threshold 0.95"
    assert card["Schedule gate"].startswith(f"refused: {expected}")
    with pytest.raises(CommandError) as refused:
        view(no_edge, OWNER, ["schedule", str(rid), CRON])
    assert str(refused.value) == (
        f"The gate refuses to schedule rule {rid}: its latest backtest (20180301–20191202) failed: {expected}. "
        f"Backtest it again (`rule backtest {rid} START END`; each backtest counts as a trial), or give the reason it "
        f"should run anyway, kept with the rule and audited: `rule schedule {rid} \"{CRON}\" anyway REASON`")
    assert no_edge.rules.get(rid).schedule is None  # type: ignore[union-attr]
    assert "Schedule gate: refused on the backtest 20180301–20191202 by UOWNER (" in text(
        view(no_edge, OTHER, ["show", str(rid)]))


def test_from_eight_backtests_the_card_shows_the_probability_of_overfitting(edge: WorkflowContext) -> None:
    rid = _saved(edge)
    starts = [f"2018{month:02d}01" for month in range(1, 9)]  # eight periods, eight trials over shared dates
    cards = [dict(view(edge, OWNER, ["backtest", str(rid), start, "20191202"]).facts) for start in starts]
    assert [card["Probability of backtest overfitting"].startswith("not computed") for card in cards] == [
        True] * 7 + [False]
    assert cards[-1]["Trials"].startswith(f"8 backtest(s) of rule {rid}")
    assert cards[-1]["Probability of backtest overfitting"].endswith(
        ": how often the in-sample best of this rule's backtests ranks in the bottom half out of sample (CSCV)")


def test_a_short_backtest_has_no_holdout_and_cannot_pass(edge: WorkflowContext) -> None:
    rid = _saved(edge)
    card = dict(view(edge, OWNER, ["backtest", str(rid), "20180102", "20181228"]).facts)
    assert card["Holdout"] == ("none: 52 sessions would be held out, fewer than 60; the figures above are the whole "
                               "period")
    assert card["Schedule gate"].startswith("refused: holdout: none (52 sessions would be held out, fewer than 60), "
                                            "so nothing out of sample confirms the in-sample Sharpe ratio")


def test_anyway_with_a_reason_schedules_is_audited_and_shown_forever_after(no_edge: WorkflowContext,
                                                                            engine: Engine) -> None:
    rid = _saved(no_edge)
    view(no_edge, OWNER, ["backtest", str(rid), "20180102", "20191202"])
    with pytest.raises(CommandError, match="only its owner or an admin"):
        view(no_edge, OTHER, ["schedule", str(rid), CRON, "anyway", "I", "like", "it"])
    found = command_for(f'rule schedule {rid} "{CRON}" anyway {REASON}')
    assert found is not None
    command, args = found
    done = command.run(CommandCall(no_edge, args, OWNER, "C-gate"))
    assert done.summary == (f"Rule {rid} runs at `{CRON}` (Asia/Shanghai) on trading days. Scheduled over the gate "
                            f"by {OWNER}: {REASON}")
    view(no_edge, OWNER, ["schedule", str(rid), "off"])  # off, pause and resume need no gate
    view(no_edge, OWNER, ["pause", str(rid)])
    view(no_edge, OWNER, ["resume", str(rid)])
    shown = view(no_edge, OTHER, ["show", str(rid)])
    (line,) = [line for line in shown.lines if line.startswith("Scheduled over the gate")]
    assert line.startswith(f"Scheduled over the gate by {OWNER} at ") and line.endswith(
        f"UTC (`{CRON}` Asia/Shanghai): {REASON}")
    assert OWNER in shown.users
    with Session(engine) as session:
        (event,) = [e for e in session.scalars(select(OrderEvent).where(OrderEvent.event == "scheduled anyway"))
                    if e.detail["rule"] == rid]
    assert (event.actor, event.detail["reason"], event.detail["schedule"]) == (OWNER, REASON, CRON)
    assert event.detail["verdict"]["passed"] is False  # the verdict it overrode, with its numbers
    exported = io.StringIO()
    export_csv(engine, "global", None, exported)
    assert any("scheduled anyway" in row and REASON in row for row in exported.getvalue().splitlines())
    reports, strays = verify(engine, Keys({}))
    assert not strays and all(report.problem is None for report in reports)  # the chain holds with it


def test_a_missing_reason_is_refused_with_the_usage(no_edge: WorkflowContext) -> None:
    rid = _saved(no_edge)
    for line in (["schedule", str(rid), CRON, "anyway"], ["schedule", str(rid), CRON, "anyway", " "]):
        with pytest.raises(CommandError) as refused:
            view(no_edge, OWNER, line)
        assert str(refused.value) == ('usage: rule schedule ID "CRON" anyway REASON: the reason is required (it is '
                                      "kept with the rule and audited); `rule schedule ID off` needs none")
    assert no_edge.rules.get(rid).schedule is None  # type: ignore[union-attr]
    assert no_edge.rules.overrides(rid) == []  # type: ignore[union-attr]


def test_a_rule_in_words_is_scheduled_only_with_a_reason(no_edge: WorkflowContext) -> None:
    rid = _saved(no_edge, "kind=words")
    assert "Schedule gate: no verdict: a rule in words cannot be backtested, so a schedule needs `anyway REASON`" in \
        text(view(no_edge, OWNER, ["show", str(rid)]))
    with pytest.raises(CommandError) as refused:
        view(no_edge, OWNER, ["schedule", str(rid), CRON])
    assert str(refused.value) == (
        f"Rule {rid} is written in words, so it cannot be backtested and the gate has no verdict on it: it is "
        f"scheduled only with the reason it should run, kept with the rule and audited: `rule schedule {rid} "
        f"\"{CRON}\" anyway REASON`")
    done = view(no_edge, OWNER, ["schedule", str(rid), CRON, "anyway", "the", "desk", "asked", "for", "it"])
    assert done.summary.endswith("Scheduled over the gate by UOWNER: the desk asked for it")
    (override,) = no_edge.rules.overrides(rid)  # type: ignore[union-attr]
    assert (override.by, override.reason, override.schedule, override.verdict) == (
        OWNER, "the desk asked for it", CRON, None)


def test_every_on_add_points_to_backtest_then_schedule(no_edge: WorkflowContext) -> None:
    channel = f"C{uuid.uuid4().hex[:10]}"
    with pytest.raises(CommandError) as refused:
        view(no_edge, OWNER, ["add", CODE, RULE, f"every={CRON}"], channel=channel)
    assert str(refused.value) == (
        "a new rule is saved without a schedule: the gate schedules a rule once a backtest has passed it. Save it "
        f"without every=, then `rule backtest ID START END` and `rule schedule ID \"{CRON}\"` (or, with the reason it "
        f"should run without passing, `rule schedule ID \"{CRON}\" anyway REASON`).")
    assert no_edge.rules.list(channel=channel) == []  # type: ignore[union-attr]


def test_a_chinese_session_reads_the_gate_in_chinese(no_edge: WorkflowContext) -> None:
    rid = _saved(no_edge)
    with using("zh-CN"):
        with pytest.raises(CommandError) as no_backtest:
            view(no_edge, OWNER, ["schedule", str(rid), CRON])
        card = dict(view(no_edge, OWNER, ["backtest", str(rid), "20180102", "20191202"]).facts)
        with pytest.raises(CommandError) as refused:
            view(no_edge, OWNER, ["schedule", str(rid), CRON])
        found = command_for(f'规则 定时 {rid} "{CRON}" 强制 先用模拟盘 观察 恢复')
        assert found is not None
        command, args = found
        done = command.run(CommandCall(no_edge, args, OWNER, "C-gate"))
        shown = text(view(no_edge, OWNER, ["show", str(rid)]))
    assert str(no_backtest.value).startswith(f"规则 {rid} 还没有回测")
    assert card["定时门槛"].startswith("未通过：紧缩夏普比率：概率 0.464 低于门槛 0.95")
    assert str(refused.value).startswith(f"门槛拒绝定时运行规则 {rid}：")
    assert done.summary.endswith("越过门槛定时，由 UOWNER 决定：先用模拟盘 观察 恢复")  # the reason as typed
    assert "越过门槛定时：UOWNER 于 " in shown and "理由：先用模拟盘 观察 恢复" in shown
    assert "定时门槛: 未通过（UOWNER 的回测 20180102–20191202（" in shown


def test_a_rule_saved_under_a_deleted_rules_id_starts_with_no_trials(no_edge: WorkflowContext) -> None:
    """SQLite gives the id of the newest rule, once deleted, to the next rule saved: the trials stay the old one's."""
    rid = _saved(no_edge)
    view(no_edge, OWNER, ["backtest", str(rid), "20180102", "20191202"])
    view(no_edge, OWNER, ["delete", str(rid)])
    again = _saved(no_edge)
    card = dict(view(no_edge, OWNER, ["backtest", str(again), "20180301", "20191202"]).facts)
    assert card["Trials"].startswith(f"1 backtest(s) of rule {again}")
