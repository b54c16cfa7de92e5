"""finish: the run's outcome as data for the adapters: a result (metrics, artifacts, duplicates) when the
factor was saved, otherwise the reply composed by the node that stopped the run."""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage

from graphs.factor.state import FactorState, step_output
from graphs.progress import report_progress
from tools.i18n import N_, _

CONVENTIONS = N_("IC = Pearson, Rank IC = Spearman per date; quantile returns demeaned per date; spread = top minus "
               "bottom quantile; long-short = factor-weighted (demeaned, gross 1); suspended days and missing "
               "prices are masked, not forward-filled; annualised over 252 trading days")


def finish_node(state: FactorState) -> dict[str, Any]:
    saved = state.get("saved") or {}
    decay = (state.get("background_request") or {}).get("decay")
    if decay:  # the decay monitor's post: the change with its chart (graphs/factor/decay_view.py)
        result = {"workflow": "factor", "kind": "decay", "decay": decay, "artifacts": list(state.get("artifacts", []))}
        return {"result": result, "final_reply": None, "messages": [AIMessage(state.get("final_reply") or "")]}
    if saved.get("status") != "active":
        reply = state.get("final_reply") or "Done."
        return {"result": None, "final_reply": reply, "messages": [AIMessage(reply)]}
    report_progress(_("summary"))
    spec, backfill, review = state["spec"], state["backfill"] or {}, state.get("review") or {}
    evaluation = step_output(state, "evaluation")  # saved as active: it was evaluated
    result = {
        "workflow": "factor",
        "name": saved["name"], "version": saved["version"], "factor_id": saved["id"],
        "title": f"{saved['name']} v{saved['version']}",
        "description": spec["description"], "fields": spec["fields"],
        "decision": "edit" if review.get("edited") else "approve", "reviewer": review.get("reviewer"),
        "shape": backfill.get("shape"), "first_date": backfill.get("first_date"),
        "last_date": backfill.get("last_date"),
        "metrics": evaluation["metrics"],
        "holdout": evaluation.get("holdout"),
        "honesty": evaluation.get("honesty"), "in_library": saved.get("in_library", False),
        "dates_evaluated": evaluation.get("dates_evaluated", {}),
        "missing": evaluation.get("missing", {}),
        "duplicates": evaluation["duplicates"],
        "warnings": [*backfill.get("warnings", []), *filter(None, [evaluation.get("too_few_codes")])],
        "conventions": CONVENTIONS,
        "code": state.get("factor_body"),
        "artifacts": list(state.get("artifacts", [])),
    }
    brief = f"Saved factor {result['title']}: {spec['description']}"
    return {"result": result, "final_reply": None, "messages": [AIMessage(brief)]}
