"""State of the factor-coding subgraph (the seed's FactorAgentState): metadata and names, never DataFrames."""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph.message import add_messages

from tools.i18n import _
from tools.storage.artifacts import ArtifactRef

MAX_RETRIES = 5  # code-generation retries after the first attempt (the seed's limit)


class FactorState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    requester: str | None
    consumed: int  # how many messages collect_spec has read
    run_no: int  # one per factor request in this thread (idempotency key of the save)
    mode: str  # "library" or "llm"
    request: dict[str, Any]  # FactorRequest.as_dict() (library mode)
    spec: dict[str, Any]  # name, description, fields, lookback, frequency, codes, start, end, library, body;
    # after an edit that changed the body also edited_from: {name, description, body} of the code first reviewed
    clarification_needed: str | None
    clarify_choices: list[str]
    clarification_count: int
    factor_body: str | None  # the generated (or edited) body of compute_factor
    factor_code: str | None  # the full program from the template
    dry_run: dict[str, Any] | None  # {ok, error, checks: CheckReport.as_dict(), figures, summary, fatal}
    semantic_check: dict[str, Any] | None  # {ok: True | False | None (no verdict), diffs, reason, by}
    retry_count: int
    attempts: list[dict[str, Any]]  # every dry run {source, ok, problem}; every code generation {source: "llm",
    # note, tries: [{ok, problem}] of the bodies the agent tried}
    editing: bool  # the body under test is a human edit
    review: dict[str, Any] | None  # {status: approved|edited|rejected|pending, reviewer, reason, note, edited}
    backfill: dict[str, Any] | None  # {name, shape, first_date, last_date}
    evaluation: dict[str, Any] | None  # {metrics: {period: {...}}, duplicates: [...]}
    save_approval: dict[str, Any] | None  # {approver}: saving a near duplicate was approved
    saved: dict[str, Any] | None  # {id, name, version, status}
    artifacts: list[ArtifactRef]  # charts and CSVs stored with the thread (tools/storage/artifacts.py)
    result: dict[str, Any] | None
    background_request: dict[str, Any] | None  # the decay monitor's post of a state change (graphs/factor/decay.py)
    final_reply: str | None


def failure_of(state: FactorState) -> str | None:
    """Why the body under test is not good, or None when the dry run and the semantic check passed."""
    dry = state.get("dry_run") or {}
    if not dry.get("ok"):
        return str(dry.get("error") or _("the dry run did not run"))
    semantic = state.get("semantic_check") or {}
    if semantic.get("ok") is False:  # None: the judge gave no verdict; the reviewer decides
        return _("semantic check: {problems}").format(problems="; ".join(semantic.get("diffs") or
                                                                           [str(semantic.get("reason"))]))
    return None


def duplicates_of_others(name: str, duplicates: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The near duplicates that belong to other factor names (re-running a name makes a version, not a copy)."""
    return [d for d in duplicates if d["name"] != name]


def step_output(state: FactorState, step: Literal["backfill", "evaluation"]) -> dict[str, Any]:
    """What a step the route ran before this node left (the backfill's frame, the evaluation's metrics); none here
    is a bug, and says so."""
    output = state.get(step)
    if output is None:
        raise LookupError(f"the factor's {step} has not run")
    return output
