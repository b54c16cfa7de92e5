"""Value checks of a computed factor frame against its inputs: output type, index alignment, finite values,
missing values, coverage per date, constant values. Each problem is a sentence a user (or a model) can act on."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from tools.i18n import _

MAX_NAN_RATIO = 0.5  # after the warm-up rows
MIN_DATE_COVERAGE = 0.5  # share of codes with a value, per date
MAX_THIN_DATES = 0.1  # share of dates allowed below MIN_DATE_COVERAGE
MAX_CONSTANT_DATES = 0.1  # share of dates allowed with one value for every code


@dataclass
class CheckReport:
    ok: bool
    problems: list[str] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def figures(self) -> str:
        """The measured figures in one line ("" when the output could not be measured); problems not included."""
        s = self.stats
        if "shape" not in s:
            return ""
        return _("{dates} dates × {codes} codes, NaN {nan} after {warmup} warm-up rows, coverage per date min "
                 "{least} / mean {mean}, constant dates {constant}").format(
            dates=s["shape"][0], codes=s["shape"][1], nan=f"{s['nan_ratio']:.1%}", warmup=s["warmup"],
            least=f"{s['min_coverage']:.0%}", mean=f"{s['mean_coverage']:.0%}", constant=s["constant_dates"])


def check_factor(value: Any, reference: pd.DataFrame, warmup: int) -> CheckReport:
    """Check `value` (the code's output) against `reference` (an input frame: its dates and codes)."""
    if not isinstance(value, pd.DataFrame):
        kind = type(value).__name__
        hint = _(" (a Series: return a dates x codes DataFrame, e.g. without .stack() or a column selection)") \
            if isinstance(value, pd.Series) else ""
        return CheckReport(False, [_("compute_factor must return a DataFrame, got {kind}{hint}").format(kind=kind,
                                                                                                       hint=hint)])
    problems: list[str] = []
    if not value.index.equals(reference.index) or not value.columns.equals(reference.columns):
        problems.append(_("the output is {dates} dates × {codes} codes but the inputs are {in_dates} × {in_codes}: "
                          "keep the inputs' index and columns (no dropna, resample, transpose or column "
                          "filtering)").format(dates=value.shape[0], codes=value.shape[1],
                                               in_dates=reference.shape[0], in_codes=reference.shape[1]))
        value = value.reindex(index=reference.index, columns=reference.columns)
    try:
        data = value.to_numpy(dtype=float)
    except (TypeError, ValueError):
        return CheckReport(False, [*problems, _("the output holds non-numeric values; return floats")])
    body = data[min(warmup, max(len(data) - 1, 0)):]
    infinite = int(np.isinf(body).sum())
    nan_ratio = float(np.isnan(body).mean()) if body.size else 1.0
    coverage = np.isfinite(body).mean(axis=1) if body.size else np.zeros(0)
    thin = float((coverage < MIN_DATE_COVERAGE).mean()) if coverage.size else 1.0
    finite = np.isfinite(body)
    spread = (np.where(finite, body, -np.inf).max(axis=1) - np.where(finite, body, np.inf).min(axis=1)
              if body.size else np.zeros(0))
    counted = finite.sum(axis=1) >= 2
    constant_dates = int((counted & (spread == 0)).sum())
    if infinite:
        problems.append(_("{n} values are ±inf (e.g. division by zero); mask them with .where(...) or "
                          ".replace([np.inf, -np.inf], np.nan)").format(n=infinite))
    if nan_ratio > MAX_NAN_RATIO:
        problems.append(_("{share:.0%} of the values after the {warmup}-row warm-up are NaN (at most {most:.0%}); "
                          "check windows, fields and masks").format(share=nan_ratio, warmup=warmup,
                                                                     most=MAX_NAN_RATIO))
    elif thin > MAX_THIN_DATES:
        problems.append(_("{share:.0%} of the dates have values for fewer than {least:.0%} of the codes").format(
            share=thin, least=MIN_DATE_COVERAGE))
    if counted.any() and constant_dates > MAX_CONSTANT_DATES * counted.sum():
        problems.append(_("the factor is the same for every code on {n} of {dates} dates: it cannot rank "
                          "stocks").format(n=constant_dates, dates=int(counted.sum())))
    stats = {"shape": list(value.shape), "warmup": int(warmup), "nan_ratio": nan_ratio, "infinite": infinite,
             "min_coverage": float(coverage.min()) if coverage.size else 0.0,
             "mean_coverage": float(coverage.mean()) if coverage.size else 0.0, "constant_dates": constant_dates}
    return CheckReport(not problems, problems, stats)

