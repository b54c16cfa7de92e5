"""`quantdesk eval factor`: was the code put up for review runnable (dry run and checks passed), how many retries
it took, how many of the bodies the model tried the truncation test caught using future data, and how well the
code does what was asked, scored by an LLM judge against the rubric below."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from graphs.llm import MODEL_FAILURES, describe_model_failure, invoke_structured
from graphs.measures import Measures, RunRecord, rate
from tools.i18n import N_
from tools.research.lookahead import is_lookahead_problem

RUBRIC = """You grade a stock-selection factor written by an AI assistant for a quant. Read the quant's request and
the body of compute_factor (each argument a DataFrame of dates x stock codes; the result a DataFrame of the same
shape, larger = more attractive). Score how well the code computes what the quant asked for:

5 - exactly the requested quantity: right fields, windows, direction (sign) and normalisation.
4 - the requested idea with a harmless difference (e.g. a different but reasonable normalisation or NaN handling).
3 - related but a material difference: a wrong window, a missing component of a combination, or a sign that makes
    the ranking the opposite of the request for part of it.
2 - a different factor that shares only the general theme.
1 - unrelated, or uses future data (a negative shift, centred windows, full-sample statistics).

Judge the code, not the style. Answer with Grade."""


class Grade(BaseModel):
    """The judge's score of the code against the request, by the rubric."""

    reasoning: str = Field(description="two sentences")
    score: int = Field(ge=1, le=5, description="1-5 by the rubric")

ALIGNED = 4  # scores at or above count as aligned


def measure_factor(run: RunRecord) -> Measures:
    state = run.state
    dry = state.get("dry_run") or {}
    attempts = state.get("attempts") or []
    tried = [a for a in attempts if "ok" in a]  # dry runs (code generation records have no "ok")
    model_tries = [t for a in attempts for t in a.get("tries") or []]  # every body the code agent tried
    reviewed = any(i.get("type") == "code_review" for i in run.interrupts)
    score = judge_alignment(run) if reviewed else None
    return {
        "runnable": rate(bool(dry.get("ok"))) if tried else rate(False),
        "retries": float(state.get("retry_count") or 0),
        "look_ahead_caught": float(sum(is_lookahead_problem(str(t.get("problem") or "")) for t in model_tries)),
        "alignment_score": score,
        "aligned": None if score is None else rate(score >= ALIGNED),
        "reached_review": rate(reviewed),
    }


def judge_alignment(run: RunRecord) -> float | None:
    """The judge's 1-5 score of the reviewed code against the request; None without a judge or a usable score."""
    body = _reviewed_body(run)
    if run.judge is None or body is None:
        return None
    question = f"The quant asked:\n{run.request}\n\nThe code:\n```python\n{body}\n```"
    try:
        grade = invoke_structured(run.judge, [SystemMessage(RUBRIC), HumanMessage(question)], Grade, N_("grade"))
    except MODEL_FAILURES as exc:  # a score outside 1-5 too: the schema refuses it
        describe_model_failure(exc)
        return None
    return float(grade.score)


def _reviewed_body(run: RunRecord) -> str | None:
    reviews: list[dict[str, Any]] = [i for i in run.interrupts if i.get("type") == "code_review"]
    if reviews and reviews[-1].get("code"):
        return str(reviews[-1]["code"])
    return run.state.get("factor_body")
