"""Replay of the decision desk over 20 past dates (issue 14): scripted agents rate Buy on the first date and Sell on
the tenth; orders fill without approval in the replay account at each date's close, and the equity curve equals
the one worked out by hand below from the sample's closes and the paper account's 2020 fee rates."""

from __future__ import annotations

from decimal import Decimal

from sqlalchemy import Engine

from graphs.analyze.graph import build_analyze_graph
from graphs.analyze.present import present_decision
from testkit.desk import ROLES, desk_context, research_answer, risk_answer
from testkit.fakes.chat import ScriptedModels, answer, tool_call
from testkit.graph_thread import GraphThread
from tools.data.local import SampleProvider
from tools.desk.log import list_decisions
from tools.sandbox import Sandbox

CODE = "600519.SH"
CLOSES = {  # 600519.SH in the sample, 20 trading days
    "20200728": "1670.00", "20200729": "1672.00", "20200730": "1680.00", "20200731": "1678.18",
    "20200803": "1668.00", "20200804": "1669.99", "20200805": "1668.00", "20200806": "1637.96",
    "20200807": "1631.00", "20200810": "1633.99", "20200811": "1642.51", "20200812": "1626.95",
    "20200813": "1635.00", "20200814": "1661.00", "20200817": "1690.00", "20200818": "1705.00",
    "20200819": "1687.00", "20200820": "1664.00", "20200821": "1676.00", "20200824": "1696.35",
}
DATES = list(CLOSES)
# buy 100 at 1,670.00 (20% of 1,000,000 is 119.8 shares: one lot): value 167,000.00, commission 0.025% = 41.75,
# transfer fee 0.002% = 3.34 → cash 1,000,000 − 167,000 − 45.09 = 832,954.91
CASH_HOLDING = Decimal("832954.91")
# sell 100 at 1,633.99: value 163,399.00, commission 40.85, stamp duty 0.1% 163.40, transfer fee 3.27
# → cash 832,954.91 + 163,399.00 − 207.52 = 996,146.39
CASH_AFTER = Decimal("996146.39")


def _rating(index: int) -> str:
    return {0: "Buy", 9: "Sell"}.get(index, "Hold")


def test_a_replay_over_20_dates_gives_the_hand_computed_equity_curve(
        db_url: str, engine: Engine, sandbox: Sandbox, models: ScriptedModels) -> None:
    scripts = {ROLES["market"]: [m for _ in DATES for m in (tool_call("get_indicators"), answer("Trend report."))]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[ROLES[role]] = [answer(f"{role} speaks") for _ in DATES]
    scripts[ROLES["research_judge"]] = [research_answer(_rating(i), 0.2 if i == 0 else 0.0) for i in range(20)]
    scripts[ROLES["risk_judge"]] = [risk_answer(_rating(i), 0.2 if i == 0 else 0.0) for i in range(20)]
    llm = models(scripts=scripts)
    light = models(script=[answer("summary") for _ in DATES])  # the market analyst's daily post-close summary
    provider = SampleProvider()
    ctx = desk_context(engine, sandbox, provider, llm, light)
    out = GraphThread(db_url, ctx, build_analyze_graph).say(f"analyze {CODE} 20200728..20200824 every=1d "
                                                             "analysts=market")
    result = out["result"]
    assert result["kind"] == "replay" and result["stopped"] is None and "__interrupt__" not in out
    expected = [(d, str(CASH_HOLDING + 100 * Decimal(CLOSES[d]))) for d in DATES[:9]]
    expected += [(d, str(CASH_AFTER)) for d in DATES[9:]]
    assert [(d, str(Decimal(e))) for d, e in result["equity"]] == expected
    assert [s["rating"] for s in result["steps"]] == [_rating(i) for i in range(20)]
    assert result["fills"] == 2
    # a replay's decisions stay in its own namespace: the live log and other replays see none of them
    assert list_decisions(engine, ctx.desk_namespace, CODE) == []
    assert len(list_decisions(engine, result["namespace"], CODE, limit=50)) == 20
    view = present_decision(result)
    assert ("Desk P&L", "-0.39%") in view.facts  # 996,146.39 / 1,000,000 − 1



def test_a_stop_asked_during_a_replay_ends_it_before_the_next_date(
        db_url: str, engine: Engine, sandbox: Sandbox, models: ScriptedModels) -> None:
    """The runner honours a stop between nodes, and the replay is one node: it checks before each date itself. The
    scripts hold answers for the first date only, so deciding a second one would fail the test."""
    scripts = {ROLES["market"]: [tool_call("get_indicators"), answer("Trend report.")],
               ROLES["research_judge"]: [research_answer("Buy", 0.2)], ROLES["risk_judge"]: [risk_answer("Buy", 0.2)]}
    for role in ("bull", "bear", "risky", "safe", "neutral"):
        scripts[ROLES[role]] = [answer(f"{role} speaks")]
    asked: list[int] = []

    def stop_after_the_first_date() -> bool:
        asked.append(1)
        return len(asked) > 1

    ctx = desk_context(engine, sandbox, SampleProvider(), models(scripts=scripts), models(script=[answer("summary")]),
                       stop_requested=stop_after_the_first_date)
    out = GraphThread(db_url, ctx, build_analyze_graph).say(f"analyze {CODE} 20200728..20200730 every=1d "
                                                             "analysts=market")
    result = out["result"]
    assert [s["date"] for s in result["steps"]] == ["20200728"] and result["fills"] == 1
    assert result["stopped"] == ("stopped at your request after date 1 of 3 (20200728); 20200729 and the dates "
                                 "after it were not decided")
    assert present_decision(result).warnings[0] == result["stopped"]  # beside the P&L of the dates done
