"""One evaluated request: a database of its own, the case's set-up commands, the workflow graph run to its end
(interrupts answered as the case says, else by the defaults of `bot.evaluation.dataset`), then measured."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command
from pydantic import SecretStr

from bot.evaluation.dataset import Case
from graphs.context import WorkflowContext
from graphs.interrupts import APPROVAL, CODE_REVIEW
from graphs.measures import Measures, RunRecord
from graphs.meter import Meter
from graphs.prices import cost
from graphs.registry import command_for
from graphs.studio import context_from_settings
from graphs.workflow import CommandCall, CommandError, Workflow
from tools.i18n import N_, _, stored_text
from tools.settings import Settings

log = logging.getLogger(__name__)

EVAL_USER = "UEVAL"  # requester and decider of every evaluated run: a trader in the case's own database
EVAL_ACCOUNT = "eval"
MAX_RESUMES = 20  # a run that keeps asking past this is stopped

# A run's outcome is stored in English (reports, CSV) and shown translated by `outcome_text`: the specific templates
# come before the general ones they would also match.
FINISHED = N_("finished")
SET_UP_FAILED = N_("error: set-up failed: {error}")
ENDPOINT_FAILED = N_("error: {n} model call(s) failed at the endpoint")
FAILED = N_("error: {kind}: {error}")
WAITING = N_("waiting: {question}")
STILL_ASKING = N_("still asking after {n} answers")
OUTCOMES = (FINISHED, SET_UP_FAILED, ENDPOINT_FAILED, FAILED, WAITING, STILL_ASKING)
OUTCOME_KINDS = {"finished": FINISHED, "waiting": N_("waiting"), "error": N_("error")}  # the report's counts


def outcome_text(outcome: str) -> str:
    """A run's stored outcome in the language in effect."""
    return stored_text(outcome, OUTCOMES)


def outcome_kind(kind: str) -> str:
    """An outcome's kind (finished, waiting, error), as the report counts it, in the language in effect."""
    return _(OUTCOME_KINDS[kind]) if kind in OUTCOME_KINDS else kind


@dataclass
class CaseRun:
    """What one run of one case did and cost."""

    case: str
    repeat: int
    outcome: str  # in English, one of OUTCOMES: "finished", "waiting: <question>" or "error: <what went wrong>"
    measures: Measures = field(default_factory=dict)
    interrupts: list[str] = field(default_factory=list)
    model_calls: int = 0
    model_errors: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    cost: Decimal | None = None
    judge_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class _Unanswered(Exception):
    """The run asked something the case does not answer (a clarify question past the case's answers)."""


def run_case(workflow: Workflow, case: Case, repeat: int, settings: Settings,
             judge: BaseChatModel | None, judge_meter: Meter | None) -> CaseRun:
    """Run `case` once and measure it. A product error or a failed model call is recorded as the outcome (an
    `error: ...` run, left out of the workflow's measures), never raised."""
    with TemporaryDirectory(prefix="quantdesk-eval-") as tmp:
        ctx = context_from_settings(settings.model_copy(update={
            "database_url": SecretStr(f"sqlite:///{Path(tmp) / 'eval.db'}"), "traders": frozenset({EVAL_USER})}))
        try:
            return _run(workflow, case, repeat, settings, ctx, judge, judge_meter)
        finally:
            ctx.engine.dispose()


def _run(workflow: Workflow, case: Case, repeat: int, settings: Settings, ctx: WorkflowContext,
         judge: BaseChatModel | None, judge_meter: Meter | None) -> CaseRun:
    run = CaseRun(case.id, repeat, FINISHED)
    try:
        set_up(case, ctx)
    except CommandError as exc:
        run.outcome, run.cost = SET_UP_FAILED.format(error=exc), Decimal(0)
        return run
    meter, graph = Meter(), workflow.build(InMemorySaver())
    config: RunnableConfig = {"configurable": {"thread_id": f"eval-{uuid.uuid4().hex[:12]}", "user": EVAL_USER,
                                               "account": EVAL_ACCOUNT}, "callbacks": [meter]}
    seen: list[dict[str, Any]] = []
    started = time.monotonic()
    try:
        _drive(graph, case, ctx, config, seen)
    except _Unanswered as exc:
        run.outcome = WAITING.format(question=exc)
    except Exception as exc:  # any failure of the product is a result to report, not a crash
        log.warning("eval case %s failed: %s", case.id, type(exc).__name__, exc_info=True)
        run.outcome = FAILED.format(kind=type(exc).__name__, error=exc)
    run.seconds = time.monotonic() - started
    run.interrupts = [str(value.get("type")) for value in seen]
    run.model_calls, run.model_errors = meter.calls, meter.errors
    run.input_tokens, run.output_tokens = meter.input_tokens, meter.output_tokens
    run.cost = cost(settings.model_prices, meter.usage)
    if meter.errors and not run.outcome.startswith("error"):  # the endpoint failed: not the model's behaviour
        run.outcome = ENDPOINT_FAILED.format(n=meter.errors)
    if not run.outcome.startswith("error") and workflow.measure is not None:
        state = dict(graph.get_state(config).values)
        judge_before = judge_meter.input_tokens + judge_meter.output_tokens if judge_meter else 0
        run.measures = workflow.measure(RunRecord(case.request, state, seen, meter.calls, judge))
        if judge_meter:
            run.judge_tokens = judge_meter.input_tokens + judge_meter.output_tokens - judge_before
    return run


def set_up(case: Case, ctx: WorkflowContext) -> None:
    for command in case.setup:
        found = command_for(command)
        if found is None:
            raise CommandError(f"{command!r} is not a command")
        sub, args = found
        sub.run(CommandCall(ctx, args, EVAL_USER, EVAL_ACCOUNT))


def _drive(graph: Any, case: Case, ctx: WorkflowContext, config: RunnableConfig,
           seen: list[dict[str, Any]]) -> None:
    """Invoke, then resume every interrupt until the run ends."""
    answers = list(case.answers)
    out = graph.invoke({"messages": [HumanMessage(case.request)], "requester": EVAL_USER}, config, context=ctx)
    for _resume in range(MAX_RESUMES):
        pending = out.get("__interrupt__") or []
        if not pending:
            return
        resume: dict[str, Any] = {}
        for item in pending:
            value = item.value if isinstance(item.value, dict) else {"type": "unknown"}
            seen.append(value)
            resume[item.id] = answers.pop(0) if answers else _default_answer(value)
        out = graph.invoke(Command(resume=resume), config, context=ctx)
    raise _Unanswered(STILL_ASKING.format(n=MAX_RESUMES))


def _default_answer(value: dict[str, Any]) -> dict[str, Any]:
    """A code review or an approval is approved when it can be and rejected otherwise; a question stops the run."""
    kind = value.get("type")
    if kind in (CODE_REVIEW, APPROVAL):
        allowed = value.get("allowed") or []
        return {"type": "approve"} if "approve" in allowed else {"type": "reject", "message": "evaluation"}
    raise _Unanswered(str(kind))
