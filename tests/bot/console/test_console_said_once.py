"""Issue 28's wording, as a user of `quantdesk chat` sees it, with the desk's agents answering from the loopback fake
OpenAI server: a stopped desk says why once (its summary, not again as a `warning:`), a replay's table shows each
date's order text whole, and a date error says only what helps."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from testkit.console import console_lines, model_chat
from testkit.desk import ROLES
from testkit.fakes.chat import answer, tool_call
from testkit.fakes.openai_server import OpenAIServer, Step, http_error
from testkit.llm import LIGHT

CODE = "600519.SH"


def _judge(rating: str, target: float) -> Step:
    return answer(json.dumps({"rating": rating, "target_position": target, "bull_points": ["trend"],
                              "bear_points": ["RSI"], "risks": ["reversal"], "confidence": 0.6,
                              "investment_plan": "plan", "final_trade_decision": rating}))


@pytest.mark.parametrize(("market", "reason"), [
    ([http_error(401)], "the market analyst's model failed: The model endpoint refused the API key (HTTP 401); check "
                        "OPENAI_API_KEY."),
    ([answer("  ")], "stopped at fusion: no analyst wrote a report (the market analyst wrote no report: its last "
                     "answer was empty)"),
])
def test_a_stopped_desk_says_why_once(market: list[Step], reason: str, tmp_path: Path,
                                      openai_server: OpenAIServer) -> None:
    openai_server.fake.script(ROLES["market"], *market)
    lines = model_chat(tmp_path, openai_server, f"analyze {CODE} analysts=market").splitlines()
    assert lines[:2] == [f"贵州茅台 {CODE} · 20200824: no decision", reason]
    assert not any(line.startswith("warning:") for line in lines)  # not again, nor the analyst's part of it


def test_a_replay_shows_each_order_whole_and_the_stop_once(tmp_path: Path, openai_server: OpenAIServer) -> None:
    fake = openai_server.fake
    fake.script(ROLES["market"], *[step for _ in range(3) for step in (tool_call("get_indicators"), answer("Trend."))])
    fake.script(LIGHT, *[answer("memory of the day")] * 3)
    fake.script(ROLES["bull"], answer("bull speaks"), answer("bull speaks"), http_error(401))  # the third date stops
    for role in ("bear", "risky", "safe", "neutral"):
        fake.script(ROLES[role], *[answer(f"{role} speaks")] * 2)
    for judge in ("research_judge", "risk_judge"):
        fake.script(ROLES[judge], _judge("Buy", 0.2), _judge("Hold", 0.0))
    text = model_chat(tmp_path, openai_server, f"analyze {CODE} 20200728..20200730 every=1d analysts=market")
    rows = [line.split() for line in text.splitlines() if line.lstrip().startswith("202007")]
    assert [" ".join(row[4:]) for row in rows] == [
        "auto-filled in the replay account: BUY 100 at 1670.00 on 20200728, fees 45.09",
        "target 0.0% of 1,000,154.91 CNY at 1672.00 = 0 shares; held 100. Hold: no order",
        "stopped (see the warning)"]
    reason = "stopped in the research debate (bull): The model endpoint refused the API key (HTTP 401)"
    assert text.count(reason) == 1 and f"warning: stopped at 20200730: {reason}" in text


def test_a_date_error_says_only_the_date_error(tmp_path: Path) -> None:
    """Issue 28 item 6 (not reproduced on this code: the test pins it): no date error of a factor request, typed or
    given as the answer to 'Which dates?', ends with the paragraph on free-form requests needing an LLM."""
    lines = console_lines(tmp_path, "factor momentum 20300101 20300601", "factor momentum 20200601 20200101",
                          "factor momentum 2020-13-45 20200601", "factor momentum 20300101", "factor momentum 20200101",
                          "20300101 20300601", "factor momentum 20100101 20120101")
    said = [line for line in lines if line.startswith("I cannot")]
    assert said[0].startswith("I cannot build that factor: start date 20300101 is in the future (today is ")
    assert said[1:3] == ["I cannot build that factor: start date 20200601 is after end date 20200101",
                         "I cannot build that factor: start date '20201345' is not a date; use YYYYMMDD, like 20230131"]
    assert said[3].startswith("I cannot build that factor: start date 20300101 is in the future")  # the answer's
    assert said[4].startswith("I cannot run this factor: data: no daily rows for ") and "covers 20190102" in said[4]
    assert not any("LLM" in line for line in lines)
