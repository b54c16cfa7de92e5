"""The research manager: judges the bull/bear debate into an investment plan and a structured research summary."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.common import message_text
from graphs.context import WorkflowContext
from graphs.decision.speaking import ask
from graphs.decision.state import DebateState
from graphs.decision.verdict import research_verdict, verdict_numbers
from graphs.llm import ModelAnswerError, parse_json_answer
from graphs.progress import report_progress

PROMPT = """[role: research manager]
You judge a bull/bear research debate about one stock and decide. Weigh the strongest points of each side against
the analysts' evidence; quote figures only as the briefing states them and do no arithmetic of your own.
Answer with ONE JSON object and nothing else:
{"rating": "Buy" | "Overweight" | "Hold" | "Underweight" | "Sell",
 "target_position": 0.0-1.0 (the fraction of the account's total value to hold in this stock),
 "bull_points": ["..."], "bear_points": ["..."], "confidence": 0.0-1.0,
 "investment_plan": "the plan in a few sentences"}"""


def research_judge_node(state: DebateState, runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    answer, tokens, stopped = ask(runtime.context, state, PROMPT, "the research manager")
    if answer is None:
        return {"stopped": stopped, "tokens": tokens}
    try:
        verdict = research_verdict(parse_json_answer(message_text(answer), "research decision"))
    except ModelAnswerError as exc:
        return {"stopped": f"stopped at the research manager: its answer could not be used ({exc})",
                "tokens": tokens}
    report_progress("research manager", verdict["rating"])
    text = "\n".join([verdict["investment_plan"], *verdict["bull_points"], *verdict["bear_points"]])
    return {"investment_plan": verdict["investment_plan"], "research_summary": verdict, "tokens": tokens,
            "judge_text": text, "evidence": [*state.get("evidence", []), *verdict_numbers(verdict)]}
