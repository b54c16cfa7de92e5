"""The research manager: judges the bull/bear debate into an investment plan and a structured research summary."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.speaking import ask_judge
from graphs.analyze.state import DebateState
from graphs.analyze.verdict import research_verdict
from tools.i18n import N_

PROMPT = """[role: research manager]
You judge a bull/bear research debate about one stock and decide. Weigh the strongest points of each side against
the analysts' evidence; quote figures only as the briefing states them and do no arithmetic of your own.
Answer with ONE JSON object and nothing else:
{"rating": "Buy" | "Overweight" | "Hold" | "Underweight" | "Sell",
 "target_position": 0.0-1.0 (the fraction of the account's total value to hold in this stock),
 "bull_points": ["..."], "bear_points": ["..."], "confidence": 0.0-1.0,
 "investment_plan": "the plan in a few sentences"}"""


def research_judge_node(state: DebateState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
    verdict, update = ask_judge(runtime.context, state, PROMPT, "research", N_("research decision"),
                                research_verdict)
    if verdict is None:
        return update
    text = "\n".join([verdict["investment_plan"], *verdict["bull_points"], *verdict["bear_points"]])
    return {**update, "investment_plan": verdict["investment_plan"], "research_summary": verdict, "judge_text": text}
