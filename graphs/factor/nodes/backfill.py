"""backfill and evaluation: compute the reviewed code over the requested history (in the sandbox), keep it in
the thread's workspace, evaluate it against forward returns, draw the tear sheet and write the CSVs."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime
from langgraph.types import Command

from graphs.context import WorkflowContext, thread_id, workspace
from graphs.factor.nodes.confirm_save import duplicates_of_others
from graphs.factor.run import BACKFILL_LIMITS, execute, load_inputs, universe, warmup_rows
from graphs.factor.state import FactorState
from tools.charts import factor_tear_sheet
from tools.data.schema import DataError
from tools.evaluation import EvaluationError, evaluate_factor
from tools.factor_checks import check_factor
from tools.factor_store import FactorStore
from tools.workspace import WorkspaceError

PERIODS = (1, 5, 20)
QUANTILES = 5
FORWARD_BUFFER_DAYS = 45  # calendar days of prices after `end` for the 20-day forward returns


def backfill_node(state: FactorState, config: RunnableConfig, runtime: Runtime[WorkflowContext]) -> Command:
    ctx, spec = runtime.context, state["spec"]
    ws = workspace(ctx, config)
    try:
        codes = universe(ctx.provider, spec)
        inputs = load_inputs(ctx.provider, spec, codes, spec["start"], spec["end"])
    except (DataError, ValueError) as exc:
        return Command(goto="finish", update={"final_reply": f"The backfill could not load its data: {exc}"})
    factor, error = execute(ctx.sandbox, spec, state.get("factor_body") or "", inputs, BACKFILL_LIMITS)
    if factor is None:
        return Command(goto="finish", update={"final_reply": f"The reviewed code failed on the full history: {error}"})
    reference = next(iter(inputs.values()))
    report = check_factor(factor, reference, warmup_rows(reference, spec["start"]))
    factor = factor.reindex(index=reference.index, columns=reference.columns).astype("float64")
    factor = factor.loc[pd.Timestamp(spec["start"]):]
    info = ws.put(f"factor/{spec['name']}", factor)
    end = (datetime.strptime(spec["end"], "%Y%m%d") + timedelta(days=FORWARD_BUFFER_DAYS)).strftime("%Y%m%d")
    prices = ctx.provider.panel(_price_fields(ctx), codes, spec["start"], end)
    for field, frame in prices.items():
        ws.put(f"ohlcv/{field}", frame)
    warnings = [] if report.ok else [f"full history: {p}" for p in report.problems]
    return Command(goto="evaluate", update={"backfill": {
        "name": info.name, "shape": [info.rows, info.cols], "first_date": info.first_date,
        "last_date": info.last_date, "warnings": warnings}})


def _price_fields(ctx: WorkflowContext) -> list[str]:
    """close for returns; vol too when the provider has it, to mask suspended days (no volume)."""
    have = ctx.provider.available_fields("daily")
    return ["close", "vol"] if "vol" in have else ["close"]


def evaluate_node(state: FactorState, config: RunnableConfig, runtime: Runtime[WorkflowContext]) -> Command:
    ctx, spec = runtime.context, state["spec"]
    ws = workspace(ctx, config)
    factor = ws.get(state["backfill"]["name"])  # type: ignore[index]
    close = ws.get("ohlcv/close")
    try:
        tradable = ws.get("ohlcv/vol") > 0
    except WorkspaceError:
        tradable = None
    try:
        evaluation = evaluate_factor(factor, close, PERIODS, QUANTILES, tradable=tradable)
    except EvaluationError as exc:
        return Command(goto="finish", update={"final_reply": f"The factor could not be evaluated: {exc}"})
    metrics = evaluation.metrics()
    duplicates = [d.__dict__ for d in FactorStore(ctx.engine).near_duplicates(factor)]
    out_dir = Path(ctx.artifacts_dir) / thread_id(config)
    artifacts = _write_artifacts(out_dir, f"{spec['name']}_run{state.get('run_no', 1)}", spec["name"], evaluation,
                                 metrics)
    gate = "confirm_save" if duplicates_of_others(spec["name"], duplicates) else "write_db"
    return Command(goto=gate, update={
        "evaluation": {"metrics": _records(metrics), "duplicates": duplicates,
                       "coverage_mean": float(evaluation.coverage.mean())},
        "artifacts": artifacts})


def _records(metrics: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """JSON-safe metrics for graph state: period (as text) -> name -> value (None for NaN)."""
    return {str(p): {k: (None if not np.isfinite(v) else float(v)) for k, v in row.items()}
            for p, row in metrics.iterrows()}


def _write_artifacts(out_dir: Path, stem: str, title: str, evaluation: Any,
                     metrics: pd.DataFrame) -> list[dict[str, str]]:
    out_dir.mkdir(parents=True, exist_ok=True)
    first = evaluation.periods[0]
    png = factor_tear_sheet(evaluation.ic[first].rename(first), evaluation.rank_ic[first].rename(first),
                            evaluation.quantile_mean[first].rename(first), evaluation.quantile_returns_by_date[first],
                            evaluation.turnover[first], f"{title}: evaluation")
    paths = {"chart": out_dir / f"{stem}.png", "metrics_csv": out_dir / f"{stem}_metrics.csv",
             "ic_csv": out_dir / f"{stem}_ic.csv"}
    paths["chart"].write_bytes(png)
    metrics.to_csv(paths["metrics_csv"])
    ic = pd.concat({"ic": evaluation.ic, "rank_ic": evaluation.rank_ic}, axis=1)
    ic.columns = [f"{kind}_{p}d" for kind, p in ic.columns]
    ic.to_csv(paths["ic_csv"], date_format="%Y%m%d")
    mime = {"chart": "image/png", "metrics_csv": "text/csv", "ic_csv": "text/csv"}
    return [{"kind": k, "path": str(p), "mime": mime[k], "title": f"{title} {k.replace('_', ' ')}"}
            for k, p in paths.items()]
