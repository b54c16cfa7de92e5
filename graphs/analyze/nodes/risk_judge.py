"""The risk manager: judges the risk debate into the final trade decision and a risk summary. It proposes a
target position; the trader's sizing code constrains it to cash, lots and the account's limits."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.speaking import ask_judge
from graphs.analyze.state import DebateState
from graphs.analyze.verdict import risk_verdict
from tools.i18n import N_

PROMPT = """[role: risk manager]
You judge the risk review of the research manager's plan (aggressive, conservative and neutral voices) and make the
final trade decision for one stock, given the account's cash and positions. Quote figures only as the briefing
states them and do no arithmetic of your own: propose a target position as a fraction and the desk's code sizes it.
Answer with ONE JSON object and nothing else:
{"rating": "Buy" | "Overweight" | "Hold" | "Underweight" | "Sell",
 "target_position": 0.0-1.0 (the fraction of the account's total value to hold in this stock after trading),
 "risks": ["..."], "confidence": 0.0-1.0,
 "final_trade_decision": "the decision and its conditions in a few sentences"}"""


def risk_judge_node(state: DebateState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
    verdict, update = ask_judge(runtime.context, state, PROMPT, "risk", N_("trade decision"), risk_verdict)
    if verdict is None:
        return update
    text = "\n".join([verdict["final_trade_decision"], *verdict["risks"]])
    return {**update, "final_trade_decision": verdict["final_trade_decision"], "risk_summary": verdict,
            "judge_text": text}
