"""Plan: the model decides the next step in the seed's action format (tool_call, calculation or decision); the
history of earlier steps and their results goes with every call. A malformed answer is sent back once; after
that, or past the round or time limit, the decision is hold with the failure logged. The time limit bounds the
whole run: a model call gets at most the time left, and a call that times out ends the run at once."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import openai
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langgraph.runtime import Runtime

from graphs.context import model_for
from graphs.llm import MODEL_FAILURES, bounded, describe_model_failure, language_instruction, parse_json_answer
from graphs.progress import report_progress
from graphs.rule.deps import RuleDeps
from graphs.rule.models import MODELS
from graphs.rule.routes import MALFORMED_RETRIES, MAX_ROUNDS, RUN_TIMEOUT_SECONDS
from graphs.rule.state import RuleRunState
from tools.i18n import N_, _
from tools.rules.calculations import describe as calculations_catalogue

SYSTEM_PROMPT = """You are a quantitative trading execution agent. Work through the trading rule step by step: fetch
bars with a tool, have every indicator computed by the calculation tool, then decide buy, sell or hold.

Context
- rule: {rule_id}
- symbol: {symbol}
- position: {runtime_status}
- the rule: {requirements}

Tools
- get_kline_data(symbol, timeframe, limit): bars of the symbol (A-shares: timeframe 1d). The bars are kept for the
  calculations; you never pass data yourself.
Calculations (computed in code on the fetched bars; never compute an indicator or do arithmetic on prices yourself):
{calculations}

Answer with exactly ONE JSON object and nothing else:
{{"type": "tool_call" | "calculation" | "decision", "step": {step}, "reasoning": "why this step",
  "action": {{...}}, "next_step": "what comes next"}}
where action is
- for tool_call: {{"tool_name": "get_kline_data", "params": {{"symbol": "...", "timeframe": "1d", "limit": 100}}}}
- for calculation: {{"calculation_type": "MA", "params": {{"period": 30}}}}
- for decision: {{"action": "buy" | "sell" | "hold", "reason": "...", "confidence": 0.0-1.0}}
Decide as soon as the rule can be judged; at most {rounds} steps."""


def plan_node(state: RuleRunState, runtime: Runtime[RuleDeps]) -> dict[str, Any]:
    ctx, rule, history = runtime.context, state["rule"], state.get("history") or []
    step = len(history) + 1
    elapsed = (datetime.now(UTC) - datetime.fromisoformat(state["started_at"])).total_seconds()
    if len(history) >= MAX_ROUNDS or elapsed > RUN_TIMEOUT_SECONDS:
        why = _("no decision within {n} steps").format(n=MAX_ROUNDS) if len(history) >= MAX_ROUNDS else \
            _("no decision within {seconds} s").format(seconds=f"{RUN_TIMEOUT_SECONDS:.0f}")
        return _hold(ctx, state, step, why)
    model = model_for(ctx, MODELS["rule checker"])
    if model is None:
        return _hold(ctx, state, step, _("this rule is written in words and needs an LLM (OPENAI_API_KEY or "
                                         "OPENAI_BASE_URL); rules in the rule language run without one"))
    report_progress(_("thinking"), _("step {n}").format(n=step))
    left = RUN_TIMEOUT_SECONDS - elapsed
    try:
        answer = bounded(model, left).invoke(_messages(rule, history, step, state.get("feedback")))
        action = _action(parse_json_answer(str(answer.content), N_("action")))
        decision = _decision(action) if action["type"] == "decision" else None
    except openai.APITimeoutError as exc:  # the client retried what fitted: no time for a second chance
        return _hold(ctx, state, step, _timed_out(exc, left, getattr(model, "request_timeout", None)))
    except MODEL_FAILURES as exc:
        return _malformed(ctx, state, step, describe_model_failure(exc))
    except ValueError as exc:
        return _malformed(ctx, state, step, str(exc))
    action["step"] = step
    if decision is not None:
        return {"decision": decision, "history": [*history, {**action, "result": None}], "action": None,
                "feedback": None}
    return {"action": action, "feedback": None}


def _messages(rule: dict[str, Any], history: list[dict[str, Any]], step: int, feedback: str | None,
              ) -> list[BaseMessage]:
    system = SYSTEM_PROMPT.format(rule_id=rule["id"], symbol=rule["symbol"],
                                  runtime_status=json.dumps(rule.get("runtime_status") or {}),
                                  requirements=rule["requirements"], calculations=calculations_catalogue(),
                                  step=step, rounds=MAX_ROUNDS)
    messages: list[BaseMessage] = [SystemMessage(system + language_instruction())]
    for item in history:
        shown = {k: v for k, v in item.items() if k != "result"}
        messages += [AIMessage(json.dumps(shown, ensure_ascii=False)),
                     HumanMessage(f"Step {item['step']} result: {json.dumps(item.get('result'), ensure_ascii=False)}")]
    prompt = "Analyse the current state and decide the next step."
    if feedback:
        prompt = f"Your last answer could not be used: {feedback}. Answer again with one JSON object as specified."
    return [*messages, HumanMessage(prompt)]


def _action(data: dict[str, Any]) -> dict[str, Any]:
    kind = data.get("type")
    if kind not in ("tool_call", "calculation", "decision"):
        raise ValueError(_("type must be tool_call, calculation or decision, not {kind!r}").format(kind=kind))
    if not isinstance(data.get("action"), dict):
        raise ValueError(_("action must be an object"))
    return {"type": kind, "reasoning": str(data.get("reasoning") or ""), "action": data["action"],
            "next_step": str(data.get("next_step") or "")}


def _decision(action: dict[str, Any]) -> dict[str, Any]:
    body = action["action"]
    verdict = str(body.get("action") or "").lower()
    if verdict not in ("buy", "sell", "hold"):
        raise ValueError(_("a decision's action must be buy, sell or hold, not {verdict!r}").format(verdict=verdict))
    try:
        confidence = float(body.get("confidence"))
    except (TypeError, ValueError):
        raise ValueError(_("a decision needs a confidence between 0 and 1")) from None
    if not 0.0 <= confidence <= 1.0:
        raise ValueError(_("confidence must be between 0 and 1, not {confidence}").format(confidence=confidence))
    return {"action": verdict, "reason": str(body.get("reason") or action["reasoning"]), "confidence": confidence}


def _timed_out(exc: openai.APITimeoutError, left: float, own: Any) -> str:
    """Why a run whose model call timed out ends: the run's limit when the time left was shorter than the model's
    own timeout, else that timeout."""
    if isinstance(own, int | float) and left < own:
        return _("no decision within {seconds} s: the model did not answer in the {left} s left of the run").format(
            seconds=f"{RUN_TIMEOUT_SECONDS:g}", left=f"{left:.1f}")
    return describe_model_failure(exc)


def _malformed(ctx: RuleDeps, state: RuleRunState, step: int, problem: str) -> dict[str, Any]:
    count = (state.get("malformed") or 0) + 1
    if count <= MALFORMED_RETRIES:
        return {"malformed": count, "feedback": problem, "action": None}
    return {**_hold(ctx, state, step, _("the model's answer could not be used twice: {problem}").format(
        problem=problem)), "malformed": count}


def _hold(ctx: RuleDeps, state: RuleRunState, step: int, why: str) -> dict[str, Any]:
    """End in hold; the decide node logs it as the decision step."""
    action = {"type": "decision", "step": step, "reasoning": why,
              "action": {"action": "hold", "reason": why, "confidence": 0.0}, "next_step": "stop"}
    return {"decision": {"action": "hold", "reason": why, "confidence": 0.0, "failure": True},
            "history": [*(state.get("history") or []), {**action, "result": {"failure": why}}], "action": None}
