"""Reflection: the central dispatcher. Reads the request, decides data_fetch / signal_generate / validate /
clarify / end, and bounds every loop (retries, clarifications, the same error twice)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain.agents import create_agent
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.runtime import Runtime

from graphs.clarify import CANCELLED, ask, is_cancel
from graphs.common import AGENT_STEP_LIMIT, new_human_text, workspace_summary
from graphs.context import model_for, model_required, workspace
from graphs.grammar import is_ignore, suggestions, unused_question
from graphs.llm import AGENT_FAILURES, agent_json_answer, describe_model_failure, language_instruction
from graphs.progress import report_progress
from graphs.signal.deps import SignalDeps
from graphs.signal.grammar import (
    SignalRequest,
    looks_structured,
    parse,
    starts_request,
    strategy_names,
    vocabulary,
)
from graphs.signal.library import STRATEGIES, library_help
from graphs.signal.models import MODELS
from graphs.signal.nodes.data_fetch import missing_fields_reply, no_bars
from graphs.signal.state import MAX_RETRIES, SignalState
from tools.data.codes import bad_code_message
from tools.data.provider import MarketDataProvider
from tools.data.schema import BAR_FIELDS, DataError, check_range, normalize_codes
from tools.i18n import N_, _

GRAMMAR_HINT = N_("signal STRATEGY CODES START END [name=value ...], e.g. `signal ma_cross 000001.SZ,600000.SH "
                 "20200101 20200630 fast=5 slow=20`")


def no_llm_reply() -> str:
    """What a free-form request gets when no LLM is configured: how to enable one, and the built-in strategies."""
    return _("Free-form requests need an LLM, and none is configured. Set OPENAI_API_KEY (and OPENAI_BASE_URL for "
             "DeepSeek, Qwen, vLLM or Ollama) to enable them.\nWithout an LLM, name a built-in strategy: {hint}."
             "\nStrategies:\n{strategies}").format(hint=_(GRAMMAR_HINT), strategies=library_help())


REFLECTION_PROMPT = """You are a strategy analyst. Understand the user's intent and plan the next step of a
signal-generation workflow on Chinese A-share daily data (tushare schema).

## Current state
- OHLCV data ready: {data_ready}; indicator data ready: {indicators_ready}; signal ready: {signal_ready}
- Workspace frames of this thread (use the workspace_status tool to re-check; do not guess):
{workspace}
- Execution history:
{history}
- Errors:
{errors}
- Retries: {retry_count}/{max_retries}

## Conversation (latest last)
{conversation}

## Task types
- data_fetch: the user wants data, or the strategy needs data that is missing
- signal_gen: generate a signal from data already in the workspace
- mixed: fetch data first, then generate the signal
- unclear: the intent is unclear and needs clarification

## Ask for clarification when
1. no stock code is given, or it is ambiguous (codes look like 000001.SZ, 600000.SH, 430047.BJ)
2. no date range (start and end, YYYYMMDD) is given
3. the strategy is too abstract to compute
4. the indicator fields needed are unclear
5. the same error happened twice
Never invent codes or dates the user did not give.

## Answer with one JSON object
{{"analysis": "...", "task_type": "data_fetch|signal_gen|mixed|unclear",
  "next_action": "data_fetch|signal_generate|clarify|validate|end",
  "user_intent": {{"type": "...", "params": {{"ts_code": "comma-separated codes", "start_date": "YYYYMMDD",
    "end_date": "YYYYMMDD", "strategy_desc": "...", "required_indicators": ["pe", ...]}},
    "needs_clarification": false}},
  "clarification_question": null, "reasoning": "..."}}
If data is ready and the user asks for a signal, go straight to signal_generate.
"""


def _clarify(state: SignalState, question: str, choices: list[str] | None = None) -> dict[str, Any]:
    update = ask(state, question, f"{_(GRAMMAR_HINT)}.", choices)
    return {**update, "current_task": "clarify" if update["clarification_needed"] else "end"}


def _next_step(state: SignalState, ready: dict[str, bool]) -> str:
    if not ready["data_ready"]:
        return "data_fetch"
    if not ready["signal_ready"]:
        return "signal_generate"
    if not ready["validated"]:
        return "validate"
    return "report"


def _repeated_error(state: SignalState) -> str | None:
    log = state.get("error_log", [])
    return next((e for e in state.get("error_messages", []) if log.count(e) >= 2), None)


def reflection_node(state: SignalState, config: RunnableConfig, runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    report_progress(_("planning"))
    messages = state.get("messages", [])
    text = new_human_text(messages, state.get("consumed", 0))
    base: dict[str, Any] = {"consumed": len(messages), "clarification_needed": None, "clarify_choices": [],
                            "result": None, "final_reply": None}
    if is_cancel(text):
        return {**base, "current_task": "end", "final_reply": CANCELLED}
    mode = "structured" if starts_request(text) else state.get("mode")
    if mode is None:
        if looks_structured(text):
            mode = "structured"
        elif model_for(runtime.context, MODELS["planner"]) is not None:
            mode = "llm"
        else:
            return {**base, "mode": "unsupported", "current_task": "end", "final_reply": no_llm_reply()}
    base["mode"] = mode
    if mode == "structured":
        return {**base, **_reflect_structured(state, text, runtime.context.provider)}
    return {**base, **_reflect_llm(state, text, config, runtime)}


def _reflect_structured(state: SignalState, text: str, provider: MarketDataProvider) -> dict[str, Any]:
    old = SignalRequest.from_dict(state.get("request") or {})
    text = "" if is_ignore(text) else text  # the words it did not use are left out: the request as it stood
    request = SignalRequest().merge(parse(text)) if starts_request(text) else old.merge(parse(text)) if text else old
    if request.bad_codes:
        return {"request": request.as_dict(), "error_messages": [], **_clarify(
            state, _("{problem} Reply with the corrected codes, or `cancel`.").format(
                problem=bad_code_message(request.bad_codes)), suggestions(request.bad_codes))}
    strategy_params = STRATEGIES[request.strategy].params if request.strategy else None
    stray = [name for name in request.params if strategy_params is not None and name not in strategy_params]
    if request.unknown_words or stray:  # never run without something the user typed: ask, keeping the rest
        kept = replace(request, params={k: v for k, v in request.params.items() if k not in stray})
        unused = [*request.unknown_words, *(f"{name}={request.params[name]}" for name in stray)]
        return {"request": kept.as_dict(), "error_messages": [], **_clarify(
            state, unused_question(unused, vocabulary(request.strategy)), suggestions((), unused))}
    update: dict[str, Any] = {"request": request.as_dict(), "error_messages": []}
    if request.strategy:  # a strategy whose data this provider lacks: no answer to any question would help
        fields = STRATEGIES[request.strategy].fields
        refusal = missing_fields_reply(provider, _("The {strategy} strategy").format(strategy=request.strategy),
                                       fields)
        if refusal:
            return {**update, "current_task": "end", "final_reply": refusal}
    ready = {k: bool(state.get(k)) for k in ("data_ready", "signal_ready", "validated")}
    if request.as_dict() != old.as_dict():
        ready = dict.fromkeys(ready, False)
        update.update(data_ready=False, signal_ready=False, validated=False, indicators_ready=False)
    errors = state.get("error_messages", [])
    if errors and not text:
        return {**update, **_clarify(state, _("{error}\nReply with other codes, dates or parameters, or "
                                              "`cancel`.").format(error=errors[0]))}
    missing = request.missing()
    if "codes" in missing:
        return {**update, **_clarify(state, _("Which stocks? Give ts_codes with the exchange suffix, e.g. "
                                              "000001.SZ (Ping An Bank) or 600000.SH (SPDB), comma-separated."))}
    if "dates" in missing:
        return {**update, **_clarify(state, _("Which date range? Give a start and an end date as YYYYMMDD, "
                                              "e.g. 20200101 20200630."))}
    if "strategy" in missing:
        return {**update, **_clarify(state, _("Which strategy?") + f"\n{library_help()}", strategy_names())}
    assert request.strategy and request.start and request.end  # missing() named none of them
    strategy = STRATEGIES[request.strategy]
    try:
        params = strategy.resolve(request.params)
        codes = normalize_codes(request.codes)
        start, end = check_range(request.start, request.end)
    except (ValueError, DataError) as exc:
        return {**update, **_clarify(state, _("{error}. Reply with a corrected value, or `cancel`.").format(
            error=exc))}
    empty = no_bars(provider, start, end)
    if empty:
        return {**update, **_clarify(state, _("{error}. Reply with other dates, or `cancel`.").format(error=empty))}
    if len(codes) < strategy.min_codes:
        return {**update, **_clarify(
            state, _("{strategy} ranks stocks against each other; give at least {n} codes.").format(
                strategy=_(strategy.title), n=strategy.min_codes))}
    update["user_intent"] = {
        "type": "mixed",
        "params": {"ts_code": ",".join(codes), "start_date": start, "end_date": end,
                   "strategy_desc": strategy.description, "strategy": strategy.name, "strategy_params": params,
                   "required_indicators": [f for f in strategy.fields if f not in BAR_FIELDS],
                   "fields": list(strategy.fields)},
    }
    task = _next_step(state, ready)
    return {**update, "current_task": task,
            "execution_history": [*state.get("execution_history", []), f"reflection: {strategy.name} → {task}"]}


def _reflect_llm(state: SignalState, text: str, config: RunnableConfig,
                 runtime: Runtime[SignalDeps]) -> dict[str, Any]:
    retries = state.get("retry_count", 0) + (1 if state.get("error_messages") else 0)
    update: dict[str, Any] = {"retry_count": retries}
    repeated = _repeated_error(state)
    if repeated and repeated in state.get("planner_errors", []):  # the model cannot plan: asking would not help
        return {**update, "current_task": "end",
                "final_reply": _("The same problem happened twice: {problem}\nStopped. Without the model, name a "
                                 "built-in strategy: {hint}.\nStrategies:\n{strategies}").format(
                    problem=repeated, hint=_(GRAMMAR_HINT), strategies=library_help())}
    if repeated:
        return {**update, **_clarify(state, _("The same problem happened twice: {problem}\nHow should I proceed? You "
                                              "can rephrase the strategy, change codes or dates, or `cancel`.").format(
            problem=repeated))}
    if retries > MAX_RETRIES:
        return {**update, **_clarify(state, _("I failed {n} times: {error}\nPlease adjust the request or "
                                              "`cancel`.").format(n=MAX_RETRIES, error=state["error_messages"][-1]))}
    ws = workspace(runtime.context, config)

    @tool
    def workspace_status() -> str:
        """List the frames in this thread's workspace with their shapes and date ranges."""
        return workspace_summary(ws)

    conversation = "\n".join(f"{m.type}: {m.content}" for m in state.get("messages", [])[-8:])
    prompt = REFLECTION_PROMPT.format(
        data_ready=bool(state.get("data_ready")), indicators_ready=bool(state.get("indicators_ready")),
        signal_ready=bool(state.get("signal_ready")), workspace=workspace_summary(ws),
        history="\n".join(state.get("execution_history", [])[-10:]) or "(none)",
        errors="\n".join(state.get("error_messages", [])) or "(none)", retry_count=retries,
        max_retries=MAX_RETRIES, conversation=conversation or text,
    )
    agent = create_agent(model_required(runtime.context, MODELS["planner"]), tools=[workspace_status],
                         system_prompt=prompt + language_instruction())
    try:
        run = agent.invoke({"messages": [HumanMessage(text or "Decide the next step.")]},
                           {"recursion_limit": AGENT_STEP_LIMIT})
        decision = agent_json_answer(run["messages"], N_("decision"), [workspace_status.name])
    except AGENT_FAILURES as exc:  # an unusable answer is an error to retry (the same one twice: the run stops)
        error = _("reflection: {failure}").format(failure=describe_model_failure(exc))
        return {**update, "current_task": "reflection_failed", "error_messages": [error],
                "error_log": [*state.get("error_log", []), error],
                "planner_errors": [*state.get("planner_errors", []), error]}
    intent = decision.get("user_intent") or {}
    params = intent.get("params") or {}
    update["user_intent"] = intent
    action = str(decision.get("next_action") or "end")
    if action == "clarify" or intent.get("needs_clarification"):
        question = decision.get("clarification_question") or _("Could you say more about the strategy?")
        return {**update, **_clarify(state, str(question))}
    if action in ("data_fetch", "signal_generate") and not (params.get("ts_code") and params.get("start_date")
                                                          and params.get("end_date")):
        return {**update, **_clarify(state, _("Which stocks and which date range (YYYYMMDD to YYYYMMDD)?"))}
    if action == "signal_generate" and not state.get("data_ready"):
        action = "data_fetch"
    if action not in ("data_fetch", "signal_generate", "validate", "end"):
        action = "end"
    if action == "end" and state.get("signal_ready") and state.get("validated"):
        action = "report"
    history = [*state.get("execution_history", []), f"reflection: {decision.get('analysis', '')} → {action}"]
    return {**update, "current_task": action, "execution_history": history, "error_messages": []}
