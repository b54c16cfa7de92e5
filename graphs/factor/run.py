"""Loading a factor's inputs and running its program in the sandbox: the template's fixed data path."""

from __future__ import annotations

import math
import re
from datetime import datetime, timedelta
from typing import Any

import pandas as pd

from graphs.factor.holdout import tuning_end
from graphs.factor.template import render
from tools.data.provider import MarketDataProvider
from tools.data.schema import DataError, check_range
from tools.factors.checks import check_factor
from tools.i18n import N_, _
from tools.research.lookahead import CutRunError, lookahead_problem
from tools.sandbox import Limits, Sandbox

DRY_RUN_CODES = 30
DRY_RUN_DATES = 80  # after the warm-up
DRY_RUN_LIMITS = Limits(wall_seconds=20, cpu_seconds=20, memory_bytes=1 << 30)
BACKFILL_LIMITS = Limits(wall_seconds=120, cpu_seconds=120, memory_bytes=4 << 30)


def warmup_start(start: str, lookback: int) -> str:
    """A start date early enough for `lookback` trading days of history before `start`."""
    days = math.ceil(lookback * 1.6) + 10 if lookback else 0
    return (datetime.strptime(start, "%Y%m%d") - timedelta(days=days)).strftime("%Y%m%d")


def universe(provider: MarketDataProvider, spec: dict[str, Any]) -> list[str]:
    if spec.get("codes"):
        return list(spec["codes"])
    known = provider.known_codes()
    if not known:
        raise ValueError(_("this data provider has no fixed universe: name the codes"))
    return sorted(known)


def load_inputs(provider: MarketDataProvider, spec: dict[str, Any], codes: list[str], start: str,
                end: str, warnings: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """One wide frame per field over [start - warm-up, end], aligned on the first field's dates and codes.
    Errors name the dates the user asked for, not the warm-up start; the provider's notes go to `warnings`."""
    start, end = check_range(start, end)
    first_day = warmup_start(start, spec.get("lookback", 0))
    try:
        frames = provider.panel(spec["fields"], codes, first_day, end, warnings=warnings)
    except DataError as exc:  # no rows from the warm-up start on means none from `start` either
        raise DataError(str(exc).replace(f"between {first_day} and", f"between {start} and")) from None
    first = next(iter(frames.values()))
    return {field: frame.reindex(index=first.index, columns=first.columns) for field, frame in frames.items()}


def load_dry_run_inputs(provider: MarketDataProvider, spec: dict[str, Any]) -> dict[str, pd.DataFrame]:
    """Inputs for dry runs: only the DRY_RUN_CODES codes the slice uses, not the whole universe, and only up to the
    in-sample end (the holdout is never tuned on). The provider's notes are dropped here: the backfill reports them
    for the whole universe."""
    return load_inputs(provider, spec, universe(provider, spec)[:DRY_RUN_CODES], spec["start"], tuning_end(spec), [])


def warmup_rows(frame: pd.DataFrame, start: str) -> int:
    return int((frame.index < pd.Timestamp(start)).sum())


def dry_run_slice(inputs: dict[str, pd.DataFrame], lookback: int) -> dict[str, pd.DataFrame]:
    """A small real slice: the last warm-up + DRY_RUN_DATES dates of the first DRY_RUN_CODES codes."""
    rows = lookback + DRY_RUN_DATES
    return {field: frame.iloc[-rows:, :DRY_RUN_CODES] for field, frame in inputs.items()}


def execute(sandbox: Sandbox, spec: dict[str, Any], body: str, inputs: dict[str, pd.DataFrame],
            limits: Limits) -> tuple[pd.DataFrame | None, str | None]:
    """Run the template with `body`; (factor frame, None) or (None, the cleaned error)."""
    code = render(spec["name"], spec["description"], spec["fields"], body)
    result = sandbox.run(code, inputs, limits=limits, outputs=["factor"])
    if not result.ok:
        return None, clean_error(str(result.error), code)
    return result.outputs["factor"], None


def clean_error(error: str, code: str) -> str:
    """An error as a model or a person can use it: short, body-relative line numbers, no host paths."""
    header_lines = code.index("def compute_factor(")
    offset = code[:header_lines].count("\n") + 1
    text = re.sub(r"line (\d+)", lambda m: f"body line {max(int(m.group(1)) - offset, 1)}", error)
    return text[:1500]


def dry_run(sandbox: Sandbox, spec: dict[str, Any], body: str,
            inputs: dict[str, pd.DataFrame]) -> dict[str, Any]:
    """Run on the slice, check the values, rerun on data cut earlier to catch look-ahead. `figures` describes the
    run without its problems (for a reviewer who sees the problems apart); `summary` has both (for the model)."""
    sample = dry_run_slice(inputs, spec.get("lookback", 0))
    reference = next(iter(sample.values()))
    figures = _("dry run on {dates} dates × {codes} codes").format(dates=reference.shape[0], codes=reference.shape[1])
    factor, error = execute(sandbox, spec, body, sample, DRY_RUN_LIMITS)
    if factor is None:
        return {"ok": False, "error": error, "checks": None, "figures": figures,
                "summary": _("the dry run failed: {error}").format(error=error)}
    report = check_factor(factor, reference, spec.get("lookback", 0))
    problems = list(report.problems)
    if report.ok:
        def run_cut(cut: pd.Timestamp) -> Any:
            early, early_error = execute(sandbox, spec, body, {f: s.loc[:cut] for f, s in sample.items()},
                                         DRY_RUN_LIMITS)
            if early is None:
                raise CutRunError(early_error)
            return early

        problem = lookahead_problem(run_cut, factor, N_("the factor"))
        if problem:
            problems.append(problem)
    if report.figures():
        figures = _("dry run: {figures}").format(figures=report.figures())
    ok = not problems
    summary = figures if ok else f"{figures}\nProblems: " + "; ".join(problems)
    return {"ok": ok, "error": None if ok else "; ".join(problems), "checks": report.as_dict(), "figures": figures,
            "summary": summary}
