"""What debate speakers and judges share: the briefing they read (FusionState's summaries and facts), the
transcript, and one model call under the stage's token budget."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graphs.analyze.budget import answer_allowance, budget_note, cut_at_budget, prompt_tokens, tokens_of
from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.grammar import ANALYSTS
from graphs.analyze.models import MODELS
from graphs.analyze.state import DebateState
from graphs.analyze.verdict import verdict_numbers
from graphs.analyze.words import debate_stage, judge_stage, judge_word, role_word, stage_word, stopped_in
from graphs.common import message_text
from graphs.context import model_required
from graphs.llm import MODEL_FAILURES, ModelAnswerError, describe_model_failure, language_instruction, parse_json_answer
from graphs.progress import report_progress, report_prose
from tools.desk.log import rating_word
from tools.i18n import _


def briefing(state: DebateState) -> str:
    """What every speaker and judge reads: the analysts' memory summaries, then the account and price facts."""
    parts = [f"Stock: {state['company_of_interest']}, decision date {state['trade_date']}."]
    for name in ANALYSTS:
        found = state.get(f"{name}_analyst_summary")  # a key built from the name: its type is not known here
        summary = found if isinstance(found, dict) else {}
        text = "\n".join(f"[{label}] {summary[key]}" for key, label in (
            ("today_report", "today"), ("memory_summary_pre_open", "pre-open summary"),
            ("memory_summary_post_close", "post-close summary")) if summary.get(key))
        parts.append(f"## {name} analyst\n{text or '(not run)'}")
    if state.get("research_summary"):
        parts.append(f"## research manager's plan\n{state.get('investment_plan') or ''}\n"
                     f"summary: {state['research_summary']}")
    if state.get("account_cash"):
        parts.append(f"## account\ncash {state['account_cash']} CNY, total value {state['account_total_value']} CNY, "
                     f"positions {state.get('portfolio_positions') or {}}, price {state.get('current_price')}")
    return "\n\n".join(parts)


def transcript(state: DebateState) -> str:
    turns = [f"{m.name}: {message_text(m)}" for m in state.get("messages") or [] if isinstance(m, AIMessage)]
    return "\n\n".join(turns) or "(nobody has spoken yet)"


def ask(ctx: AnalyzeDeps, state: DebateState, system: str, stage: str,
        agent: str = "debater") -> tuple[AIMessage | None, int, str | None]:
    """One model call of a debate by `agent` (its model: models.py): (answer, tokens after it, why it stopped)."""
    used, budget = state.get("tokens", 0), state["budget"]
    messages = [SystemMessage(system + language_instruction()),
                HumanMessage(f"{briefing(state)}\n\n## debate so far\n{transcript(state)}")]
    cap = answer_allowance(prompt_tokens(messages), used, budget, ctx.max_answer_tokens)
    if cap is None:
        return None, used, budget_note(stage, used, budget)
    model = model_required(ctx, MODELS[agent])
    try:
        answer = model.bind(max_tokens=cap).invoke(messages)
    except MODEL_FAILURES as exc:
        return None, used, stopped_in(stage, describe_model_failure(exc))
    spent = used + tokens_of(messages, answer)
    if cut_at_budget(answer):
        return None, spent, budget_note(stage, spent, budget, cut=True)
    return answer, spent, None


def make_speaker(role: str, prompt: str, stage: str) -> Callable[..., dict[str, Any]]:
    def speaker_node(state: DebateState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        answer, tokens, stopped = ask(runtime.context, state, prompt, debate_stage(stage, role))
        if answer is None:
            return {"stopped": stopped, "tokens": tokens}
        count = state.get("count", 0) + 1
        report_progress(_("{stage} debate").format(stage=stage_word(stage)),
                        _("turn {n}: {role}").format(n=count, role=role_word(role)))
        if not (state.get("request") or {}).get("replay"):  # a replay's dates are not told turn by turn
            report_prose(f"{stage} debate {count}", _("{stage} debate, turn {count}: {role}").format(
                stage=stage_word(stage).capitalize(), count=count, role=role_word(role)), message_text(answer))
        return {"messages": [AIMessage(message_text(answer), name=role)], "latest_speaker": role, "count": count,
                "tokens": tokens}

    return speaker_node


def ask_judge(ctx: AnalyzeDeps, state: DebateState, prompt: str, stage: str, what: str,
              read: Callable[[dict[str, Any]], dict[str, Any]]) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The judge of the `stage` debate: (its verdict read by `read`, the update), or (None, the update saying why it
    stopped); `what` is the `N_` message id of what it answers."""
    answer, tokens, stopped = ask(ctx, state, prompt, judge_stage(stage), "judge")
    if answer is None:
        return None, {"stopped": stopped, "tokens": tokens}
    try:
        verdict = read(parse_json_answer(message_text(answer), what))
    except ModelAnswerError as exc:
        return None, {"stopped": _("stopped at {stage}: its answer could not be used ({problem})").format(
            stage=judge_stage(stage), problem=exc), "tokens": tokens}
    report_progress(judge_word(stage), rating_word(verdict["rating"]))
    return verdict, {"tokens": tokens, "evidence": [*state.get("evidence", []), *verdict_numbers(verdict)]}
