"""record_reject: a rejected review is stored as a rejected version (nothing backfilled, nothing evaluated)."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.factor.deps import FactorDeps
from graphs.factor.saving import run_key, stored_spec
from graphs.factor.state import FactorState
from graphs.progress import report_progress
from tools.factors.store import FactorStore
from tools.i18n import _


def record_reject_node(state: FactorState, config: RunnableConfig,
                       runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    spec, review = state["spec"], state.get("review") or {}
    report_progress(_("recording the rejection"))
    info, _created = FactorStore(runtime.context.engine).save(
        name=spec["name"], description=spec["description"], code=state.get("factor_code") or "",
        spec=stored_spec(state, reject_reason=review.get("reason")),
        author=state.get("requester"), reviewer=review.get("reviewer"), decision="reject",
        run_key=run_key(state, config))
    reason = _(" Reason: {reason}").format(reason=review["reason"]) if review.get("reason") else ""
    return {"saved": {"id": info.id, "name": info.name, "version": info.version, "status": info.status},
            "final_reply": _("Rejected: factor {name} was not backfilled or saved. The rejection is recorded as "
                             "version {version} (status rejected).").format(name=info.name, version=info.version)
            + reason}
