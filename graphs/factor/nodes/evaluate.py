"""evaluate: the backfilled factor against forward returns (IC, quantiles, turnover), near duplicates in the
library, the tear sheet and the CSVs (stored in the database under the factor run's key, so a re-run of this
node stores nothing twice)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from langchain_core.runnables import RunnableConfig
from langgraph.runtime import Runtime

from graphs.context import thread_id, workspace
from graphs.factor.breadth import QUANTILES, too_few_codes
from graphs.factor.deps import FactorDeps
from graphs.factor.holdout import split_of, tuning_end
from graphs.factor.honesty import judged
from graphs.factor.state import FactorState, step_output
from graphs.progress import report_progress
from tools.factors.ic import EvaluationError, FactorEvaluation, evaluate_factor
from tools.factors.store import FactorStore
from tools.i18n import _
from tools.research.holdout import Split
from tools.research.trials import TrialStore
from tools.storage.artifacts import ArtifactRef, ArtifactStore
from tools.storage.workspace import WorkspaceError

PERIODS = (1, 5, 20)


def evaluate_node(state: FactorState, config: RunnableConfig, runtime: Runtime[FactorDeps]) -> dict[str, Any]:
    ctx, spec = runtime.context, state["spec"]
    report_progress(_("evaluation"))
    ws = workspace(ctx, config)
    factor = ws.get(step_output(state, "backfill")["name"])
    close = ws.get("ohlcv/close")
    try:
        tradable = ws.get("ohlcv/vol") > 0
    except WorkspaceError:
        tradable = None
    split = split_of(spec)
    in_sample_end = pd.Timestamp(tuning_end(spec))
    try:  # the in-sample figures use no price after the in-sample end (no forward return reaches into the holdout)
        evaluation = evaluate_factor(factor.loc[:in_sample_end], close.loc[:in_sample_end], PERIODS, QUANTILES,
                                     tradable=None if tradable is None else tradable.loc[:in_sample_end])
    except EvaluationError as exc:
        return {"final_reply": _("The factor could not be evaluated: {error}").format(error=exc)}
    holdout = _holdout(factor, close, tradable, split)
    metrics = evaluation.metrics()
    honesty = judged(TrialStore(ctx.engine), thread_id(config), state.get("requester"), spec,
                     state.get("factor_body") or "", state.get("attempts", []), evaluation.factor_returns[1],
                     _records(metrics), holdout.get("metrics"), ctx.dsr_threshold)
    duplicates = [d.__dict__ for d in FactorStore(ctx.engine).near_duplicates(factor)]
    run_no = state.get("run_no", 1)
    artifacts = _store_artifacts(ctx.artifacts, thread_id(config), f"factor/evaluate:{run_no}",
                                 f"{spec['name']}_run{run_no}", spec["name"], evaluation, metrics)
    return {"evaluation": {"metrics": _records(metrics), "duplicates": duplicates,
                           "coverage_mean": float(evaluation.coverage.mean()),
                           "dates_evaluated": {str(p): h.ic_dates for p, h in evaluation.horizons().items()},
                           "missing": {str(p): reasons for p, reasons in evaluation.missing_reasons().items()},
                           "shortfall": evaluation.shortfall(),
                           "too_few_codes": too_few_codes(int(factor.notna().any().sum())),
                           "holdout": holdout, "honesty": honesty},
            "artifacts": artifacts}


def _holdout(factor: pd.DataFrame, close: pd.DataFrame, tradable: pd.DataFrame | None,
             split: Split | None) -> dict[str, Any]:
    """The holdout's figures, computed once here (after the approval): {split, metrics, dates_evaluated} or, without
    a holdout, {split, metrics: None} (the result says why)."""
    if split is None or not split.held_out:
        return {"split": split.as_dict() if split else None, "metrics": None}
    first = pd.Timestamp(split.holdout_start)
    try:
        held = evaluate_factor(factor.loc[first:], close.loc[first:], PERIODS, QUANTILES,
                               tradable=None if tradable is None else tradable.loc[first:])
    except EvaluationError as exc:
        return {"split": split.as_dict(), "metrics": None, "error": str(exc)}
    return {"split": split.as_dict(), "metrics": _records(held.metrics()),
            "dates_evaluated": {str(p): h.ic_dates for p, h in held.horizons().items()}}


def _records(metrics: pd.DataFrame) -> dict[str, dict[str, float | None]]:
    """JSON-safe metrics for graph state: period (as text) -> name -> value (None for NaN)."""
    return {str(p): {k: (None if not np.isfinite(v) else float(v)) for k, v in row.items()}
            for p, row in metrics.iterrows()}


def _store_artifacts(store: ArtifactStore, thread: str, run_key: str, stem: str, title: str,
                     evaluation: FactorEvaluation, metrics: pd.DataFrame) -> list[ArtifactRef]:
    from tools.research.charts import factor_chart  # matplotlib on first draw: not at the start

    ic = pd.concat({"ic": evaluation.ic, "rank_ic": evaluation.rank_ic}, axis=1)
    ic.columns = [f"{kind}_{p}d" for kind, p in ic.columns]
    chart = factor_chart(evaluation, _("{title}: evaluation").format(title=title))
    files = {
        "chart": (f"{stem}.png", _("{title} chart"), "image/png", chart),
        "metrics_csv": (f"{stem}_metrics.csv", _("{title} metrics csv"), "text/csv", metrics.to_csv().encode()),
        "ic_csv": (f"{stem}_ic.csv", _("{title} ic csv"), "text/csv", ic.to_csv(date_format="%Y%m%d").encode()),
    }
    return [store.put(thread, run_key, kind, filename, described.format(title=title), mime, data)
            for kind, (filename, described, mime, data) in files.items()]
