"""dry_run: the body under test runs in the sandbox on a small real slice and its values are checked; the
verdict is recorded and the routes decide what happens next. A data problem ends the request."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.factor.deps import FactorDeps
from graphs.factor.run import dry_run, load_dry_run_inputs
from graphs.factor.state import FactorState
from graphs.progress import report_progress
from tools.data.schema import DataError
from tools.i18n import _
from tools.research.trials import body_key


def dry_run_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    ctx, spec = runtime.context, state["spec"]
    attempts = state.get("attempts", [])
    report_progress(_("dry run"), _("attempt {n}").format(n=len(attempts) + 1))
    try:
        inputs = load_dry_run_inputs(ctx.provider, spec)
    except (DataError, ValueError) as exc:
        return {"dry_run": {"ok": False, "error": f"data: {exc}", "checks": None, "summary": f"data: {exc}",
                            "fatal": True},
                "final_reply": _("I cannot run this factor: data: {error}").format(error=exc)}
    outcome = dry_run(ctx.sandbox, spec, state["factor_body"] or "", inputs)
    attempt = {"source": "edit" if state.get("editing") else (spec.get("library") or "llm"),
               "ok": outcome["ok"], "problem": outcome["error"], "body": body_key(state["factor_body"] or "")}
    return {"dry_run": outcome, "attempts": [*attempts, attempt]}
