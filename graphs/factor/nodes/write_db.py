"""write_db: save the reviewed factor (values, metrics) as a new version, idempotently (run key)."""

from __future__ import annotations

from typing import Any

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import workspace
from graphs.factor.deps import FactorDeps
from graphs.factor.saving import run_key, stored_spec
from graphs.factor.state import FactorState, step_output
from graphs.progress import report_progress
from tools.factors.store import FactorStore
from tools.i18n import _
from tools.research.library import TeamLibrary


def write_db_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    spec, review = state["spec"], state.get("review") or {}
    report_progress(_("saving"))
    evaluation = step_output(state, "evaluation")
    values = workspace(runtime.context, config).get(step_output(state, "backfill")["name"])
    metrics = pd.DataFrame.from_dict(evaluation["metrics"], orient="index")
    metrics.index = metrics.index.astype(int)
    info, created = FactorStore(runtime.context.engine).save(
        name=spec["name"], description=spec["description"], code=state.get("factor_code") or "",
        spec=stored_spec(state, near_duplicates=evaluation["duplicates"],
                         duplicate_approved_by=(state.get("save_approval") or {}).get("approver"),
                         holdout=evaluation.get("holdout"), honesty=evaluation.get("honesty")),
        author=state.get("requester"), reviewer=review.get("reviewer"),
        decision="edit" if review.get("edited") else "approve", run_key=run_key(state, config),
        values=values, metrics=metrics.astype(float))
    gate = (evaluation.get("honesty") or {}).get("gate") or {}
    if gate.get("passed"):
        TeamLibrary(runtime.context.engine).admit(info.id, gate)
    return {"saved": {"id": info.id, "name": info.name, "version": info.version, "status": info.status,
                      "created": created, "in_library": bool(gate.get("passed"))}}
