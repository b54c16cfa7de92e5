"""`quantdesk eval analyze`: did the judges the desk reached answer in the schema (a rating on the five-step
scale, a target position), how many of the figures the agents wrote came from a tool (the desk's own number
audit), and which rating the desk gave."""

from __future__ import annotations

from typing import Any

from graphs.measures import Measures, RunRecord, rate


def measure_decision(run: RunRecord) -> Measures:
    state = run.state
    result = state.get("result") or {}
    stages = result.get("stages") or {}
    judged = [state.get(f"{stage}_summary") for stage in ("research", "risk") if stage in stages]
    audits = [run_["audit"] for run_ in _runs(result) if run_.get("audit")]
    checked = sum(int(a.get("checked") or 0) for a in audits)
    flagged = sum(len(a.get("flagged") or []) for a in audits)
    return {
        "schema_valid": rate(all(judged)) if judged else None,  # None: the desk stopped before any judge
        "figures_from_tools": None if checked == 0 else (checked - flagged) / checked,
        "unsupported_figures": float(flagged) if audits else None,
        "stopped_early": rate(bool(result.get("stopped"))),
        "rating": str(risk["rating"]) if (risk := state.get("risk_summary")) else None,
    }


def _runs(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(result.get("analysts") or {}).values(), *(result.get("stages") or {}).values()]
