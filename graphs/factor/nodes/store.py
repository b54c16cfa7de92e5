"""write_db and record_reject: save the reviewed factor (values, metrics) or the rejection as a new version.
Each save carries an idempotency key (thread + run number), so a resumed run never writes twice."""

from __future__ import annotations

from typing import Any

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import WorkflowContext, thread_id, workspace
from graphs.factor.state import FactorState
from tools.factor_store import FactorStore


def _run_key(state: FactorState, config: RunnableConfig) -> str:
    return f"{thread_id(config)}:{state.get('run_no', 1)}"


def _stored_spec(state: FactorState, **extra: Any) -> dict[str, Any]:
    """The spec as saved: the body under review (library body or edit) replaces the library's, plus `extra`."""
    spec = {k: v for k, v in state["spec"].items() if k != "body"}
    return {**spec, "body": state.get("factor_body"), **extra}


def write_db_node(state: FactorState, config: RunnableConfig, runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    spec, review = state["spec"], state.get("review") or {}
    values = workspace(runtime.context, config).get(state["backfill"]["name"])  # type: ignore[index]
    metrics = pd.DataFrame.from_dict(state["evaluation"]["metrics"], orient="index")  # type: ignore[index]
    metrics.index = metrics.index.astype(int)
    info, created = FactorStore(runtime.context.engine).save(
        name=spec["name"], description=spec["description"], code=state.get("factor_code") or "",
        spec=_stored_spec(state, near_duplicates=state["evaluation"]["duplicates"],  # type: ignore[index]
                          duplicate_approved_by=(state.get("save_approval") or {}).get("approver")),
        author=state.get("requester"), reviewer=review.get("reviewer"),
        decision="edit" if review.get("status") == "edited" else "approve", run_key=_run_key(state, config),
        values=values, metrics=metrics.astype(float))
    return {"saved": {"id": info.id, "name": info.name, "version": info.version, "status": info.status,
                      "created": created}}


def record_reject_node(state: FactorState, config: RunnableConfig,
                       runtime: Runtime[WorkflowContext]) -> dict[str, Any]:
    spec, review = state["spec"], state.get("review") or {}
    info, _ = FactorStore(runtime.context.engine).save(
        name=spec["name"], description=spec["description"], code=state.get("factor_code") or "",
        spec=_stored_spec(state, reject_reason=review.get("reason")),
        author=state.get("requester"), reviewer=review.get("reviewer"), decision="reject",
        run_key=_run_key(state, config))
    reason = f" Reason: {review['reason']}" if review.get("reason") else ""
    return {"saved": {"id": info.id, "name": info.name, "version": info.version, "status": info.status},
            "final_reply": f"Rejected: factor {info.name} was not backfilled or saved. The rejection is recorded as "
                           f"version {info.version} (status rejected).{reason}"}
