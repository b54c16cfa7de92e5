"""The number audit: after each analyst report and each judge, every figure in the text is matched to the numbers
the agent's tools returned (and, for judges, the account and price facts they were given). Figures it cannot find
are flagged in the report and on the decision card. Codes, dates and declared parameters are not audited."""

from __future__ import annotations

from typing import Any

from graphs.decision.state import AnalystState, DebateState
from tools.number_audit import audit, flag_text

REL_TOL = 0.001  # 0.1 %: at 1,715.00 a figure within ±1.7 matches; written precision also counts


def audit_text(text: str, evidence: list[Any]) -> dict[str, Any]:
    """The audit of one text as JSON: figures checked, figures flagged, the tolerance and a one-line note."""
    result = audit(text, evidence, rel_tol=REL_TOL)
    return {"checked": len(result.checked), "flagged": [f.text for f in result.flagged],
            "tolerance": result.tolerance, "note": "" if result.ok else flag_text(result)}


def analyst_audit_node(state: AnalystState) -> dict[str, Any]:
    last = (state.get("messages") or [None])[-1]
    report = "" if state.get("stopped") else str(getattr(last, "content", "") or "") or \
        "(the analyst wrote no report: its last answer was empty)"
    return {"report": report, "audit": audit_text(report, state.get("evidence") or [])}


def judge_audit_node(state: DebateState) -> dict[str, Any]:
    return {"audit": audit_text(state.get("judge_text") or "", state.get("evidence") or [])}
