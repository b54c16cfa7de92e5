"""The figures of an evaluation: each measure averaged over the dataset in every repeat, then the mean and the
spread (sample standard deviation) of those averages over the repeats; text measures as counts. The workflow's
measures are over the runs without errors (an errored run has none); `errors` says how many runs that left out."""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bot.evaluation.run_case import CaseRun

COST_PLACES = Decimal("0.000001")


@dataclass(frozen=True)
class Figure:
    """A measure's mean and spread over the repeats; `n` is how many runs it applied to, in all."""

    mean: float | Decimal
    spread: float | Decimal
    n: int

    def as_json(self) -> dict[str, Any]:
        number = str if isinstance(self.mean, Decimal) else float
        return {"mean": number(self.mean), "spread": number(self.spread), "n": self.n}


def summarize(runs: list[CaseRun]) -> tuple[dict[str, Figure], dict[str, dict[str, int]]]:
    """(figures by name, distributions by name). Besides the workflow's measures: errors, tokens, calls and
    seconds per request, and cost per request when every model used is in the price table."""
    by_repeat: dict[int, list[CaseRun]] = {}
    for run in runs:
        by_repeat.setdefault(run.repeat, []).append(run)
    names = list(dict.fromkeys(name for run in runs for name, value in run.measures.items()
                               if isinstance(value, int | float)))
    figures: dict[str, Figure] = {}
    for name in names:
        per_repeat = [[float(v) for r in group if isinstance(v := r.measures.get(name), int | float)]
                      for group in by_repeat.values()]
        means = [statistics.fmean(values) for values in per_repeat if values]
        if means:  # a measure that applied to no run has no figure
            figures[name] = _figure(means, sum(len(values) for values in per_repeat))
    for name, value_of in (("errors", lambda r: float(r.outcome.startswith("error"))),
                           ("tokens", lambda r: float(r.tokens)), ("model_calls", lambda r: float(r.model_calls)),
                           ("model_errors", lambda r: float(r.model_errors)),
                           ("seconds", lambda r: r.seconds), ("judge_tokens", lambda r: float(r.judge_tokens))):
        figures[name] = _figure([statistics.fmean(value_of(r) for r in group) for group in by_repeat.values()],
                                len(runs))
    if runs and all(r.cost is not None for r in runs):
        costs = [sum((r.cost or Decimal(0) for r in group), Decimal(0)) / len(group)  # each cost is known here
                 for group in by_repeat.values()]
        figures["cost"] = Figure(statistics.mean(costs).quantize(COST_PLACES),
                                 (statistics.stdev(costs) if len(costs) > 1 else Decimal(0)).quantize(COST_PLACES),
                                 len(runs))
    distributions: dict[str, dict[str, int]] = {"outcome": dict(Counter(r.outcome.split(":")[0] for r in runs))}
    for run in runs:
        for name, value in run.measures.items():
            if isinstance(value, str):
                counts = distributions.setdefault(name, {})
                counts[value] = counts.get(value, 0) + 1
    return figures, distributions


def _figure(means: list[float], n: int) -> Figure:
    return Figure(statistics.fmean(means), statistics.stdev(means) if len(means) > 1 else 0.0, n)
