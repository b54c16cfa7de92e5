"""Memory summary: an analyst's summary that its report made due (the light model), written off the decision's
critical path. Fusion sends one task per analyst that reported, beside the research debate, which does not wait
for it: the decision reads the memory as it stood before this run's reports; the summary serves later decisions.
Its tokens were set aside by fusion (`allowance`); a summary that no longer fits them, or whose model fails, is not
stored, and the next refresh writes it."""

from __future__ import annotations

import logging
from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.memory import memory_of, summary_tokens
from graphs.analyze.state import MemoryInput, session_of
from graphs.llm import MODEL_FAILURES, describe_model_failure

log = logging.getLogger(__name__)


def memory_summary_node(state: MemoryInput, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
    request, name = state["request"], state["analyst"]
    code, (session, date) = request["ts_code"], session_of(request)
    spent: list[int] = []
    memory = memory_of(runtime.context, name, request, spent)
    due = memory.due_summary(code, date, session)
    written = None
    if due is not None and summary_tokens(due) > state["allowance"]:
        log.warning("the %s analyst's memory summary was not written: it needs more than the %d tokens set aside",
                    name, state["allowance"])
    elif due is not None:
        try:
            written = memory.write_summary(due)
        except MODEL_FAILURES as exc:
            log.warning("the %s analyst's memory summary was not written: %s", name, describe_model_failure(exc))
    return {"memory_runs": {name: {"summary": written, "tokens": sum(spent)}}}
