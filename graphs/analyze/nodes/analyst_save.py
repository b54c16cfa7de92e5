"""Analyst save: the report (with its data gaps and audit flags) goes to the analyst's memory controller as a new
version of the day's report, and only a small record of the run leaves the subgraph. The memory summary the report
makes due is written later, off the decision's critical path (nodes/memory_summary.py). An analyst that stopped
(its model failed, or its token budget ran out) or failed (its last answer was no report) has no report, and its
memory gets nothing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.memory import memory_of
from graphs.analyze.state import AnalystSpec, AnalystState, session_of
from graphs.analyze.words import analyst_word
from graphs.progress import report_progress, report_prose
from tools.desk.number_audit import tool_numbers
from tools.i18n import _


def full_report(state: AnalystState) -> str:
    """The report as stored and shown: the model's text, then its data gaps and unverified figures."""
    parts = [state.get("report") or _("(no report: {why})").format(why=state.get("stopped") or state.get("failed"))]
    if state.get("gaps"):
        parts.append(_("Data gaps:") + "\n" + "\n".join(f"- {gap}" for gap in state["gaps"]))
    note = (state.get("audit") or {}).get("note")
    if note:
        parts.append(_("Number audit: {note}").format(note=note))
    return "\n\n".join(parts)


def report_id_of(request: dict[str, Any], analyst: str) -> str | None:
    """The id of the report this run's analyst saves: the same when a crash makes the save run again (which then
    replaces its text instead of adding a version). None for a request checkpointed before runs had an id in
    their request (a run resumed after an upgrade): the save then makes a fresh id."""
    run_id = request.get("run_id")
    return uuid.uuid5(uuid.NAMESPACE_URL, f"quantdesk:{run_id}:{analyst}").hex if run_id else None


def make_save_node(spec: AnalystSpec) -> Callable[..., dict[str, Any]]:
    def save_node(state: AnalystState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
        ctx, request = runtime.context, state["request"]
        code, (session, date) = request["ts_code"], session_of(request)
        text = full_report(state)
        report_id = None
        if not state.get("stopped") and not state.get("failed"):  # no report: nothing for its memory to keep
            report_id = memory_of(ctx, spec.name, request).save_today_report(
                code, date, text, session=session, written_at=datetime.fromisoformat(request["as_of"]),
                report_id=report_id_of(request, spec.name))
        calls, tokens = state.get("tool_calls", 0), state.get("tokens", 0)
        if report_id is not None and not request.get("replay"):
            report_prose(f"{spec.name} report", _("{analyst} analyst's report").format(
                analyst=analyst_word(spec.name).capitalize()), text)
        done = (_("{calls} tool call(s), {tokens} tokens, stopped") if state.get("stopped") else
                _("{calls} tool call(s), {tokens} tokens, no report") if state.get("failed") else
                _("{calls} tool call(s), {tokens} tokens"))
        report_progress(_("{name} analyst").format(name=analyst_word(spec.name)),
                        done.format(calls=calls, tokens=f"{tokens:,}"))
        run = {"report": text, "report_id": report_id, "tool_calls": calls, "tokens": tokens,
               "gaps": list(state.get("gaps") or []), "audit": state.get("audit") or {},
               "stopped": state.get("stopped"), "failed": state.get("failed"),
               "evidence": tool_numbers(state.get("evidence") or [])}
        return {"analyst_runs": {spec.name: run}}

    return save_node
