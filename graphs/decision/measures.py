"""`quantdesk eval analyze`: did both judges answer in the schema (a rating on the five-step scale, a target
position), how many of the figures the agents wrote came from a tool (the desk's own number audit), and which
rating the desk gave."""

from __future__ import annotations

from typing import Any

from graphs.measures import Measures, RunRecord, rate


def measure_decision(run: RunRecord) -> Measures:
    state = run.state
    result = state.get("result") or {}
    research, risk = state.get("research_summary"), state.get("risk_summary")
    audits = [run_["audit"] for run_ in _runs(result) if run_.get("audit")]
    checked = sum(int(a.get("checked") or 0) for a in audits)
    flagged = sum(len(a.get("flagged") or []) for a in audits)
    return {
        "schema_valid": rate(bool(research) and bool(risk)),
        "figures_from_tools": None if checked == 0 else (checked - flagged) / checked,
        "unsupported_figures": float(flagged) if audits else None,
        "stopped_early": rate(bool(result.get("stopped"))),
        "rating": str(risk["rating"]) if risk else None,
    }


def _runs(result: dict[str, Any]) -> list[dict[str, Any]]:
    return [*(result.get("analysts") or {}).values(), *(result.get("stages") or {}).values()]
