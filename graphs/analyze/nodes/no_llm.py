"""The reply without an LLM: what can be computed in code (the market analyst's indicator table and the
fundamentals table, when the provider has the fields), and plainly what needs a model and how to configure one."""

from __future__ import annotations

from typing import Any

from langgraph.runtime import Runtime

from graphs.analyze.deps import AnalyzeDeps
from graphs.analyze.sources import valuation
from graphs.analyze.state import AnalyzeState
from tools.desk.snapshot import market_snapshot
from tools.i18n import N_

NEEDS_LLM = N_("Analyst narratives, the research and risk debates and the trader need an LLM: set OPENAI_API_KEY "
               "(and OPENAI_BASE_URL for another OpenAI-compatible endpoint, QUANTDESK_MODEL and "
               "QUANTDESK_LIGHT_MODEL for the models), then ask again.")  # English in the result, shown translated


def no_llm_node(state: AnalyzeState, runtime: Runtime[AnalyzeDeps]) -> dict[str, Any]:
    ctx, request = runtime.context, state["request"]
    snap = market_snapshot(ctx.provider, request["ts_code"], request["trade_date"], window=5)
    fundamentals = valuation(ctx, request)
    result = {"kind": "no_llm", "request": request, "indicators": snap.indicator_rows(), "bars": snap.bars,
              "conventions": snap.conventions, "fundamentals": fundamentals["rows"],
              "fundamentals_units": fundamentals["units"],
              "data_gaps": [*snap.gaps, *([fundamentals["gap"]] if fundamentals["gap"] else [])],
              "needs_llm": NEEDS_LLM}
    return {"result": result}
