"""collect_spec: turn the request into a factor spec (name, fields, windows, frequency, universe, dates).

The grammar needs no LLM; prose goes to the main model, which answers with a spec (FactorSpecAnswer) or a question.
Something essential missing → a clarify question (composed here, asked by the clarify node). A follow-up in
the same thread ("window=10") merges into the last request and runs again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from pydantic import BaseModel, Field

from graphs.clarify import CANCELLED, ask, is_cancel
from graphs.common import new_human_text
from graphs.context import model_for, thread_id
from graphs.factor import spec as grammar
from graphs.factor.decay_view import decay_chart, decay_reply
from graphs.factor.deps import FactorDeps
from graphs.factor.holdout import with_split
from graphs.factor.models import MODELS
from graphs.factor.state import FactorState
from graphs.grammar import is_ignore, suggestions, unused_question
from graphs.llm import MODEL_FAILURES, describe_model_failure, invoke_structured, language_instruction
from graphs.progress import report_progress
from tools.data.codes import bad_code_message
from tools.data.schema import BAR_FIELDS, INDICATOR_FIELDS, DataError, check_range
from tools.i18n import N_, _

NEEDS_LLM = N_("Free-form factor requests need an LLM (set OPENAI_API_KEY, and OPENAI_BASE_URL for a "
               "compatible server). Without one, use the grammar: `factor KIND START END [window=N] [name=NAME]` "
               "with KIND one of {kinds}, or `factor combo 0.5*momentum(20) - volatility(20) START END`.")
DATES = N_("Which dates? Give START END as YYYYMMDD, e.g. 20190102 20200630.")
CODES = N_("Which codes? e.g. 000001.SZ,600000.SH,600519.SH")

SPEC_PROMPT = """You turn a quant's description of a stock-selection factor into a spec.

Fields available (tushare daily schema; wide frames dates x codes): {fields}.
The data provider {universe}.

Answer with FactorSpecAnswer. Ask a question (and leave the unknown fields null) when the dates are missing, when the
factor itself is unclear, or when codes are missing and the provider has no universe. Only daily frequency is
supported.
"""


class FactorSpecAnswer(BaseModel):
    """The factor's spec as the quant described it, or a question when something essential is missing."""

    name: str | None = Field(default=None, description="snake_case name")
    description: str | None = Field(default=None, description="one sentence of what the factor measures")
    fields: list[str] | None = Field(default=None, description="the data fields it reads, e.g. close")
    lookback: int | None = Field(default=None, description="trading days of history the factor needs")
    frequency: str = Field(default="daily", description="daily (the only frequency supported)")
    codes: list[str] | None = Field(default=None, description="ts_codes such as 600519.SH; empty for the universe")
    start: str | None = Field(default=None, description="first date, YYYYMMDD")
    end: str | None = Field(default=None, description="last date, YYYYMMDD")
    question: str | None = Field(default=None, description="one short question when something essential is missing")


def _reset() -> dict[str, Any]:
    """Per-run fields cleared when a new request (or a follow-up) starts a run."""
    return {"retry_count": 0, "attempts": [], "review": None, "editing": False, "dry_run": None,
            "semantic_check": None, "backfill": None, "evaluation": None, "saved": None, "result": None,
            "final_reply": None, "artifacts": [], "factor_body": None, "factor_code": None, "save_approval": None}


def _ask(state: FactorState, update: dict[str, Any], question: str, choices: list[str] | None = None) -> dict:
    return {**update, **ask(state, question, "`factor KIND START END [window=N]`, e.g. "
                                             "`factor momentum 20190101 20200601 window=20`.", choices)}


def collect_spec_node(state: FactorState, config: RunnableConfig,
                      runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    messages = state.get("messages", [])
    report_progress(_("reading the request"))
    text = new_human_text(messages, state.get("consumed", 0))
    update: dict[str, Any] = {"consumed": len(messages), **_reset(), "clarification_needed": None}
    decay = (state.get("background_request") or {}).get("decay")
    if decay:  # the decay monitor's post of a state change: its thread is answered with the figures and a chart
        chart = runtime.context.artifacts.put(thread_id(config), f"factor/decay:{decay['session']}", "chart",
                                              f"decay_{decay['name']}_v{decay['version']}.png",
                                              _("rolling rank IC of {name}").format(name=decay["name"]),
                                              "image/png", decay_chart(decay))
        return {**update, "spec": None, "final_reply": decay_reply(decay), "artifacts": [chart]}
    if is_cancel(text):  # typed where nothing waits: ends here, as in every workflow
        return {**update, "final_reply": CANCELLED}
    answering = state.get("clarification_count", 0) > 0 and state.get("spec") is None
    if not answering:
        update["clarification_count"] = 0
    structured = grammar.looks_structured(text) or (answering and state.get("mode") == "library")
    model = model_for(runtime.context, MODELS["spec reader"])
    if structured or model is None:
        if not structured:
            return {**update, "final_reply": _(NEEDS_LLM).format(kinds=", ".join(grammar.library_names()))}
        return _library(state, runtime.context, text, update)
    return _llm(state, runtime.context, model, update)


def _library(state: FactorState, ctx: FactorDeps, text: str, update: dict[str, Any]) -> dict[str, Any]:
    known = grammar.FactorRequest() if grammar.starts_request(text) else grammar.FactorRequest.from_dict(
        state.get("request") or {})
    request = known if is_ignore(text) else known.merge(grammar.parse(text))  # ignore: the request as it stood
    if request.bad_codes:
        return _ask(state, {**update, "mode": "library", "request": request.as_dict(), "spec": None},
                    _("{problem} Reply with the corrected codes, or `cancel`.").format(
                        problem=bad_code_message(request.bad_codes)), suggestions(request.bad_codes))
    if unused := request.unused():  # never run without something the user typed: ask, keeping the rest
        kept = replace(request, params={k: v for k, v in request.params.items() if k in grammar.PARAMS})
        return _ask(state, {**update, "mode": "library", "request": kept.as_dict(), "spec": None},
                    unused_question(unused, [*grammar.library_names(), *grammar.PARAMS]), suggestions((), unused))
    update.update(mode="library", request=request.as_dict(), spec=None)
    missing = grammar.missing(request, ctx.provider.known_codes() is not None)
    if "factor" in missing:
        return _ask(state, update, _("Which factor? One of {kinds}.").format(kinds=", ".join(grammar.library_names())),
                    grammar.library_names()[:10])
    if "dates" in missing:
        return _ask(state, update, _(DATES))
    if "codes" in missing:
        return _ask(state, update, _(CODES))
    try:
        spec = grammar.build_spec(request)
    except grammar.SpecError as exc:
        return {**update, "final_reply": _("I cannot build that factor: {error}").format(error=exc)}
    return {**update, "spec": with_split(spec, ctx.provider, ctx.holdout_fraction),
            "run_no": state.get("run_no", 0) + 1, "clarification_count": 0}


def _llm(state: FactorState, ctx: FactorDeps, model: BaseChatModel, update: dict[str, Any]) -> dict[str, Any]:
    known = ctx.provider.known_codes()
    universe = (f"serves a universe of {len(known)} codes (used when none are named)" if known
                else "has no fixed universe: codes must be named")
    fields = ", ".join(BAR_FIELDS + INDICATOR_FIELDS)
    conversation = [m for m in state.get("messages", []) if isinstance(m, HumanMessage)][-12:]
    prompt = [SystemMessage(SPEC_PROMPT.format(fields=fields, universe=universe) + language_instruction()),
              *conversation]
    try:
        raw = invoke_structured(model, prompt, FactorSpecAnswer, N_("factor spec"))
    except MODEL_FAILURES as exc:
        return {**update, "mode": "llm", "final_reply": _("{failure} Try again or rephrase, or use the grammar "
                                                           "(`/quant help`).").format(
            failure=describe_model_failure(exc))}
    update["mode"] = "llm"
    if raw.question:
        return _ask(state, {**update, "spec": None}, raw.question)
    spec, problem = _checked_llm_spec(raw, known)
    if problem:
        return _ask(state, {**update, "spec": None}, problem)
    return {**update, "spec": with_split(spec, ctx.provider, ctx.holdout_fraction),
            "run_no": state.get("run_no", 0) + 1, "clarification_count": 0}


def _checked_llm_spec(raw: FactorSpecAnswer, known: frozenset[str] | None) -> tuple[dict[str, Any], str | None]:
    fields = list(raw.fields or [])
    unknown = [f for f in fields if f not in BAR_FIELDS + INDICATOR_FIELDS]
    name = (raw.name or "custom_factor").lower().replace(" ", "_")[:64]
    spec = {"name": name, "description": raw.description or name, "fields": fields,
            "lookback": raw.lookback or 0, "frequency": "daily",
            "codes": [c.upper() for c in raw.codes or []], "start": raw.start,
            "end": raw.end, "library": None, "body": None}
    if unknown or not fields:
        return spec, _("Which fields should the factor use? Known: {fields}.").format(
            fields=", ".join(BAR_FIELDS + INDICATOR_FIELDS))
    if not spec["start"] or not spec["end"]:
        return spec, _(DATES)
    try:
        spec["start"], spec["end"] = check_range(str(spec["start"]), str(spec["end"]))
    except DataError as exc:
        return spec, _("{error}. Which dates should I use? Give START END as YYYYMMDD.").format(error=exc)
    if not spec["codes"] and not known:
        return spec, _(CODES)
    return spec, None
