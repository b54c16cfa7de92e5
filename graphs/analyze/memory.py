"""The desk's use of analyst memory (tools.desk.memory) and of the decision log's reflections: one memory
namespace per desk ("live", or a replay's own), summaries written by the light model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage

from graphs.analyze.budget import prompt_tokens, tokens_of
from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.models import MODELS
from graphs.analyze.state import session_of
from graphs.common import message_text
from graphs.context import model_for
from tools.desk.log import reflections_for
from tools.desk.memory import DueSummary, MemoryController

HORIZON_DAYS = 5  # trading days after which a decision is resolved and its reflection may be read
SUMMARY_ANSWER_TOKENS = 1_000  # a memory summary is concise: the light model's answer is capped here


def summarizer(ctx: AnalyzeDeps, spent: list[int] | None = None) -> Callable[[str, list[str]], str] | None:
    """The light model as the memory controllers' summariser, answering in at most SUMMARY_ANSWER_TOKENS and
    adding each call's tokens to `spent`; None without a model."""
    model = model_for(ctx, MODELS["memory summary"])
    if model is None:
        return None

    def summarize(instruction: str, texts: list[str]) -> str:
        """Raises on a model failure: nothing is stored, and the next refresh tries again."""
        prompt = summary_prompt(instruction, texts)
        answer = model.bind(max_tokens=min(SUMMARY_ANSWER_TOKENS, ctx.max_answer_tokens)).invoke(prompt)
        if spent is not None:
            spent.append(tokens_of(prompt, answer))
        return message_text(answer)

    return summarize


def summary_prompt(instruction: str, texts: list[str]) -> list[BaseMessage]:
    return [SystemMessage(instruction), HumanMessage("\n\n---\n\n".join(texts))]


def summary_tokens(due: DueSummary) -> int:
    """The most a due summary's call may use: its estimated prompt and the longest answer it may ask for."""
    return prompt_tokens(summary_prompt(due.instruction, due.texts)) + SUMMARY_ANSWER_TOKENS


def memory_of(ctx: AnalyzeDeps, analyst: str, request: dict[str, Any],
              spent: list[int] | None = None) -> MemoryController:
    """The analyst's memory controller; summaries it writes add their tokens to `spent`."""
    return MemoryController(ctx.engine, analyst, namespace=request["namespace"], summarize=summarizer(ctx, spent))


def reflections(ctx: AnalyzeDeps, request: dict[str, Any]) -> list[str]:
    """Reflections on this code's earlier decisions whose outcome was knowable in the decision's session (exit
    day before the session's day)."""
    return reflections_for(ctx.engine, request["namespace"], request["ts_code"], session_of(request)[1],
                           HORIZON_DAYS)
