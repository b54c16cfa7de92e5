"""The number audit: after each analyst report and each judge, every figure in the text is matched to the numbers
the agent's tools returned (and, for judges, the account and price facts they were given). Figures it cannot find
are flagged in the report and on the decision card. Codes, dates and declared parameters are not audited.

An analyst whose last answer is no report (empty, or a tool call that could not be made) has failed: it writes no
report, and the reason names what the model did."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.state import AnalystSpec, AnalystState, DebateState
from graphs.analyze.toolkit import Toolkit
from graphs.analyze.words import analyst_stage
from graphs.common import message_text
from tools.desk.number_audit import audit, flag_text
from tools.i18n import _

REL_TOL = 0.001  # 0.1 %: at 1,715.00 a figure within ±1.7 matches; written precision also counts


def audit_text(text: str, evidence: list[Any]) -> dict[str, Any]:
    """The audit of one text as JSON: figures checked, figures flagged, the tolerance and a one-line note."""
    result = audit(text, evidence, rel_tol=REL_TOL)
    return {"checked": len(result.checked), "flagged": [f.text for f in result.flagged],
            "tolerance": result.tolerance, "note": "" if result.ok else flag_text(result)}


def make_analyst_audit_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    """The audit of the analyst's report; an analyst whose last answer is no report has failed, and says why."""

    def analyst_audit_node(state: AnalystState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        messages = state.get("messages")
        last = messages[-1] if messages else None
        report = "" if state.get("stopped") or not isinstance(last, AIMessage) else message_text(last)
        failed = None
        if not report.strip() and not state.get("stopped"):
            tools = Toolkit(spec.name, runtime.context, state["request"]).functions
            report, failed = "", _("{analyst} wrote no report: {why}").format(
                analyst=analyst_stage(spec.name), why=unusable(last, tools))
        return {"report": report, "failed": failed, "audit": audit_text(report, state.get("evidence") or [])}

    return analyst_audit_node


def unusable(last: Any, tools: Collection[str]) -> str:
    """What the model did instead of writing a report, in words."""
    for call in getattr(last, "invalid_tool_calls", None) or []:
        name = call.get("name") or _("(no name)")
        if name not in tools:
            return _("it called a tool that does not exist: {name}").format(name=name)
        return _("it called {name} with arguments that could not be read: {args}").format(
            name=name, args=repr(call.get("args")))
    return _("its last answer was empty")


def judge_audit_node(state: DebateState) -> dict[str, Any]:
    return {"audit": audit_text(state.get("judge_text") or "", state.get("evidence") or [])}
