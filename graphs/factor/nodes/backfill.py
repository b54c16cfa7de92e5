"""backfill: compute the reviewed code over the requested history (in the sandbox), keep it in the thread's
workspace with the prices the evaluation needs."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import workspace
from graphs.factor.deps import FactorDeps
from graphs.factor.run import BACKFILL_LIMITS, execute, load_inputs, universe, warmup_rows
from graphs.factor.state import FactorState
from graphs.progress import report_progress
from tools.data.schema import DataError
from tools.factors.checks import check_factor
from tools.i18n import _

FORWARD_BUFFER_DAYS = 45  # calendar days of prices after `end` for the 20-day forward returns


def backfill_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    ctx, spec = runtime.context, state["spec"]
    report_progress(_("backfill"), f"{spec['start']}–{spec['end']}")
    ws = workspace(ctx, config)
    try:
        codes = universe(ctx.provider, spec)
        notes: list[str] = []
        inputs = load_inputs(ctx.provider, spec, codes, spec["start"], spec["end"], notes)
    except (DataError, ValueError) as exc:
        return {"final_reply": _("The backfill could not load its data: {error}").format(error=exc)}
    factor, error = execute(ctx.sandbox, spec, state.get("factor_body") or "", inputs, BACKFILL_LIMITS)
    if factor is None:
        return {"final_reply": _("The reviewed code failed on the full history: {error}").format(error=error)}
    reference = next(iter(inputs.values()))
    report = check_factor(factor, reference, warmup_rows(reference, spec["start"]))
    factor = factor.reindex(index=reference.index, columns=reference.columns).astype("float64")
    factor = factor.loc[pd.Timestamp(spec["start"]):]
    info = ws.put(f"factor/{spec['name']}", factor)
    end = (datetime.strptime(spec["end"], "%Y%m%d") + timedelta(days=FORWARD_BUFFER_DAYS)).strftime("%Y%m%d")
    prices = ctx.provider.panel(_price_fields(ctx), codes, spec["start"], end,
                                warnings=[])  # the same codes as the inputs' notes above: not said twice
    for field, frame in prices.items():
        ws.put(f"ohlcv/{field}", frame)
    warnings = notes + ([] if report.ok else [_("full history: {problem}").format(problem=p) for p in report.problems])
    return {"backfill": {
        "name": info.name, "shape": [info.rows, info.cols], "first_date": info.first_date,
        "last_date": info.last_date, "warnings": warnings}}


def _price_fields(ctx: FactorDeps) -> list[str]:
    """close for returns; vol too when the provider has it, to mask suspended days (no volume)."""
    have = ctx.provider.available_fields("daily")
    return ["close", "vol"] if "vol" in have else ["close"]
